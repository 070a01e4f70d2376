/**
 * The fiscal years and quarter ends of one company, from its own duration facts (quarters.ts).
 *
 * Fiscal-year starts are the start of every 12-month fact (350–380 days) and the day after its
 * end, the start of every 6- or 9-month fact (year to date by convention), and the start of a
 * Q1 10-Q's own 3-month period (fp = Q1, filed within 75 days of its end). The last two anchor a
 * year from its own filings, so a quarter is identified from facts filed no later than the
 * quarter itself: the structure seen at an as-of date does not wait for later filings (such as
 * the 10-K of a company's first fiscal year). A duration fact of 1–4 quarters ending at day e
 * belongs to the latest fiscal-year start S ≤ e (within 380 days), and its quarter is
 * n = round((e − S + 1) / 91.3) when that is within 12 days of n quarters; the quarter end of
 * slot (S, n) is the end date most facts agree on. No calendar quarter ends are assumed:
 * 52/53-week years (Apple, NVIDIA) move their quarter ends by days and have 14-week quarters,
 * and fiscal years may end in any month (Snowflake: January 31). The fiscal-year label `fy` is
 * the `fy` of the earliest filing reporting a period starting at S (the period's own
 * 10-Q/10-K), else the calendar year of the fiscal year's end.
 */
import { lastIndexAtOrBefore, yearOf } from '../../../platform/dates.ts'
import { type RawCompany, type RawFact, spanDays } from './facts.ts'

/** Mean days of a quarter: a fact of `days` from a fiscal-year start spans n = round(days / 91.3). */
const QUARTER_DAYS = 91.3
/** How far a fact of n quarters may be from n × QUARTER_DAYS (52/53-week years, 14-week quarters). */
const SLOT_TOLERANCE_DAYS = 12
/** The longest fiscal year (a 53-week year is 371 days). */
const MAX_YEAR_DAYS = 380

export interface FiscalYear {
  start: number
  fy: number
  /** ends[n] = end day of fiscal quarter n (1..4) when known */
  ends: (number | undefined)[]
}

export function fiscalYears(raw: RawCompany): FiscalYear[] {
  const startSet = new Set<number>()
  const all: RawFact[] = []
  for (const cf of raw.concepts.values())
    for (const f of cf.durations) {
      all.push(f)
      const start = f.start as number // a duration fact always has a start (only instants have none)
      const days = spanDays(start, f.end)
      if (days >= 350 && days <= MAX_YEAR_DAYS) {
        startSet.add(start)
        startSet.add(f.end + 1)
      } else if (days >= 170 && days <= 290) startSet.add(start)
      else if (ownFirstQuarter(f, days)) startSet.add(start)
    }
  const starts = [...startSet].sort((a, b) => a - b)
  // votes[slot] = end day → number of facts
  const votes = new Map<string, Map<number, number>>()
  const labels = new Map<number, { filed: number; fy: number | null }>()
  for (const f of all) {
    const S = startAtOrBefore(starts, f.end)
    if (S === null) continue
    const days = spanDays(S, f.end)
    if (days > MAX_YEAR_DAYS) continue
    const n = Math.round(days / QUARTER_DAYS)
    if (n < 1 || n > 4 || Math.abs(days - n * QUARTER_DAYS) > SLOT_TOLERANCE_DAYS) continue
    const own = spanDays(f.start as number, f.end) // `all` holds duration facts only: start is set
    // The fact must itself span one quarter or run from the fiscal-year start.
    if (f.start !== S && !(own >= 80 && own <= 100)) continue
    const key = `${S}:${n}`
    let m = votes.get(key)
    if (!m) {
      m = new Map()
      votes.set(key, m)
    }
    m.set(f.end, (m.get(f.end) ?? 0) + 1)
    if (f.start === S) {
      const l = labels.get(S)
      if (!l || f.filed < l.filed) labels.set(S, { filed: f.filed, fy: f.fy })
    }
  }
  const byStart = new Map<number, FiscalYear>()
  for (const [key, m] of votes) {
    const [S, n] = key.split(':').map(Number)
    let best = -1
    let bestCount = -1
    for (const [end, count] of m)
      if (count > bestCount || (count === bestCount && end < best)) {
        best = end
        bestCount = count
      }
    let y = byStart.get(S)
    if (!y) {
      const approxYear = yearOf(S + 364)
      const label = labels.get(S)?.fy
      const fy = label != null && Math.abs(label - approxYear) <= 1 ? label : approxYear
      y = { start: S, fy, ends: [] }
      byStart.set(S, y)
    }
    y.ends[n] = best
  }
  return [...byStart.values()].sort((a, b) => a.start - b.start)
}

/** A Q1 10-Q's own 3-month period (not a comparative): its start opens a fiscal year. */
function ownFirstQuarter(f: RawFact, days: number): boolean {
  return f.fp === 'Q1' && f.form.startsWith('10-Q') && days >= 80 && days <= 100 && f.filed - f.end <= 75
}

function startAtOrBefore(sorted: number[], day: number): number | null {
  return sorted[lastIndexAtOrBefore(sorted, day)] ?? null
}
