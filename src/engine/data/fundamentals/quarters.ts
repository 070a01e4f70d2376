import { DURATION_FIELDS, FIELD_SPECS, FIELDS, type FundamentalField, INSTANT_FIELDS } from './concepts.ts'
import {
  APPROX_FILING_LAG_DAYS,
  type ConceptFacts,
  conceptKey,
  latestAsOf,
  type RawCompany,
  type RawFact,
  readCompanyFacts,
  type SecFact,
  toSecFact,
} from './facts.ts'
import { type FiscalYear, fiscalYears } from './fiscal-years.ts'

/**
 * Quarterisation and point-in-time versions of one company's companyfacts.
 *
 * ## Fiscal quarters
 * Identified from the company's own duration facts: fiscal-years.ts.
 *
 * ## Quarter values (per field, per concept; see concepts.ts for the concept precedence)
 * - Instant fields: the fact dated exactly at the quarter end.
 * - Duration fields, in this order:
 *   1. a 3-month fact (80–100 days) ending at the quarter end: the quarter itself;
 *   2. year to date: YTD(n) − (Q1 + … + Q(n−1)), YTD(n) the fact from S to the quarter end and
 *      Q1..Q(n−1) the same concept's earlier quarters by these same rules (`derived:
 *      'from_ytd'`; for n = 4, YTD(4) is the annual figure and `derived: 'q4_from_fy'`: Q4 = FY
 *      − (Q1 + Q2 + Q3)). For cash-flow items (YTD only) this is YTD(n) − YTD(n−1); for income
 *      items it uses the 3-month facts, so the four quarters of a year always add up to the
 *      filed annual figure even when a filer's 9-month total differs from its 3-month figures
 *      by rounding (NVIDIA fiscal 2024 net income: 2,043 + 6,188 + 9,243 ≠ 17,475);
 *   3. when an earlier quarter is unknown: YTD(n) − YTD(n−1), both filed (Alphabet's 2023
 *      dividends are tagged only as 6-month, 9-month and annual comparatives).
 *   All operands of one quarter come from one concept.
 *
 * ## Versions (restatements)
 * The same period's value is filed many times (original 10-Q, comparatives in later filings,
 * amendments). A quarter's values as of day d use, per (concept, period), the latest fact filed
 * ≤ d. Every distinct filing date at or after `firstFiled` among the facts a quarter's values
 * can use is evaluated; one that changes any value opens a new version (its facts are those of
 * that evaluation; an unchanged value keeps the facts of the version that introduced it, so a
 * number stays traced to the filing that first reported it). Versions are point-in-time by
 * construction: a version never uses a fact filed after its own date. A later filing can also
 * make a higher-precedence concept available for a past quarter (Apple first tags LongTermDebt
 * at 2022-09-24 in a 10-Q of 2023, where its 10-K of 2022 had only the current and non-current
 * parts): the value then follows it from that filing on, as a new version. `firstFiled` is the
 * earliest filing date among facts of the quarter's own period (ending at its end date).
 */

/** One filed version of one fiscal quarter: the values as known once `filed` (epoch day) is public. */
interface QuarterVersion {
  filed: number
  /** NaN = not reported */
  values: Record<FundamentalField, number>
  facts: Partial<Record<FundamentalField, SecFact[]>>
}
interface CompanyQuarter {
  /** epoch day of the fiscal quarter end */
  periodEnd: number
  fy: number
  fq: 1 | 2 | 3 | 4
  /** epoch day of the first filing reporting this quarter; null = unknown */
  firstFiled: number | null
  /** ascending by filed */
  versions: QuarterVersion[]
}
export interface CompanyFundamentals {
  cik: number
  name: string | null
  /** ascending by periodEnd */
  quarters: CompanyQuarter[]
}

/** A quarter as visible at one as-of date. */
export interface VisibleQuarter {
  periodEnd: number
  fy: number
  fq: number
  filedDate: number
  filedDateSource: 'exact' | 'approx'
  values: Record<FundamentalField, number>
  facts: Partial<Record<FundamentalField, SecFact[]>>
}

/** Parses one companyfacts document; throws a plain Error with a clear message when malformed. */
export function parseCompanyFacts(doc: unknown): CompanyFundamentals {
  return quarterise(readCompanyFacts(doc))
}

