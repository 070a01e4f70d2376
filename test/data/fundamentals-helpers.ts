import assert from 'node:assert/strict'
import type { RowContext, Tenor } from '../../src/engine/data/fundamentals/index.ts'

/** Relative closeness (1e-12) for a hand-computed expectation; null must match null. */
export function close(actual: number | null | undefined, expected: number | null, what: string, rel = 1e-12) {
  if (expected === null) {
    assert.equal(actual, null, `${what}: expected null, got ${actual}`)
    return
  }
  assert.ok(
    typeof actual === 'number' && Number.isFinite(actual),
    `${what}: expected ${expected}, got ${actual}`,
  )
  const scale = Math.max(Math.abs(expected), 1e-300)
  assert.ok(Math.abs(actual - expected) <= rel * scale, `${what}: expected ${expected}, got ${actual}`)
}

export const TENOR_RATES: Record<Tenor, number> = {
  '3m': 0.04,
  '1y': 0.042,
  '2y': 0.039,
  '5y': 0.037,
  '10y': 0.041,
  '30y': 0.045,
}

/** A fixed market context: one beta set and one curve for every period end. */
export function constantContext(market: number | null = 1.2): RowContext {
  return {
    betas: () => ({ market, sector: 0.3, subsector: -0.1, source: 'in-universe' }),
    rate: (_pe, tenor) => TENOR_RATES[tenor],
  }
}

/** A context whose betas and rates vary with the period end (to catch mixed-up dates). */
export function varyingContext(): RowContext {
  return {
    betas: (pe) => ({
      market: 0.5 + (pe % 97) / 97,
      sector: (pe % 13) / 13,
      subsector: null,
      source: 'in-universe',
    }),
    rate: (pe, tenor) => TENOR_RATES[tenor] + (pe % 11) / 1000,
  }
}

/**
 * Synthetic filings with a known truth: random quarterly values written as companyfacts the way
 * filers write them — 10-Q income items for 3 months (optionally also year to date), cash-flow
 * items year to date only, Q4 only inside the 10-K annual figure, prior-year comparatives in
 * later filings, quarter ends that drift by days (52/53-week years), any fiscal year-end month,
 * concept switches for revenue and interest, and restatements (a 10-K/A refiling a whole fiscal
 * year with changed values, later than its 10-K). Values are whole thousands, so every sum is
 * exact in doubles.
 */
export const GEN_DURATION = [
  'revenue',
  'net_income',
  'operating_cash_flow',
  'capex',
  'dividends',
  'repurchases',
  'interest_expense',
] as const
export const GEN_INSTANT = ['total_equity', 'total_assets', 'total_debt'] as const
export type GenField = (typeof GEN_DURATION)[number] | (typeof GEN_INSTANT)[number]
const INCOME = new Set<GenField>(['revenue', 'net_income', 'interest_expense'])

export interface GenOptions {
  seed: number
  fyEndMonth: number
  fullYears: number
  extraQuarters: number
  comparatives: boolean
  incomeYtd: boolean
  restatements: number
  /** allow non-positive equity, net income and zero debt */
  guards: boolean
  revenueSwitchYear: number | null
  interestSwitchYear: number | null
}

export interface GenQuarter {
  fy: number
  fq: 1 | 2 | 3 | 4
  yearStart: number
  start: number
  end: number
  /** the quarter's own 10-Q / 10-K */
  filed: number
  base: Record<GenField, number>
}
export interface Restatement {
  quarter: number
  field: GenField
  delta: number
  filed: number
}
export interface GenCompany {
  quarters: GenQuarter[]
  restatements: Restatement[]
  doc: {
    cik: number
    entityName: string
    facts: { 'us-gaap': Record<string, { units: { USD: GenFact[] } }> }
  }
  /** truth of a quarter's field as known at day d (base + restatements filed ≤ d) */
  truth(q: number, field: GenField, d: number): number
  lastFiled: number
}
export interface GenFact {
  start?: string
  end: string
  val: number
  accn: string
  fy: number
  fp: string
  form: string
  filed: string
}

function endOfMonth(year: number, month: number): number {
  return Math.floor(Date.UTC(year, month, 0) / 86_400_000)
}
const iso = (d: number) => new Date(d * 86_400_000).toISOString().slice(0, 10)

