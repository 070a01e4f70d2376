import { isoFromDay, parseIsoDay } from '../../../platform/dates.ts'
import { type FactSource, FIELD_SPECS } from './concepts.ts'

/**
 * Reading one SEC companyfacts document (already `JSON.parse`d) into the raw facts the
 * fundamentals rows can use, indexed by concept and period. No quarter logic here: see
 * `quarters.ts`.
 *
 * Only the concepts of `FIELD_SPECS` are read (both taxonomies: `us-gaap` and `ifrs-full`). A
 * concept's unit is `USD` when it has one, else its only ISO-currency unit; the ratios are
 * unit-free as long as one filer reports every concept in one currency, which is how filers
 * report. companyfacts holds only non-dimensional facts, so every fact is a company total.
 *
 * Caution: a fact's `fy`/`fp`/`form` describe the *filing* that reported it (a 10-K carries the
 * two prior years as comparatives under its own fy and fp = 'FY'), never the fact's period; the
 * period is `start`..`end` alone.
 *
 * Which concepts feed which field, in what precedence: `concepts.ts`.
 */

/** One raw XBRL value used for a row cell, traceable to its filing. */
export interface SecFact {
  concept: string
  value: number
  unit: string
  form: string
  accession: string
  /** ISO date */
  filed: string
  source: FactSource
  start: string | null
  end: string
  fy: number | null
  fp: string | null
  /** how a quarter value was derived from this and other facts (null: the fact is the quarter) */
  derived: null | 'q4_from_fy' | 'from_ytd'
  /**
   * The fact's role in a derived quarter: 'FY' (12 months), `YTD2`/`YTD3` (year to date), `Q1`…`Q4`
   * (3 months); null when the fact is the quarter value itself or an instant.
   */
  part: string | null
}

/** One fact as read, dates as epoch days. */
export interface RawFact {
  concept: string
  source: FactSource
  unit: string
  /** epoch day; null for an instant */
  start: number | null
  end: number
  startIso: string | null
  endIso: string
  val: number
  accn: string
  fy: number | null
  fp: string | null
  form: string
  /** epoch day the fact became public: its filing date, else (no `filed`) its end + 45 days */
  filed: number
  filedIso: string
  /** true when the document gave no filing date (filed is the period end + 45 days) */
  filedApprox: boolean
}

/** Days after the period end a filing is assumed public when its date is unknown. */
export const APPROX_FILING_LAG_DAYS = 45

/** The facts of one concept. Lists are ascending by filed (then accession). */
export interface ConceptFacts {
  /** duration facts by `${start}:${end}` */
  byPeriod: Map<string, RawFact[]>
  /** 3-month duration facts (80–100 days) by end day */
  quarterByEnd: Map<number, RawFact[]>
  /** instant facts by end day */
  instantByEnd: Map<number, RawFact[]>
  durations: RawFact[]
}

export interface RawCompany {
  cik: number
  name: string | null
  /** by `${source}:${concept}` */
  concepts: Map<string, ConceptFacts>
}

export const conceptKey = (source: FactSource, concept: string) => `${source}:${concept}`

/** Days covered by a duration fact, both ends included. */
export const spanDays = (start: number, end: number) => end - start + 1
const isQuarterSpan = (days: number) => days >= 80 && days <= 100

const TAXONOMIES: [string, FactSource][] = [
  ['us-gaap', 'us_gaap'],
  ['ifrs-full', 'ifrs'],
]

function isRecord(x: unknown): x is Record<string, unknown> {
  return typeof x === 'object' && x !== null && !Array.isArray(x)
}

/** Reads the concepts of FIELD_SPECS; throws a plain Error on a malformed document. */
export function readCompanyFacts(doc: unknown): RawCompany {
  if (!isRecord(doc)) throw new Error('companyfacts: the document is not a JSON object')
  const cik =
    typeof doc.cik === 'string' && /^(CIK)?\d+$/.test(doc.cik) ? Number(doc.cik.replace('CIK', '')) : doc.cik
  if (typeof cik !== 'number' || !Number.isInteger(cik) || cik <= 0)
    throw new Error(`companyfacts: cik must be a positive integer (got ${JSON.stringify(doc.cik)})`)
  const name = doc.entityName
  if (name !== undefined && name !== null && typeof name !== 'string')
    throw new Error('companyfacts: entityName must be a string')
  if (!isRecord(doc.facts)) throw new Error('companyfacts: facts must be an object')
  const wanted = new Set<string>()
  for (const spec of Object.values(FIELD_SPECS))
    for (const alt of spec) for (const p of alt) wanted.add(conceptKey(p.source, p.concept))
  const concepts = new Map<string, ConceptFacts>()
  for (const [taxonomy, source] of TAXONOMIES) {
    const tax = doc.facts[taxonomy]
    if (tax === undefined) continue
    if (!isRecord(tax)) throw new Error(`companyfacts: facts['${taxonomy}'] must be an object`)
    for (const concept of Object.keys(tax)) {
      if (!wanted.has(conceptKey(source, concept))) continue
      const read = readConcept(tax[concept], concept, source)
      if (read) concepts.set(conceptKey(source, concept), read)
    }
  }
  return { cik, name: typeof name === 'string' ? name : null, concepts }
}