/**
 * Point in time: the quarters visible at asOf (filed date ≤ asOf; filed date = firstFiled, else
 * periodEnd + 45 days 'approx'), each with the values of its latest version filed ≤ asOf.
 */
export function quartersAsOf(c: CompanyFundamentals, asOf: number): VisibleQuarter[] {
  const out: VisibleQuarter[] = []
  for (const q of c.quarters) {
    const exact = q.firstFiled !== null
    const filedDate = q.firstFiled ?? q.periodEnd + APPROX_FILING_LAG_DAYS
    if (filedDate > asOf || q.versions.length === 0) continue
    let v = q.versions[0]
    for (const x of q.versions) if (x.filed <= asOf) v = x
    out.push({
      periodEnd: q.periodEnd,
      fy: q.fy,
      fq: q.fq,
      filedDate,
      filedDateSource: exact ? 'exact' : 'approx',
      values: v.values,
      facts: v.facts,
    })
  }
  return out
}

function quarterise(raw: RawCompany): CompanyFundamentals {
  const years = fiscalYears(raw)
  const specConcepts = conceptLists(raw)
  const quarters: CompanyQuarter[] = []
  for (const y of years)
    for (let n = 1; n <= 4; n++) {
      const end = y.ends[n]
      if (end === undefined) continue
      quarters.push(quarterVersions(raw, specConcepts, y, n as 1 | 2 | 3 | 4, end))
    }
  quarters.sort((a, b) => a.periodEnd - b.periodEnd)
  return { cik: raw.cik, name: raw.name, quarters }
}

function conceptLists(raw: RawCompany): ConceptFacts[] {
  const seen = new Set<string>()
  const out: ConceptFacts[] = []
  for (const spec of Object.values(FIELD_SPECS))
    for (const alt of spec)
      for (const p of alt) {
        const k = conceptKey(p.source, p.concept)
        const cf = raw.concepts.get(k)
        if (cf && !seen.has(k)) {
          seen.add(k)
          out.push(cf)
        }
      }
  return out
}

function quarterVersions(
  raw: RawCompany,
  concepts: ConceptFacts[],
  y: FiscalYear,
  fq: 1 | 2 | 3 | 4,
  end: number,
): CompanyQuarter {
  // The filing dates that can change this quarter's values, and the first one reporting it.
  // A fact without a filing date counts from its period end + 45 days; the quarter's filed date
  // is exact only when a fact of its own period carries one.
  const dates = new Set<number>()
  let firstFiled = Number.POSITIVE_INFINITY
  let firstExact = Number.POSITIVE_INFINITY
  const add = (list: RawFact[] | undefined, own: boolean) => {
    if (!list) return
    for (const f of list) {
      dates.add(f.filed)
      if (own && f.filed < firstFiled) firstFiled = f.filed
      if (own && !f.filedApprox && f.filed < firstExact) firstExact = f.filed
    }
  }
  for (const cf of concepts) {
    for (let k = 1; k <= fq; k++) {
      const e = y.ends[k]
      if (e === undefined) continue
      add(cf.byPeriod.get(`${y.start}:${e}`), k === fq)
      add(cf.quarterByEnd.get(e), k === fq)
    }
    add(cf.instantByEnd.get(end), true)
  }
  const versions: QuarterVersion[] = []
  const sorted = [...dates].filter((d) => d >= firstFiled).sort((a, b) => a - b)
  for (const d of sorted) {
    const next = evaluate(raw, y, fq, end, d)
    const prev = versions.at(-1)
    if (!prev) {
      versions.push(next)
      continue
    }
    let changed = false
    const facts: Partial<Record<FundamentalField, SecFact[]>> = {}
    for (const field of FIELDS) {
      const same = Object.is(prev.values[field], next.values[field])
      if (!same) changed = true
      const src = same ? prev.facts[field] : next.facts[field]
      if (src) facts[field] = src
    }
    if (changed) versions.push({ filed: d, values: next.values, facts })
  }
  return {
    periodEnd: end,
    fy: y.fy,
    fq,
    firstFiled: Number.isFinite(firstExact) ? firstExact : null,
    versions,
  }
}

interface Picked {
  value: number
  facts: SecFact[]
}
interface Part {
  f: RawFact
  part: string
}

