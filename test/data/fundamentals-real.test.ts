/**
 * Fundamentals rows on real SEC companyfacts (Apple, NVIDIA, Snowflake, Alphabet), checked
 * against values computed here by hand from named XBRL facts looked up in the raw JSON.
 *
 * The hand computation never goes through src/: TTM duration values use the filers' own
 * cumulative totals (Q4 row: the fiscal-year figure; quarter n < 4: FY(prev) − YTDn(prev) +
 * YTDn(current), with YTD1 the Q1 3-month figure), which is a different route from the parser's
 * quarter-by-quarter sums and must agree with it. Fiscal calendars are written out as literals.
 * Skipped when ../shared/data/real is absent.
 */
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { describe, test } from 'node:test'
import { gunzipSync } from 'node:zlib'
import {
  type CompanyFundamentals,
  type FundamentalsRow,
  fundamentalsRows,
  parseCompanyFacts,
  quartersAsOf,
  sensitivityGrid,
} from '../../src/engine/data/fundamentals/index.ts'
import { parseIsoDay } from '../../src/platform/dates.ts'
import { REAL, realDataPresent } from '../helpers/real-data.ts'
import { close, constantContext, TENOR_RATES } from './fundamentals-helpers.ts'

const DIR = `${REAL}fundamentals/companyfacts/`
const FILES = {
  apple: 'CIK0000320193',
  nvidia: 'CIK0001045810',
  snowflake: 'CIK0001640147',
  alphabet: 'CIK0001652044',
} as const
type Company = keyof typeof FILES

const LATEST = '2026-12-31'
const ERP = 0.05
const TAX = 0.21
const BETA = 1.2
const RF = TENOR_RATES['3m']
const COE = RF + BETA * ERP
const PARAMS = { erp: ERP, taxRate: TAX, rfTenor: '3m' as const }

interface RawFact {
  start?: string
  end: string
  val: number
  filed: string
  form: string
  accn: string
}
type Doc = { facts: Record<string, Record<string, { units: Record<string, RawFact[]> }>> }

const day = (iso: string) => {
  const d = parseIsoDay(iso)
  if (d === null) throw new Error(`bad date ${iso}`)
  return d
}

const docs = new Map<Company, Doc>()
const parsed = new Map<Company, CompanyFundamentals>()
function load(c: Company): { doc: Doc; company: CompanyFundamentals } {
  let doc = docs.get(c)
  if (!doc) {
    doc = JSON.parse(gunzipSync(readFileSync(`${DIR}${FILES[c]}.json.gz`)).toString('utf8')) as Doc
    docs.set(c, doc)
  }
  let company = parsed.get(c)
  if (!company) {
    company = parseCompanyFacts(doc)
    parsed.set(c, company)
  }
  return { doc, company }
}

/** The us-gaap USD fact of exactly this period, latest filed ≤ asOf; undefined when none. */
function find(c: Company, concept: string, start: string | null, end: string, asOf = LATEST) {
  const list = load(c).doc.facts['us-gaap'][concept]?.units.USD ?? []
  let best: RawFact | undefined
  for (const f of list)
    if ((f.start ?? null) === start && f.end === end && f.filed <= asOf && (!best || f.filed >= best.filed))
      best = f
  return best
}
/** The value of a fact that must exist. */
function v(c: Company, concept: string, start: string | null, end: string, asOf = LATEST): number {
  const f = find(c, concept, start, end, asOf)
  if (!f) throw new Error(`${c}: no ${concept} ${start ?? ''}..${end} filed by ${asOf}`)
  return f.val
}
/** The earliest filing date of any fact of a concept ending at `end`. */
function firstFiled(c: Company, concept: string, end: string): string | undefined {
  const list = load(c).doc.facts['us-gaap'][concept]?.units.USD ?? []
  return list
    .filter((f) => f.end === end)
    .map((f) => f.filed)
    .sort()[0]
}
/** An instant added when reported (commercial paper), else 0. */
const optional = (c: Company, concept: string, end: string, asOf = LATEST) =>
  find(c, concept, null, end, asOf)?.val ?? 0