function pickUnit(units: Record<string, unknown>): string | null {
  if ('USD' in units) return 'USD'
  const currencies = Object.keys(units).filter((u) => /^[A-Z]{3}$/.test(u))
  return currencies.length === 1 ? currencies[0] : null
}

function readConcept(entry: unknown, concept: string, source: FactSource): ConceptFacts | null {
  const where = `companyfacts: ${concept}`
  if (!isRecord(entry) || !isRecord(entry.units)) throw new Error(`${where}: units must be an object`)
  const unit = pickUnit(entry.units)
  if (unit === null) return null
  const list = entry.units[unit]
  if (!Array.isArray(list)) throw new Error(`${where}: units.${unit} must be an array`)
  const out: ConceptFacts = {
    byPeriod: new Map(),
    quarterByEnd: new Map(),
    instantByEnd: new Map(),
    durations: [],
  }
  for (let i = 0; i < list.length; i++) {
    const f = readFact(list[i], `${where}.units.${unit}[${i}]`, concept, source, unit)
    if (f.start === null) push(out.instantByEnd, f.end, f)
    else {
      out.durations.push(f)
      push(out.byPeriod, `${f.start}:${f.end}`, f)
      if (isQuarterSpan(spanDays(f.start, f.end))) push(out.quarterByEnd, f.end, f)
    }
  }
  for (const m of [out.byPeriod, out.quarterByEnd, out.instantByEnd])
    for (const l of m.values()) if (l.length > 1) l.sort(byFiled)
  return out
}

const byFiled = (a: RawFact, b: RawFact) =>
  a.filed - b.filed || (a.accn < b.accn ? -1 : a.accn > b.accn ? 1 : 0)

function push<K>(m: Map<K, RawFact[]>, k: K, f: RawFact) {
  const l = m.get(k)
  if (l) l.push(f)
  else m.set(k, [f])
}

function readFact(x: unknown, where: string, concept: string, source: FactSource, unit: string): RawFact {
  if (!isRecord(x)) throw new Error(`${where}: a fact must be an object`)
  const day = (key: string, required: boolean): number | null => {
    const v = x[key]
    if (v === undefined || v === null) {
      if (required) throw new Error(`${where}: missing ${key}`)
      return null
    }
    const d = typeof v === 'string' ? parseIsoDay(v) : null
    if (d === null) throw new Error(`${where}: ${key} must be an ISO date (got ${JSON.stringify(v)})`)
    return d
  }
  const end = day('end', true) as number // required: day() throws rather than answer null
  const start = day('start', false)
  // SEC's own files always carry `filed`; a converted file may not: the fact then counts as
  // public 45 days after its period end (docs/methodology.md §13, filed_date_source approx).
  const filedExact = day('filed', false)
  const filed = filedExact ?? end + APPROX_FILING_LAG_DAYS
  if (start !== null && start > end) throw new Error(`${where}: start after end`)
  const val = x.val
  if (typeof val !== 'number' || !Number.isFinite(val))
    throw new Error(`${where}: val must be a finite number`)
  if (typeof x.accn !== 'string') throw new Error(`${where}: accn must be a string`)
  if (typeof x.form !== 'string') throw new Error(`${where}: form must be a string`)
  const fy = typeof x.fy === 'number' && Number.isFinite(x.fy) ? x.fy : null
  const fp = typeof x.fp === 'string' ? x.fp : null
  return {
    concept,
    source,
    unit,
    start,
    end,
    startIso: start === null ? null : (x.start as string),
    endIso: x.end as string,
    val,
    accn: x.accn,
    fy,
    fp,
    form: x.form,
    filed,
    filedIso: filedExact === null ? isoFromDay(filed) : (x.filed as string),
    filedApprox: filedExact === null,
  }
}

/** The fact of a list (ascending by filed) visible at `asOf`: the latest filed ≤ asOf. */
export function latestAsOf(list: RawFact[] | undefined, asOf: number): RawFact | null {
  if (!list) return null
  for (let i = list.length - 1; i >= 0; i--) if (list[i].filed <= asOf) return list[i]
  return null
}

export function toSecFact(f: RawFact, derived: SecFact['derived'], part: string | null): SecFact {
  return {
    concept: f.concept,
    value: f.val,
    unit: f.unit,
    form: f.form,
    accession: f.accn,
    filed: f.filedIso,
    source: f.source,
    start: f.startIso,
    end: f.endIso,
    fy: f.fy,
    fp: f.fp,
    derived,
    part,
  }
}