function evaluate(
  raw: RawCompany,
  y: FiscalYear,
  fq: 1 | 2 | 3 | 4,
  end: number,
  asOf: number,
): QuarterVersion {
  const values = {} as Record<FundamentalField, number>
  const facts: Partial<Record<FundamentalField, SecFact[]>> = {}
  for (const field of DURATION_FIELDS) {
    const p = pickField(raw, field, (cf) => durationValue(cf, y, fq, asOf))
    values[field] = p ? p.value : Number.NaN
    if (p) facts[field] = p.facts
  }
  for (const field of INSTANT_FIELDS) {
    const p = pickField(raw, field, (cf) => {
      const f = latestAsOf(cf.instantByEnd.get(end), asOf)
      return f ? { value: f.val, facts: [toSecFact(f, null, null)] } : null
    })
    values[field] = p ? p.value : Number.NaN
    if (p) facts[field] = p.facts
  }
  return { filed: asOf, values, facts }
}

/** The first alternative of the field's precedence with all required parts present. */
function pickField(
  raw: RawCompany,
  field: FundamentalField,
  valueIn: (cf: ConceptFacts) => Picked | null,
): Picked | null {
  for (const alt of FIELD_SPECS[field]) {
    let value = 0
    const facts: SecFact[] = []
    let ok = true
    for (const part of alt) {
      const cf = raw.concepts.get(conceptKey(part.source, part.concept))
      const p = cf ? valueIn(cf) : null
      if (!p) {
        if (part.optional) continue
        ok = false
        break
      }
      value += p.value
      facts.push(...p.facts)
    }
    if (ok) return { value, facts }
  }
  return null
}

interface QuarterParts {
  value: number
  derived: SecFact['derived']
  parts: Part[]
}

/**
 * Quarter n of one concept: its 3-month fact, else the fiscal-year-to-date fact through quarter
 * n minus the concept's own quarters 1..n−1 (each by the same rule), so the quarters of a year
 * always add up to the filed annual figure.
 */
function durationValue(cf: ConceptFacts, y: FiscalYear, n: number, asOf: number): Picked | null {
  const memo: (QuarterParts | null | undefined)[] = []
  const quarter = (k: number): QuarterParts | null => {
    const known = memo[k]
    if (known !== undefined) return known
    let r: QuarterParts | null = null
    const e = y.ends[k]
    if (e !== undefined) {
      const direct = latestAsOf(cf.quarterByEnd.get(e), asOf)
      if (direct) r = { value: direct.val, derived: null, parts: [{ f: direct, part: `Q${k}` }] }
      else if (k > 1) r = fromTotal(k, latestAsOf(cf.byPeriod.get(`${y.start}:${e}`), asOf))
    }
    memo[k] = r
    return r
  }
  const fromTotal = (k: number, total: RawFact | null): QuarterParts | null => {
    if (!total) return null
    const parts: Part[] = [{ f: total, part: k === 4 ? 'FY' : `YTD${k}` }]
    const labels = new Set([parts[0].part])
    const derived = k === 4 ? 'q4_from_fy' : 'from_ytd'
    let before = 0
    for (let j = 1; j < k; j++) {
      const q = quarter(j)
      if (!q) return fromPreviousTotal(k, total)
      before += q.value
      for (const p of q.parts)
        if (!labels.has(p.part)) {
          labels.add(p.part)
          parts.push(p)
        }
    }
    return { value: total.val - before, derived, parts }
  }
  // An earlier quarter is unknown, but the year to date through the previous quarter is filed.
  const fromPreviousTotal = (k: number, total: RawFact): QuarterParts | null => {
    const e = y.ends[k - 1]
    const prev = e === undefined ? null : latestAsOf(cf.byPeriod.get(`${y.start}:${e}`), asOf)
    if (!prev) return null
    return {
      value: total.val - prev.val,
      derived: k === 4 ? 'q4_from_fy' : 'from_ytd',
      parts: [
        { f: total, part: k === 4 ? 'FY' : `YTD${k}` },
        { f: prev, part: k === 2 ? 'Q1' : `YTD${k - 1}` },
      ],
    }
  }
  const r = quarter(n)
  if (!r) return null
  if (r.derived === null) return { value: r.value, facts: [toSecFact(r.parts[0].f, null, null)] }
  const derived = r.derived
  return { value: r.value, facts: r.parts.map((p) => toSecFact(p.f, derived, p.part)) }
}