export function generateFilings(
  o: GenOptions,
  rng: { int(lo: number, hi: number): number; uniform(): number },
  edit?: (base: Record<GenField, number>) => void,
): GenCompany {
  const k = () => rng.int(1, 5_000_000) * 1000
  const signed = () => (o.guards && rng.uniform() < 0.25 ? -1 : 1) * k()
  const quarters: GenQuarter[] = []
  const firstYear = 2012
  let yearStart = endOfMonth(firstYear - 1, o.fyEndMonth) + 1
  const count = o.fullYears * 4 + o.extraQuarters
  for (let i = 0; i < count; i++) {
    const fq = ((i % 4) + 1) as 1 | 2 | 3 | 4
    const fyEndYear = firstYear + Math.floor(i / 4)
    if (fq === 1 && i > 0) yearStart = (quarters[i - 1].end as number) + 1
    const month = o.fyEndMonth - 3 * (4 - fq)
    const end = endOfMonth(fyEndYear, month) + rng.int(-3, 3)
    const start = fq === 1 ? yearStart : quarters[i - 1].end + 1
    const filed = end + (fq === 4 ? rng.int(50, 80) : rng.int(20, 45))
    quarters.push({
      fy: fyEndYear,
      fq,
      yearStart,
      start,
      end,
      filed,
      base: {
        revenue: k(),
        net_income: signed(),
        operating_cash_flow: signed(),
        capex: k(),
        dividends: k(),
        repurchases: k(),
        interest_expense: k(),
        total_equity: o.guards && rng.uniform() < 0.3 ? -k() : k() * 4,
        total_assets: k() * 10,
        total_debt: o.guards && rng.uniform() < 0.3 ? 0 : k() * 3,
      },
    })
  }
  if (edit) for (const q of quarters) edit(q.base)
  const restatements: Restatement[] = []
  const fields = [...GEN_DURATION, ...GEN_INSTANT]
  for (let r = 0; r < o.restatements && o.fullYears > 0; r++) {
    const year = rng.int(0, o.fullYears - 1)
    const q = year * 4 + rng.int(0, 3)
    const tenK = quarters[year * 4 + 3].filed
    restatements.push({
      quarter: q,
      field: fields[rng.int(0, fields.length - 1)],
      delta: rng.int(-500_000, 500_000) * 1000,
      filed: tenK + rng.int(1, 400),
    })
  }
  const truth = (q: number, field: GenField, d: number) => {
    let v = quarters[q].base[field]
    for (const r of restatements) if (r.quarter === q && r.field === field && r.filed <= d) v += r.delta
    return v
  }

  const facts: Record<string, GenFact[]> = {}
  let seq = 1
  /** Concepts switch at a fiscal-year boundary (a mid-year switch is a separate test). */
  const concept = (field: GenField, q: GenQuarter): string => {
    const year = q.fy
    switch (field) {
      case 'revenue':
        return o.revenueSwitchYear !== null && year >= o.revenueSwitchYear
          ? 'RevenueFromContractWithCustomerExcludingAssessedTax'
          : 'Revenues'
      case 'interest_expense':
        return o.interestSwitchYear !== null && year >= o.interestSwitchYear
          ? 'InterestExpenseNonoperating'
          : 'InterestExpense'
      case 'net_income':
        return 'NetIncomeLoss'
      case 'operating_cash_flow':
        return 'NetCashProvidedByUsedInOperatingActivities'
      case 'capex':
        return 'PaymentsToAcquirePropertyPlantAndEquipment'
      case 'dividends':
        return 'PaymentsOfDividends'
      case 'repurchases':
        return 'PaymentsForRepurchaseOfCommonStock'
      case 'total_equity':
        return 'StockholdersEquity'
      case 'total_assets':
        return 'Assets'
      case 'total_debt':
        return 'LongTermDebt'
    }
  }
  interface Filing {
    filed: number
    form: string
    fy: number
    fp: string
    accn: string
  }
  const emit = (f: Filing, c: string, start: number | null, end: number, val: number) => {
    const list = facts[c] ?? []
    facts[c] = list
    const fact: GenFact = {
      end: iso(end),
      val,
      accn: f.accn,
      fy: f.fy,
      fp: f.fp,
      form: f.form,
      filed: iso(f.filed),
    }
    if (start !== null) fact.start = iso(start)
    list.push(fact)
  }
  /** The facts of quarter index qi as filed in filing f (values as known at f.filed). */
  const quarterFacts = (f: Filing, qi: number, incomeYtd: boolean) => {
    const q = quarters[qi]
    const first = qi - (q.fq - 1)
    const ytd = (field: GenField) => {
      let s = 0
      for (let j = first; j <= qi; j++) s += truth(j, field, f.filed)
      return s
    }
    for (const field of GEN_DURATION) {
      const c = concept(field, q)
      if (q.fq === 4) emit(f, c, q.yearStart, q.end, ytd(field))
      else if (INCOME.has(field)) {
        emit(f, c, q.start, q.end, truth(qi, field, f.filed))
        if (incomeYtd && q.fq > 1) emit(f, c, q.yearStart, q.end, ytd(field))
      } else emit(f, c, q.yearStart, q.end, ytd(field))
    }
    for (const field of GEN_INSTANT) emit(f, concept(field, q), null, q.end, truth(qi, field, f.filed))
  }
  quarters.forEach((q, qi) => {
    const f: Filing = {
      filed: q.filed,
      form: q.fq === 4 ? '10-K' : '10-Q',
      fy: q.fy,
      fp: q.fq === 4 ? 'FY' : `Q${q.fq}`,
      accn: `0000000001-00-${String(seq++).padStart(6, '0')}`,
    }
    quarterFacts(f, qi, o.incomeYtd)
    if (o.comparatives && qi >= 4) quarterFacts(f, qi - 4, o.incomeYtd)
  })
  for (const r of restatements) {
    const year = Math.floor(r.quarter / 4)
    const f: Filing = {
      filed: r.filed,
      form: '10-K/A',
      fy: quarters[year * 4].fy,
      fp: 'FY',
      accn: `0000000001-00-${String(seq++).padStart(6, '0')}`,
    }
    for (let qi = year * 4; qi < year * 4 + 4; qi++) quarterFacts(f, qi, o.incomeYtd)
  }
  let lastFiled = 0
  for (const q of quarters) lastFiled = Math.max(lastFiled, q.filed)
  for (const r of restatements) lastFiled = Math.max(lastFiled, r.filed)
  const usGaap: Record<string, { units: { USD: GenFact[] } }> = {}
  for (const [c, list] of Object.entries(facts)) usGaap[c] = { units: { USD: list } }
  return {
    quarters,
    restatements,
    doc: { cik: 1234, entityName: 'Generated Co', facts: { 'us-gaap': usGaap } },
    truth,
    lastFiled,
  }
}