function rowsAt(c: Company, asOf = LATEST, market: number | null = BETA): FundamentalsRow[] {
  return fundamentalsRows(quartersAsOf(load(c).company, day(asOf)), constantContext(market), PARAMS)
}
function rowOf(rows: FundamentalsRow[], end: string): FundamentalsRow {
  const r = rows.find((x) => x.period_end_date === end)
  assert.ok(r, `no row for ${end}`)
  return r
}

/** Fiscal calendar: year start and the four quarter ends, written out from the filings. */
interface FiscalYear {
  start: string
  q: [string, string, string, string]
}
/** Filed cumulative total of a fiscal year through quarter n (1 = the Q1 3-month figure). */
const ytd = (c: Company, concept: string, y: FiscalYear, n: number, asOf = LATEST) =>
  v(c, concept, y.start, y.q[n - 1], asOf)
const quarterStart = (y: FiscalYear, k: number) => (k === 1 ? y.start : dayAfter(y.q[k - 2]))
/**
 * The first n quarters of a fiscal year as filed: the sum of the 3-month facts when the filer
 * tags each quarter (income items; NVIDIA's dividends), else the year-to-date fact (cash-flow
 * items). 3-month and year-to-date figures can differ by rounding (NVIDIA fiscal 2024 dividends:
 * 99 + 99 vs 199), and the quarter's own 3-month figure comes first.
 */
function firstQuarters(c: Company, concept: string, y: FiscalYear, n: number, asOf = LATEST): number {
  const quarters = []
  for (let k = 1; k <= n; k++) quarters.push(find(c, concept, quarterStart(y, k), y.q[k - 1], asOf))
  if (quarters.every((f) => f !== undefined)) return quarters.reduce((s, f) => s + (f?.val ?? 0), 0)
  assert.ok(
    quarters.slice(1).every((f) => f === undefined),
    `${concept}: some 3-month facts only`,
  )
  return ytd(c, concept, y, n, asOf)
}
/**
 * TTM at quarter n of year `cur`: FY when n = 4, else FY(prev) − (prev's first n quarters) +
 * (cur's first n quarters) — the quarters n+1..4 of the previous year (Q4 = FY − Q1..Q3) and
 * 1..n of this one.
 */
const ttm = (c: Company, concept: string, prev: FiscalYear, cur: FiscalYear, n: number, asOf = LATEST) =>
  n === 4
    ? ytd(c, concept, cur, 4, asOf)
    : ytd(c, concept, prev, 4, asOf) -
      firstQuarters(c, concept, prev, n, asOf) +
      firstQuarters(c, concept, cur, n, asOf)

interface Expected {
  roe: number | null
  fcf: number | null
  leverage: number | null
  payout: number | null
  costOfDebt: number | null
}
function check(row: FundamentalsRow, e: Expected, what: string) {
  close(row.roe_ttm, e.roe, `${what} roe_ttm`)
  close(row.fcf_margin, e.fcf, `${what} fcf_margin`)
  close(row.leverage_ratio, e.leverage, `${what} leverage_ratio`)
  close(row.payout_ratio, e.payout, `${what} payout_ratio`)
  close(row.cost_of_debt, e.costOfDebt, `${what} cost_of_debt`)
}

const skip = realDataPresent ? false : `real data not found at ${REAL} (only on development and CI machines)`

