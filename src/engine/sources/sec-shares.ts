import { parseIsoDay } from '../../platform/dates.ts'
import type { SharesPoint } from './types.ts'

/**
 * Shares outstanding from SEC company facts: the cover-page count
 * `facts.dei.EntityCommonStockSharesOutstanding.units.shares[]` of every 10-K and 10-Q, known from
 * its filing date. A filer with several share classes reports one count per class in the same
 * filing (same `accn` and `end`): the points are their sum, the company's total. The companyfacts
 * API keeps only facts without dimensions, so a filer that tags its classes with a dimension
 * (Alphabet does) has no count there at all: its list is empty and its shares unknown.
 */

/** After this many days past its `end`, a count is too old to use: the day's shares are NaN. */
const SHARES_MAX_AGE_DAYS = 200

interface CoverFact {
  end: string
  val: number
  filed: string
  accn: string | null
}

function coverFacts(doc: unknown): CoverFact[] {
  const facts = (doc as { facts?: { dei?: Record<string, unknown> } } | null)?.facts?.dei
  const concept = facts?.EntityCommonStockSharesOutstanding as { units?: { shares?: unknown } } | undefined
  const list = concept?.units?.shares
  if (!Array.isArray(list)) return []
  const out: CoverFact[] = []
  for (const f of list as Record<string, unknown>[]) {
    const { end, val, filed, accn } = f ?? {}
    if (typeof end !== 'string' || parseIsoDay(end) === null) continue
    if (typeof filed !== 'string' || parseIsoDay(filed) === null) continue
    if (typeof val !== 'number' || !Number.isFinite(val) || val <= 0) continue
    out.push({ end, val, filed, accn: typeof accn === 'string' ? accn : null })
  }
  return out
}

/**
 * The shares points of one companyfacts document, oldest filing first (ties: older `end` first).
 * Counts of one filing and one `end` are summed (the share classes); a later filing that repeats
 * an `end` (an amendment) gives its own point.
 */
export function sharesFromFacts(doc: unknown, cik: number): SharesPoint[] {
  const groups = new Map<string, SharesPoint>()
  for (const f of coverFacts(doc)) {
    const key = `${f.accn ?? f.filed}|${f.end}`
    const g = groups.get(key)
    if (g) g.shares += f.val
    else groups.set(key, { cik, end: f.end, filed: f.filed, shares: f.val })
  }
  return [...groups.values()].sort((a, b) =>
    a.filed === b.filed ? a.end.localeCompare(b.end) : a.filed.localeCompare(b.filed),
  )
}

/**
 * A daily shares series on `days` (ascending day numbers, platform/dates.ts): on each day, the
 * count with the latest `end` among those filed on or before it (an amendment of an old period
 * does not replace a newer count), forward filled; NaN before the first filing and once that
 * count's `end` is more than `maxAgeDays` old.
 */
export function dailyShares(
  points: readonly SharesPoint[],
  days: ArrayLike<number>,
  maxAgeDays: number = SHARES_MAX_AGE_DAYS,
): Float64Array {
  const known = points
    .map((p) => ({
      filed: parseIsoDay(p.filed) ?? Number.NaN,
      end: parseIsoDay(p.end) ?? Number.NaN,
      v: p.shares,
    }))
    .filter((p) => !Number.isNaN(p.filed) && !Number.isNaN(p.end))
    .sort((a, b) => a.filed - b.filed)
  const out = new Float64Array(days.length).fill(Number.NaN)
  let next = 0
  let best: { end: number; v: number } | null = null
  for (let i = 0; i < days.length; i++) {
    const d = days[i]
    while (next < known.length && known[next].filed <= d) {
      const p = known[next++]
      if (best === null || p.end >= best.end) best = p
    }
    if (best !== null && d - best.end <= maxAgeDays) out[i] = best.v
  }
  return out
}