describe('fundamentals on real SEC companyfacts', { skip }, () => {
  test('parsing the four files takes well under a second', (t) => {
    const t0 = performance.now()
    for (const c of Object.keys(FILES) as Company[]) {
      const doc = JSON.parse(gunzipSync(readFileSync(`${DIR}${FILES[c]}.json.gz`)).toString('utf8'))
      const company = parseCompanyFacts(doc)
      assert.ok(company.quarters.length > 20, `${c}: ${company.quarters.length} quarters`)
    }
    t.diagnostic(
      `gunzip + JSON.parse + parseCompanyFacts, 4 files: ${(performance.now() - t0).toFixed(0)} ms`,
    )
  })

  test('fiscal quarters come from period dates (52/53-week and non-December years)', () => {
    const fq = (c: Company, end: string) => {
      const q = load(c).company.quarters.find((x) => x.periodEnd === day(end))
      assert.ok(q, `${c}: no quarter ending ${end}`)
      return [q.fy, q.fq]
    }
    assert.deepEqual(fq('apple', '2023-09-30'), [2023, 4]) // 53-week fiscal 2023
    assert.deepEqual(fq('apple', '2023-12-30'), [2024, 1])
    assert.deepEqual(fq('apple', '2024-06-29'), [2024, 3])
    assert.deepEqual(fq('nvidia', '2024-01-28'), [2024, 4])
    assert.deepEqual(fq('nvidia', '2024-04-28'), [2025, 1])
    assert.deepEqual(fq('snowflake', '2024-01-31'), [2024, 4])
    assert.deepEqual(fq('snowflake', '2024-10-31'), [2025, 3])
    assert.deepEqual(fq('alphabet', '2024-06-30'), [2024, 2])
    for (const c of Object.keys(FILES) as Company[]) {
      const qs = load(c).company.quarters
      for (let i = 1; i < qs.length; i++) {
        const gap = qs[i].periodEnd - qs[i - 1].periodEnd
        assert.ok(gap > 0, `${c}: quarters ascending`)
        if (gap < 120) assert.equal(qs[i].fq, (qs[i - 1].fq % 4) + 1, `${c}: consecutive quarters`)
      }
    }
  })

  // Apple: fiscal years end on the last Saturday of September.
  const A22: FiscalYear = { start: '2021-09-26', q: ['2021-12-25', '2022-03-26', '2022-06-25', '2022-09-24'] }
  const A23: FiscalYear = { start: '2022-09-25', q: ['2022-12-31', '2023-04-01', '2023-07-01', '2023-09-30'] }
  const A24: FiscalYear = { start: '2023-10-01', q: ['2023-12-30', '2024-03-30', '2024-06-29', '2024-09-28'] }

  test('Apple: three quarters by hand; the interest concept ends with fiscal 2023', () => {
    const c: Company = 'apple'
    const rows = rowsAt(c)
    const equity = (...ends: string[]) => ends.map((e) => v(c, 'StockholdersEquity', null, e))
    const debt = (e: string) => v(c, 'LongTermDebt', null, e) + optional(c, 'CommercialPaper', e)
    const cases: [FiscalYear, FiscalYear, number, string[]][] = [
      [A22, A23, 3, [A22.q[3], A23.q[0], A23.q[1], A23.q[2]]],
      [A22, A23, 4, A23.q],
      [A23, A24, 2, [A23.q[2], A23.q[3], A24.q[0], A24.q[1]]],
    ]
    for (const [prev, cur, n, window] of cases) {
      const end = cur.q[n - 1]
      const ni = ttm(c, 'NetIncomeLoss', prev, cur, n)
      const rev = ttm(c, 'RevenueFromContractWithCustomerExcludingAssessedTax', prev, cur, n)
      const cfo = ttm(c, 'NetCashProvidedByUsedInOperatingActivities', prev, cur, n)
      const capex = ttm(c, 'PaymentsToAcquirePropertyPlantAndEquipment', prev, cur, n)
      const div = ttm(c, 'PaymentsOfDividends', prev, cur, n)
      const [e0, e1, e2, e3] = equity(...window)
      const d = debt(end)
      // InterestExpense is last tagged for fiscal 2023 (no later concept in this file): the TTM
      // window of fiscal 2024 Q2 lacks its quarters, so cost of debt is null there.
      const hasInterest = cur === A23
      const interest = hasInterest ? ttm(c, 'InterestExpense', prev, cur, n) : null
      if (!hasInterest) assert.equal(find(c, 'InterestExpense', A24.start, A24.q[0]), undefined)
      const expected: Expected = {
        roe: ni / ((e0 + e1 + e2 + e3) / 4),
        fcf: (cfo - capex) / rev,
        leverage: d / e3,
        payout: div / ni,
        costOfDebt: interest === null ? null : interest / d,
      }
      const row = rowOf(rows, end)
      check(row, expected, `apple ${end}`)
      if (interest !== null) {
        const cod = interest / d
        close(row.wacc, (e3 / (d + e3)) * COE + (d / (d + e3)) * cod * (1 - TAX), `apple ${end} wacc`)
      } else assert.equal(row.wacc, null)
      close(row.cost_of_equity, COE, `apple ${end} cost_of_equity`)
      close(row.economic_profit, (ni / ((e0 + e1 + e2 + e3) / 4) - COE) * e3, `apple ${end} economic_profit`)
    }
  })

  test('Apple: a derived Q4 (FY − Q1 − Q2 − Q3) is traced to each fact', () => {
    const row = rowOf(rowsAt('apple'), A23.q[3])
    const fy = v('apple', 'NetIncomeLoss', A23.start, A23.q[3])
    const q1 = v('apple', 'NetIncomeLoss', A23.start, A23.q[0])
    const q2 = v('apple', 'NetIncomeLoss', '2023-01-01', A23.q[1])
    const q3 = v('apple', 'NetIncomeLoss', '2023-04-02', A23.q[2])
    assert.deepEqual([fy, q1, q2, q3], [96_995_000_000, 29_998_000_000, 24_160_000_000, 19_881_000_000])
    const q4 = row.sec_facts.NetIncomeLoss
    close(q4.value, fy - (q1 + q2 + q3), 'derived Q4 net income')
    assert.equal(q4.derived, 'q4_from_fy')
    assert.equal(q4.form, '10-K')
    assert.equal(row.sec_facts['NetIncomeLoss:FY'].value, fy)
    assert.equal(row.sec_facts['NetIncomeLoss:Q1'].value, q1)
    assert.equal(row.sec_facts['NetIncomeLoss:Q2'].value, q2)
    assert.equal(row.sec_facts['NetIncomeLoss:Q3'].value, q3)
    // cash flow: Q4 = FY − Q1 − (YTD2 − Q1) − (YTD3 − YTD2), traced to FY, Q1, YTD2, YTD3
    const cfo = 'NetCashProvidedByUsedInOperatingActivities'
    close(
      row.sec_facts[cfo].value,
      v('apple', cfo, A23.start, A23.q[3]) - v('apple', cfo, A23.start, A23.q[2]),
      'Q4 CFO',
    )
    assert.deepEqual(
      Object.keys(row.sec_facts)
        .filter((k) => k.startsWith(`${cfo}:`))
        .sort(),
      [`${cfo}:FY`, `${cfo}:Q1`, `${cfo}:YTD2`, `${cfo}:YTD3`],
    )
    // the earlier quarters of the TTM window are listed by period end
    assert.equal(
      row.sec_facts['NetIncomeLoss@2023-07-01'].value,
      v('apple', 'NetIncomeLoss', '2023-04-02', '2023-07-01'),
    )
    assert.equal(
      row.sec_facts['StockholdersEquity@2022-12-31'].value,
      v('apple', 'StockholdersEquity', null, '2022-12-31'),
    )
  })

  // NVIDIA: fiscal years end on the last Sunday of January.
  const N24: FiscalYear = { start: '2023-01-30', q: ['2023-04-30', '2023-07-30', '2023-10-29', '2024-01-28'] }
  const N25: FiscalYear = { start: '2024-01-29', q: ['2024-04-28', '2024-07-28', '2024-10-27', '2025-01-26'] }

  test('NVIDIA: three quarters by hand, across the InterestExpense → InterestExpenseNonoperating switch', () => {
    const c: Company = 'nvidia'
    const rows = rowsAt(c)
    const IE = 'InterestExpense'
    const IEN = 'InterestExpenseNonoperating'
    // Interest per quarter, each quarter from one concept (InterestExpense while it is tagged):
    const q3fy24 = v(c, IE, '2023-07-31', '2023-10-29') // 63
    const q4fy24 = v(c, IE, N24.start, N24.q[3]) - v(c, IE, N24.start, N24.q[2]) // 257 − 194
    const q1fy25 = v(c, IE, N25.start, N25.q[0]) // 64
    assert.equal(find(c, IE, '2024-04-29', '2024-07-28'), undefined) // no InterestExpense after Q1 fiscal 2025
    const q2fy25 = v(c, IEN, '2024-04-29', '2024-07-28') // 61
    const q3fy25 = v(c, IEN, '2024-07-29', '2024-10-27') // 61
    const q2fy24 = v(c, IE, '2023-05-01', '2023-07-30')
    const q1fy24 = v(c, IE, N24.start, N24.q[0])
    const interest: Record<string, number> = {
      [N24.q[3]]: q1fy24 + q2fy24 + q3fy24 + q4fy24,
      [N25.q[1]]: q3fy24 + q4fy24 + q1fy25 + q2fy25,
      [N25.q[2]]: q4fy24 + q1fy25 + q2fy25 + q3fy25,
    }
    const cases: [FiscalYear, FiscalYear, number, string[]][] = [
      [N24, N24, 4, N24.q],
      [N24, N25, 2, [N24.q[2], N24.q[3], N25.q[0], N25.q[1]]],
      [N24, N25, 3, [N24.q[3], N25.q[0], N25.q[1], N25.q[2]]],
    ]
    for (const [prev, cur, n, window] of cases) {
      const end = cur.q[n - 1]
      const ni = ttm(c, 'NetIncomeLoss', prev, cur, n)
      const rev = ttm(c, 'Revenues', prev, cur, n)
      const cfo = ttm(c, 'NetCashProvidedByUsedInOperatingActivities', prev, cur, n)
      // PaymentsToAcquirePropertyPlantAndEquipment stops in fiscal 2021; NVIDIA tags capex as
      // PaymentsToAcquireProductiveAssets since.
      const capex = ttm(c, 'PaymentsToAcquireProductiveAssets', prev, cur, n)
      const div = ttm(c, 'PaymentsOfDividends', prev, cur, n)
      const eq = window.map((e) => v(c, 'StockholdersEquity', null, e))
      const d = v(c, 'LongTermDebt', null, end) + optional(c, 'CommercialPaper', end)
      check(
        rowOf(rows, end),
        {
          roe: ni / ((eq[0] + eq[1] + eq[2] + eq[3]) / 4),
          fcf: (cfo - capex) / rev,
          leverage: d / eq[3],
          payout: div / ni,
          costOfDebt: interest[end] / d,
        },
        `nvidia ${end}`,
      )
    }
    const row = rowOf(rows, N25.q[1])
    assert.equal(row.sec_facts.InterestExpenseNonoperating.value, q2fy25)
    assert.equal(row.sec_facts[`InterestExpense@${N25.q[0]}`].value, q1fy25)
  })

  // Snowflake: fiscal years end on January 31; net income is negative throughout.
  const S24: FiscalYear = { start: '2023-02-01', q: ['2023-04-30', '2023-07-31', '2023-10-31', '2024-01-31'] }
  const S25: FiscalYear = { start: '2024-02-01', q: ['2024-04-30', '2024-07-31', '2024-10-31', '2025-01-31'] }
  const S26: FiscalYear = { start: '2025-02-01', q: ['2025-04-30', '', '', ''] }

  test('Snowflake: negative net income (payout null, economic profit computed), three quarters by hand', () => {
    const c: Company = 'snowflake'
    const rows = rowsAt(c)
    const cases: [FiscalYear, FiscalYear, number, string[]][] = [
      [S24, S24, 4, S24.q],
      [S24, S25, 3, [S24.q[3], S25.q[0], S25.q[1], S25.q[2]]],
      [S25, S26, 1, [S25.q[1], S25.q[2], S25.q[3], S26.q[0]]],
    ]
    // Interest (InterestExpenseNonoperating) is not tagged for fiscal 2025 Q2 in any form
    // (neither 3 months nor 6 months year to date), so every TTM window through it is null.
    assert.equal(find(c, 'InterestExpenseNonoperating', '2024-05-01', '2024-07-31'), undefined)
    assert.equal(find(c, 'InterestExpenseNonoperating', S25.start, '2024-07-31'), undefined)
    for (const [prev, cur, n, window] of cases) {
      const end = cur.q[n - 1]
      const ni = ttm(c, 'NetIncomeLoss', prev, cur, n)
      assert.ok(ni < 0)
      const rev = ttm(c, 'RevenueFromContractWithCustomerExcludingAssessedTax', prev, cur, n)
      const cfo = ttm(c, 'NetCashProvidedByUsedInOperatingActivities', prev, cur, n)
      const capex = ttm(c, 'PaymentsToAcquirePropertyPlantAndEquipment', prev, cur, n)
      const eq = window.map((e) => v(c, 'StockholdersEquity', null, e))
      // Convertible notes from fiscal 2025 (tagged 0 at 2024-01-31 in later comparatives).
      const d = v(c, 'ConvertibleDebtNoncurrent', null, end)
      const roe = ni / ((eq[0] + eq[1] + eq[2] + eq[3]) / 4)
      const row = rowOf(rows, end)
      check(
        row,
        { roe, fcf: (cfo - capex) / rev, leverage: d / eq[3], payout: null, costOfDebt: null },
        `snowflake ${end}`,
      )
      assert.equal(row.retention_ratio, null)
      assert.equal(row.buyback_ratio, null)
      close(row.economic_profit, (roe - COE) * eq[3], `snowflake ${end} economic_profit`)
      if (d === 0) close(row.wacc, COE, `snowflake ${end} wacc with no debt`)
      else assert.equal(row.wacc, null) // cost of debt unknown
    }
  })

  // Alphabet: calendar fiscal years; revenue moves from RevenueFromContractWithCustomer… to Revenues.
  const G23: FiscalYear = { start: '2023-01-01', q: ['2023-03-31', '2023-06-30', '2023-09-30', '2023-12-31'] }
  const G24: FiscalYear = { start: '2024-01-01', q: ['2024-03-31', '2024-06-30', '2024-09-30', '2024-12-31'] }
  const G25: FiscalYear = { start: '2025-01-01', q: ['2025-03-31', '2025-06-30', '2025-09-30', '2025-12-31'] }

  test('Alphabet: three quarters by hand', () => {
    const c: Company = 'alphabet'
    const rows = rowsAt(c)
    const RFC = 'RevenueFromContractWithCustomerExcludingAssessedTax'
    const cfoC = 'NetCashProvidedByUsedInOperatingActivities'
    const capC = 'PaymentsToAcquirePropertyPlantAndEquipment'
    const IE = 'InterestExpense'
    const IEN = 'InterestExpenseNonoperating'
    const eqAvg = (ends: string[]) => ends.reduce((s, e) => s + v(c, 'StockholdersEquity', null, e), 0) / 4

    // 2023-12-31 (Q4): FY totals; debt = LongTermDebt as restated in the 2024 10-K + commercial paper.
    {
      const end = G23.q[3]
      const ni = ytd(c, 'NetIncomeLoss', G23, 4)
      const d = v(c, 'LongTermDebt', null, end) + optional(c, 'CommercialPaper', end)
      const eq = v(c, 'StockholdersEquity', null, end)
      // Alphabet paid its first dividend in June 2024: dividends are not tagged for Q1 2023 (its
      // first tagged figures are later comparatives: 6 and 9 months 2023, FY 2023 = 0), so Q1
      // and Q2 2023 are unknown and the TTM (four finite quarters) is null.
      assert.equal(find(c, 'PaymentsOfDividends', G23.start, G23.q[0]), undefined)
      assert.equal(ytd(c, 'PaymentsOfDividends', G23, 4), 0)
      const div = null
      check(
        rowOf(rows, end),
        {
          roe: ni / eqAvg(G23.q),
          fcf: (ytd(c, cfoC, G23, 4) - ytd(c, capC, G23, 4)) / ytd(c, RFC, G23, 4),
          leverage: d / eq,
          payout: div,
          costOfDebt: ytd(c, IE, G23, 4) / d,
        },
        `alphabet ${end}`,
      )
    }
    // 2024-06-30 (Q2): debt on the balance-sheet line LongTermDebtAndCapitalLeaseObligations;
    // interest: Q3, Q4 2023 InterestExpense, Q1 2024 InterestExpense, Q2 2024 only as
    // InterestExpenseNonoperating.
    {
      const end = G24.q[1]
      const ni = ttm(c, 'NetIncomeLoss', G23, G24, 2)
      const d =
        v(c, 'LongTermDebtAndCapitalLeaseObligations', null, end) + optional(c, 'CommercialPaper', end)
      const interest =
        v(c, IE, '2023-07-01', '2023-09-30') +
        (v(c, IE, G23.start, G23.q[3]) - v(c, IE, G23.start, G23.q[2])) +
        v(c, IE, G24.start, G24.q[0]) +
        v(c, IEN, '2024-04-01', '2024-06-30')
      check(
        rowOf(rows, end),
        {
          roe: ni / eqAvg([G23.q[2], G23.q[3], G24.q[0], G24.q[1]]),
          fcf: (ttm(c, cfoC, G23, G24, 2) - ttm(c, capC, G23, G24, 2)) / ttm(c, RFC, G23, G24, 2),
          leverage: d / v(c, 'StockholdersEquity', null, end),
          payout: ttm(c, 'PaymentsOfDividends', G23, G24, 2) / ni,
          costOfDebt: interest / d,
        },
        `alphabet ${end}`,
      )
    }
    // 2025-06-30 (Q2): revenue of Q3, Q4 2024 and Q1 2025 from RevenueFromContractWithCustomer…,
    // Q2 2025 from Revenues (the first concept is no longer tagged); interest all Nonoperating.
    {
      const end = G25.q[1]
      assert.equal(find(c, RFC, '2025-04-01', '2025-06-30'), undefined)
      assert.equal(find(c, RFC, G25.start, '2025-06-30'), undefined)
      const rev =
        v(c, RFC, '2024-07-01', '2024-09-30') +
        (v(c, RFC, G24.start, G24.q[3]) - v(c, RFC, G24.start, G24.q[2])) +
        v(c, RFC, G25.start, G25.q[0]) +
        v(c, 'Revenues', '2025-04-01', '2025-06-30')
      const ni = ttm(c, 'NetIncomeLoss', G24, G25, 2)
      const d =
        v(c, 'LongTermDebtNoncurrent', null, end) +
        optional(c, 'LongTermDebtCurrent', end) +
        optional(c, 'CommercialPaper', end)
      check(
        rowOf(rows, end),
        {
          roe: ni / eqAvg([G24.q[2], G24.q[3], G25.q[0], G25.q[1]]),
          fcf: (ttm(c, cfoC, G24, G25, 2) - ttm(c, capC, G24, G25, 2)) / rev,
          leverage: d / v(c, 'StockholdersEquity', null, end),
          payout: ttm(c, 'PaymentsOfDividends', G24, G25, 2) / ni,
          costOfDebt: ttm(c, IEN, G24, G25, 2) / d,
        },
        `alphabet ${end}`,
      )
    }
  })

  test('point in time: a quarter appears on its filing date, never a day before', () => {
    const cases: [Company, string, string][] = [
      ['apple', '2023-12-30', '2024-02-02'],
      ['nvidia', '2024-07-28', '2024-08-28'],
      ['snowflake', '2024-01-31', '2024-03-26'],
      ['alphabet', '2024-06-30', '2024-07-24'],
    ]
    for (const [c, end, filed] of cases) {
      // the first filing of the period's own values (its 10-Q/10-K), from the raw JSON
      assert.equal(firstFiled(c, 'NetIncomeLoss', end), filed)
      const before = rowsAt(c, isoFromDayBefore(filed))
      assert.equal(
        before.some((r) => r.period_end_date === end),
        false,
        `${c} ${end} visible before ${filed}`,
      )
      const on = rowsAt(c, filed)
      const row = on.at(-1)
      assert.equal(row?.period_end_date, end)
      assert.equal(row?.filed_date, filed)
      assert.equal(row?.filed_date_source, 'exact')
    }
  })

  test('point in time: a restated value does not appear before its filing date (Alphabet debt at 2023-12-31)', () => {
    const c: Company = 'alphabet'
    const end = '2023-12-31'
    const original = find(c, 'LongTermDebt', null, end, '2025-02-04')
    const restated = find(c, 'LongTermDebt', null, end)
    assert.equal(original?.val, 14_862_000_000)
    assert.equal(original?.filed, '2024-01-31')
    assert.equal(restated?.val, 13_000_000_000)
    assert.equal(restated?.filed, '2025-02-05')
    const eqBefore = v(c, 'StockholdersEquity', null, end, '2025-02-04')
    const eqAfter = v(c, 'StockholdersEquity', null, end)
    const cp = optional(c, 'CommercialPaper', end)
    for (const asOf of ['2024-01-31', '2025-02-04']) {
      const row = rowOf(rowsAt(c, asOf), end)
      close(row.leverage_ratio, (14_862_000_000 + cp) / eqBefore, `leverage at ${asOf}`)
      assert.equal(row.sec_facts.LongTermDebt.accession, original?.accn)
    }
    const row = rowOf(rowsAt(c, '2025-02-05'), end)
    close(row.leverage_ratio, (13_000_000_000 + cp) / eqAfter, 'leverage after the restatement')
    assert.equal(row.sec_facts.LongTermDebt.accession, restated?.accn)
    assert.equal(row.filed_date, '2024-01-31')
  })

  test('the grid on the latest visible quarter equals the row formulas', () => {
    for (const c of Object.keys(FILES) as Company[]) {
      const visible = quartersAsOf(load(c).company, day(LATEST))
      const ctx = constantContext(BETA)
      const grid = sensitivityGrid(visible, ctx, TAX, [0.03, 0.05, 0.07], ['3m', '10y'])
      assert.ok(grid)
      const last = fundamentalsRows(visible, ctx, PARAMS).at(-1)
      assert.ok(last)
      assert.equal(grid.period_end_date, last.period_end_date)
      const cell = grid.cells[1][0] // erp 0.05, 3m = the row's parameters
      assert.equal(cell.cost_of_equity, last.cost_of_equity)
      assert.equal(cell.wacc, last.wacc)
      assert.equal(cell.economic_profit, last.economic_profit)
      close(grid.cells[2][1].cost_of_equity, TENOR_RATES['10y'] + BETA * 0.07, `${c} grid CoE`)
    }
  })
})

function shiftIso(iso: string, days: number): string {
  const d = new Date(`${iso}T00:00:00Z`)
  d.setUTCDate(d.getUTCDate() + days)
  return d.toISOString().slice(0, 10)
}
const isoFromDayBefore = (iso: string) => shiftIso(iso, -1)
const dayAfter = (iso: string) => shiftIso(iso, 1)
