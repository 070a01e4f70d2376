/**
 * Property tests of the fundamentals core on generated filings with a known truth
 * (`generateFilings` in fundamentals-helpers.ts): quarterisation (3-month, year-to-date and
 * FY-only Q4) recovers the generated quarters; TTM ratios equal a naive computation from the
 * truth, with every guard null (never clipped, never infinite); rows at an as-of date do not
 * depend on anything filed later; the sensitivity grid equals the row formulas cell by cell.
 * Also: the synthetic market's own companyfacts documents parse into sane rows.
 */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { gunzipSync } from 'node:zlib'
import { nyseTradingDays } from '../../src/engine/data/calendar.ts'
import {
  type FundamentalsRow,
  fundamentalsRows,
  parseCompanyFacts,
  quartersAsOf,
  type RowParams,
  sensitivityGrid,
  type Tenor,
} from '../../src/engine/data/fundamentals/index.ts'
import { companyFundamentals } from '../../src/engine/data/synth/fundamentals.ts'
import type { Company } from '../../src/engine/data/synth/universe.ts'
import { Rng } from '../../src/engine/model/random.ts'
import { dayFromParts, isoFromDay, monthOf } from '../../src/platform/dates.ts'
import * as fc from '../helpers/fc.ts'
import {
  close,
  constantContext,
  GEN_DURATION,
  GEN_INSTANT,
  type GenCompany,
  type GenOptions,
  generateFilings,
  varyingContext,
} from './fundamentals-helpers.ts'

const genOptions: fc.Arbitrary<GenOptions> = fc
  .record({
    seed: fc.integer({ min: 1, max: 2 ** 31 - 1 }),
    fyEndMonth: fc.integer({ min: 1, max: 12 }),
    fullYears: fc.integer({ min: 0, max: 4 }),
    extraQuarters: fc.integer({ min: 0, max: 3 }),
    comparatives: fc.boolean(),
    incomeYtd: fc.boolean(),
    restatements: fc.integer({ min: 0, max: 4 }),
    guards: fc.boolean(),
    revenueSwitchYear: fc.option(fc.integer({ min: 2012, max: 2016 }), { nil: null }),
    interestSwitchYear: fc.option(fc.integer({ min: 2012, max: 2016 }), { nil: null }),
  })
  .filter((o) => o.fullYears * 4 + o.extraQuarters >= 1)

const generate = (o: GenOptions) => generateFilings(o, new Rng(o.seed))

/** The as-of dates worth looking at: each filing date, the day before, and after everything. */
function asOfDates(g: GenCompany): number[] {
  const s = new Set<number>([g.lastFiled + 1, g.quarters[0].filed - 1])
  for (const q of g.quarters) s.add(q.filed).add(q.filed - 1)
  for (const r of g.restatements) s.add(r.filed).add(r.filed - 1)
  return [...s].sort((a, b) => a - b)
}

const PARAMS: RowParams = { erp: 0.05, taxRate: 0.21, rfTenor: '3m' }

const NUMERIC_ROW_FIELDS = [
  'roe_ttm',
  'roa_ttm',
  'leverage_ratio',
  'fcf_margin',
  'payout_ratio',
  'retention_ratio',
  'buyback_ratio',
  'total_payout_ratio',
  'sustainable_growth',
  'equity_bridge_residual',
  'beta_market',
  'beta_sector',
  'beta_subsector',
  'rf_rate',
  'cost_of_equity',
  'cost_of_debt',
  'wacc',
  'economic_profit',
] as const

test('quarterisation recovers the generated quarters at every as-of date (3-month, YTD, FY-only Q4, restatements)', () => {
  fc.assert(
    fc.property(genOptions, (o) => {
      const g = generate(o)
      const c = parseCompanyFacts(g.doc)
      assert.equal(c.quarters.length, g.quarters.length)
      for (const asOf of asOfDates(g)) {
        const visible = quartersAsOf(c, asOf)
        const expected = g.quarters.flatMap((q, i) => (q.filed <= asOf ? [i] : []))
        assert.equal(visible.length, expected.length, `visible at ${isoFromDay(asOf)}`)
        visible.forEach((v, j) => {
          const qi = expected[j]
          const q = g.quarters[qi]
          assert.equal(v.periodEnd, q.end)
          assert.equal(v.fq, q.fq)
          assert.equal(v.fy, q.fy)
          assert.equal(v.filedDate, q.filed)
          assert.equal(v.filedDateSource, 'exact')
          for (const field of [...GEN_DURATION, ...GEN_INSTANT])
            assert.equal(v.values[field], g.truth(qi, field, asOf), `${field} of quarter ${qi} at ${asOf}`)
          assert.ok(Number.isNaN(v.values.stock_issued))
        })
      }
    }),
    { numRuns: 150 },
  )
})

/** The row ratios computed naively from the generator's truth. */
function naiveRow(g: GenCompany, visible: number[], j: number, beta: number, rf: number) {
  const at = (qi: number, f: Parameters<GenCompany['truth']>[1]) => g.truth(qi, f, Number.POSITIVE_INFINITY)
  const qi = visible[j]
  const sum = (f: Parameters<GenCompany['truth']>[1]) =>
    j < 3 ? null : at(visible[j - 3], f) + at(visible[j - 2], f) + at(visible[j - 1], f) + at(qi, f)
  const ni = sum('net_income')
  const avgEq = j < 3 ? null : (sum('total_equity') as number) / 4
  const avgAs = j < 3 ? null : (sum('total_assets') as number) / 4
  const rev = sum('revenue')
  const cfo = sum('operating_cash_flow')
  const capex = sum('capex')
  const div = sum('dividends')
  const rep = sum('repurchases')
  const interest = sum('interest_expense')
  const eq = at(qi, 'total_equity')
  const debt = at(qi, 'total_debt')
  const roe = ni !== null && avgEq !== null && avgEq > 0 ? ni / avgEq : null
  const positiveNi = ni !== null && ni > 0 ? ni : null
  const payout = positiveNi !== null && div !== null ? div / positiveNi : null
  const coe = rf + beta * PARAMS.erp
  const cod = interest !== null && debt > 0 ? interest / debt : null
  let wacc: number | null = null
  if (eq > 0) {
    if (debt === 0) wacc = coe
    else if (cod !== null) wacc = (eq / (debt + eq)) * coe + (debt / (debt + eq)) * cod * (1 - PARAMS.taxRate)
  }
  const prev = j > 0 ? visible[j - 1] : null
  const residual =
    prev === null
      ? null
      : eq - (at(prev, 'total_equity') + at(qi, 'net_income') - at(qi, 'dividends') - at(qi, 'repurchases'))
  return {
    roe_ttm: roe,
    roa_ttm: ni !== null && avgAs !== null && avgAs > 0 ? ni / avgAs : null,
    leverage_ratio: eq > 0 ? debt / eq : null,
    fcf_margin: cfo !== null && capex !== null && rev !== null && rev > 0 ? (cfo - capex) / rev : null,
    payout_ratio: payout,
    retention_ratio: payout === null ? null : 1 - payout,
    buyback_ratio: positiveNi !== null && rep !== null ? rep / positiveNi : null,
    total_payout_ratio: positiveNi !== null && div !== null && rep !== null ? (div + rep) / positiveNi : null,
    sustainable_growth: payout !== null && roe !== null ? (1 - payout) * roe : null,
    equity_bridge_residual: residual,
    cost_of_equity: coe,
    cost_of_debt: cod,
    wacc,
    economic_profit: roe !== null && eq > 0 ? (roe - coe) * eq : null,
  }
}

test('TTM ratios, guards and cost of capital equal the naive formulas on the generated truth', () => {
  fc.assert(
    fc.property(genOptions, fc.double({ min: -1, max: 3, noNaN: true }), (o, beta) => {
      const g = generate(o)
      const visible = g.quarters.map((_, i) => i)
      const rows = fundamentalsRows(
        quartersAsOf(parseCompanyFacts(g.doc), g.lastFiled + 1),
        constantContext(beta),
        PARAMS,
      )
      assert.equal(rows.length, g.quarters.length)
      rows.forEach((row, j) => {
        const want = naiveRow(g, visible, j, beta, 0.04)
        for (const [k, v] of Object.entries(want))
          close(row[k as keyof typeof want], v, `row ${j} ${k}`, 1e-9)
        if (j < 3) {
          assert.equal(row.roe_ttm, null, 'fewer than four quarters')
          assert.equal(row.fcf_margin, null)
          assert.equal(row.cost_of_debt, null)
        }
        assert.deepEqual(row.equity_bridge_inputs, j === 0 ? [] : ['net_income', 'dividends', 'repurchases'])
        for (const f of NUMERIC_ROW_FIELDS) {
          const x = row[f]
          assert.ok(x === null || Number.isFinite(x), `${f} = ${x}`)
        }
        assert.equal(row.gross_margin, null)
        assert.equal(row.market_cap, null)
      })
    }),
    { numRuns: 150 },
  )
})

test('guards give null, never a clipped or infinite value', () => {
  // Hand-made quarters: equity ≤ 0, net income ≤ 0, debt 0 and zero revenue.
  const o: GenOptions = {
    seed: 7,
    fyEndMonth: 12,
    fullYears: 2,
    extraQuarters: 0,
    comparatives: false,
    incomeYtd: false,
    restatements: 0,
    guards: false,
    revenueSwitchYear: null,
    interestSwitchYear: null,
  }
  const g = generateFilings(o, new Rng(o.seed), (base) => {
    base.total_equity = -1_000_000
    base.net_income = 0
    base.total_debt = 0
    base.revenue = 0
  })
  const rows = fundamentalsRows(
    quartersAsOf(parseCompanyFacts(g.doc), g.lastFiled),
    constantContext(1),
    PARAMS,
  )
  const last = rows.at(-1) as FundamentalsRow
  for (const f of [
    'roe_ttm',
    'leverage_ratio',
    'fcf_margin',
    'payout_ratio',
    'retention_ratio',
    'buyback_ratio',
    'total_payout_ratio',
    'sustainable_growth',
    'cost_of_debt',
    'wacc',
    'economic_profit',
  ] as const)
    assert.equal(last[f], null, f)
  close(last.cost_of_equity, 0.04 + 0.05, 'cost of equity is still computed')
})

test('point in time: rows at as_of never depend on anything filed after it', () => {
  fc.assert(
    fc.property(genOptions, fc.integer({ min: 0, max: 1000 }), (o, pick) => {
      const g = generate(o)
      const dates = asOfDates(g)
      const asOf = dates[pick % dates.length]
      const ctx = varyingContext()
      const full = fundamentalsRows(quartersAsOf(parseCompanyFacts(g.doc), asOf), ctx, PARAMS)
      const usGaap = Object.fromEntries(
        Object.entries(g.doc.facts['us-gaap']).map(([k, v]) => [
          k,
          { units: { USD: v.units.USD.filter((f) => f.filed <= isoFromDay(asOf)) } },
        ]),
      )
      const past = { ...g.doc, facts: { 'us-gaap': usGaap } }
      const cut = fundamentalsRows(quartersAsOf(parseCompanyFacts(past), asOf), ctx, PARAMS)
      assert.deepEqual(full, cut)
    }),
    { numRuns: 200 },
  )
})

test('the sensitivity grid equals the row formulas cell by cell', () => {
  const tenors: Tenor[] = ['3m', '1y', '2y', '5y', '10y', '30y']
  fc.assert(
    fc.property(
      genOptions,
      fc.array(fc.double({ min: 0, max: 0.5, noNaN: true }), { minLength: 1, maxLength: 5 }),
      fc.subarray(tenors, { minLength: 1 }),
      fc.double({ min: 0, max: 1, noNaN: true }),
      (o, erps, ts, tax) => {
        const g = generate(o)
        const ctx = varyingContext()
        const visible = quartersAsOf(parseCompanyFacts(g.doc), g.lastFiled)
        const grid = sensitivityGrid(visible, ctx, tax, erps, ts)
        if (visible.length === 0) {
          assert.equal(grid, null)
          return
        }
        assert.ok(grid)
        assert.equal(grid.period_end_date, isoFromDay(visible[visible.length - 1].periodEnd))
        assert.deepEqual(grid.rf_tenor_values, ts)
        for (let i = 0; i < erps.length; i++)
          for (let j = 0; j < ts.length; j++) {
            const row = fundamentalsRows(visible, ctx, { erp: erps[i], taxRate: tax, rfTenor: ts[j] }).at(-1)
            assert.ok(row)
            assert.deepEqual(grid.cells[i][j], {
              cost_of_equity: row.cost_of_equity,
              wacc: row.wacc,
              economic_profit: row.economic_profit,
            })
          }
      },
    ),
    { numRuns: 100 },
  )
  assert.equal(sensitivityGrid([], varyingContext(), 0.21, [0.05], ['3m']), null)
})

test('a concept switch inside a fiscal year leaves the year’s derived Q4 unknown rather than mixing concepts', () => {
  const g = generate({
    seed: 11,
    fyEndMonth: 6,
    fullYears: 3,
    extraQuarters: 0,
    comparatives: false,
    incomeYtd: false,
    restatements: 0,
    guards: false,
    revenueSwitchYear: null,
    interestSwitchYear: null,
  })
  // Re-tag revenue from February 2013 on: fiscal 2013 (July 2012 – June 2013) has Q1, Q2 under
  // Revenues and Q3 and the FY figure under the new concept.
  const facts = g.doc.facts['us-gaap']
  const moved = facts.Revenues.units.USD.filter((f) => f.end >= '2013-02-01')
  facts.Revenues.units.USD = facts.Revenues.units.USD.filter((f) => f.end < '2013-02-01')
  facts.RevenueFromContractWithCustomerExcludingAssessedTax = { units: { USD: moved } }
  const visible = quartersAsOf(parseCompanyFacts(g.doc), g.lastFiled + 1)
  const byEnd = (qi: number) => visible.find((v) => v.periodEnd === g.quarters[qi].end)
  const late = Number.POSITIVE_INFINITY
  // fiscal 2013 = quarters 4..7; Q3 (index 6) is a 3-month fact under the new concept
  assert.equal(byEnd(6)?.values.revenue, g.truth(6, 'revenue', late))
  assert.ok(Number.isNaN(byEnd(7)?.values.revenue ?? 0), 'Q4 2013 needs Q1, Q2 under the FY concept')
  // the next fiscal year is whole again under the new concept
  assert.equal(byEnd(11)?.values.revenue, g.truth(11, 'revenue', late))
  assert.equal(byEnd(6)?.facts.revenue?.[0].concept, 'RevenueFromContractWithCustomerExcludingAssessedTax')
  assert.equal(byEnd(5)?.facts.revenue?.[0].concept, 'Revenues')
})

test('malformed documents throw a plain Error with a clear message', () => {
  assert.throws(() => parseCompanyFacts(null), /not a JSON object/)
  assert.throws(() => parseCompanyFacts({ cik: 'x', facts: {} }), /cik/)
  assert.throws(() => parseCompanyFacts({ cik: 1 }), /facts must be an object/)
  const bad = (fact: unknown) => ({
    cik: 1,
    facts: { 'us-gaap': { NetIncomeLoss: { units: { USD: [fact] } } } },
  })
  assert.throws(
    () => parseCompanyFacts(bad({ end: '2020-13-01', val: 1, filed: '2021-01-01' })),
    /end must be an ISO date/,
  )
  assert.throws(
    () =>
      parseCompanyFacts(bad({ end: '2020-12-31', val: 'x', filed: '2021-01-01', accn: 'a', form: '10-Q' })),
    /val must be a finite number/,
  )
  const ok = parseCompanyFacts({ cik: '0000000042', entityName: 'X', facts: {} })
  assert.deepEqual(ok, { cik: 42, name: 'X', quarters: [] })
})

test('facts without a filing date: visible from period end + 45 days, filed_date_source approx', () => {
  const o: GenOptions = {
    seed: 11,
    fyEndMonth: 12,
    fullYears: 2,
    extraQuarters: 1,
    comparatives: false,
    incomeYtd: false,
    restatements: 0,
    guards: false,
    revenueSwitchYear: null,
    interestSwitchYear: null,
  }
  const g = generate(o)
  const strip = (v: unknown): unknown =>
    Array.isArray(v)
      ? v.map(strip)
      : v !== null && typeof v === 'object'
        ? Object.fromEntries(
            Object.entries(v)
              .filter(([k]) => k !== 'filed')
              .map(([k, x]) => [k, strip(x)]),
          )
        : v
  const c = parseCompanyFacts(strip(g.doc))
  const late = g.lastFiled + 400
  const all = quartersAsOf(c, late)
  assert.equal(all.length, g.quarters.length)
  all.forEach((v, qi) => {
    assert.equal(v.filedDateSource, 'approx')
    assert.equal(v.filedDate, v.periodEnd + 45)
    for (const field of [...GEN_DURATION, ...GEN_INSTANT])
      assert.equal(v.values[field], g.truth(qi, field, late), `${field} of quarter ${qi}`)
    // Not visible the day before period end + 45, visible on it.
    assert.ok(!quartersAsOf(c, v.periodEnd + 44).some((x) => x.periodEnd === v.periodEnd))
    assert.ok(quartersAsOf(c, v.periodEnd + 45).some((x) => x.periodEnd === v.periodEnd))
  })
  const row = fundamentalsRows(all, constantContext(1), PARAMS).at(-1)
  assert.equal(row?.filed_date_source, 'approx')
})

test("the synthetic market's companyfacts documents parse into sane rows", () => {
  const calendar = nyseTradingDays(dayFromParts(2015, 1, 2), dayFromParts(2024, 12, 31))
  const T = calendar.length
  for (let i = 0; i < 12; i++) {
    const rng = new Rng(1000 + i)
    const fyEnd = [12, 3, 6, 9, 1, 10][i % 6]
    const company = syntheticCompany(i, fyEnd, T)
    const file = companyFundamentals(rng, company, {
      calendar,
      close: new Float64Array(T).fill(50 + i),
      shares: new Float64Array(T).fill(1e8),
      bill3m: new Float64Array(T).fill(0.02),
      endDay: calendar[T - 1],
    })
    const doc = JSON.parse(gunzipSync(file.gzipped).toString('utf8'))
    const c = parseCompanyFacts(doc)
    assert.equal(c.cik, company.cik)
    assert.ok(c.quarters.length >= 30, `${c.quarters.length} quarters`)
    for (const q of c.quarters) if (q.fq === 4) assert.equal(monthOf(q.periodEnd), fyEnd)
    const visible = quartersAsOf(c, calendar[T - 1])
    const rows = fundamentalsRows(visible, constantContext(1), PARAMS)
    // From the second fiscal year on (the first is partial), every quarter is known, except a
    // Q4 across a mid-year revenue / interest concept switch (documented: not mixed).
    const settled = visible.slice(5)
    for (const v of settled) {
      for (const f of [
        'net_income',
        'operating_cash_flow',
        'capex',
        'total_equity',
        'total_assets',
        'total_debt',
      ] as const)
        assert.ok(Number.isFinite(v.values[f]), `${f} at ${isoFromDay(v.periodEnd)}`)
    }
    for (const r of rows.slice(8)) {
      assert.ok(r.roa_ttm !== null && Math.abs(r.roa_ttm) < 1, `roa ${r.roa_ttm} at ${r.period_end_date}`)
      assert.ok(r.leverage_ratio === null || r.leverage_ratio >= 0)
      assert.equal(r.filed_date_source, 'exact')
      assert.ok((r.filed_date as string) > r.period_end_date)
    }
    // each fiscal year's net income quarters add up to its 10-K figure
    const ni = doc.facts['us-gaap'].NetIncomeLoss.units.USD as {
      start: string
      end: string
      val: number
      form: string
    }[]
    for (const fy of ni.filter((f) => f.form === '10-K')) {
      const qs = c.quarters.filter(
        (q) => isoFromDay(q.periodEnd) > fy.start && isoFromDay(q.periodEnd) <= fy.end,
      )
      if (qs.length !== 4) continue
      const total = qs.reduce((s, q) => s + (q.versions.at(-1)?.values.net_income ?? Number.NaN), 0)
      if (Number.isFinite(total)) close(total, fy.val, `net income of the year ending ${fy.end}`)
    }
  }
})

function syntheticCompany(i: number, fyEnd: number, T: number): Company {
  return {
    symbol: `SYN${i}`,
    name: `Synthetic ${i}`,
    cik: 900000 + i,
    industry: 0,
    sector: 0,
    listIdx: 0,
    delistIdx: T - 1,
    tickers: [[`SYN${i}`, 0]],
    halts: new Set(),
    betaM: 1,
    betaS: 0,
    betaU: 0,
    idioSd: 0.01,
    drift: 0,
    cap0: 5e9,
    price0: 50,
    divYield: i % 3 === 0 ? 0 : 0.02,
    turnover: 0.01,
    earningsPhase: 0,
    fyEnd,
  }
}

test('fundamentalsRows(…, last) equals the tail of the full rows', () => {
  fc.assert(
    fc.property(genOptions, fc.integer({ min: 0, max: 20 }), (o, last) => {
      const g = generate(o)
      const visible = quartersAsOf(parseCompanyFacts(g.doc), g.lastFiled)
      const ctx = varyingContext()
      const all = fundamentalsRows(visible, ctx, PARAMS)
      assert.deepEqual(fundamentalsRows(visible, ctx, PARAMS, last), last === 0 ? [] : all.slice(-last))
    }),
    { numRuns: 50 },
  )
})

test('ifrs-full filers (here in EUR) go through the same quarterisation', () => {
  const o: GenOptions = {
    seed: 3,
    fyEndMonth: 3,
    fullYears: 2,
    extraQuarters: 2,
    comparatives: true,
    incomeYtd: true,
    restatements: 2,
    guards: false,
    revenueSwitchYear: null,
    interestSwitchYear: null,
  }
  const g = generate(o)
  const IFRS: Record<string, string> = {
    Revenues: 'Revenue',
    NetIncomeLoss: 'ProfitLossAttributableToOwnersOfParent',
    NetCashProvidedByUsedInOperatingActivities: 'CashFlowsFromUsedInOperatingActivities',
    PaymentsToAcquirePropertyPlantAndEquipment:
      'PurchaseOfPropertyPlantAndEquipmentClassifiedAsInvestingActivities',
    PaymentsOfDividends: 'DividendsPaidClassifiedAsFinancingActivities',
    PaymentsForRepurchaseOfCommonStock: 'PaymentsToAcquireOrRedeemEntitysShares',
    InterestExpense: 'InterestExpense',
    StockholdersEquity: 'EquityAttributableToOwnersOfParent',
    Assets: 'Assets',
    LongTermDebt: 'Borrowings',
  }
  const ifrs = Object.fromEntries(
    Object.entries(g.doc.facts['us-gaap']).map(([k, v]) => [IFRS[k], { units: { EUR: v.units.USD } }]),
  )
  const c = parseCompanyFacts({ cik: 77, entityName: 'IFRS Co', facts: { 'ifrs-full': ifrs } })
  const visible = quartersAsOf(c, g.lastFiled)
  assert.equal(visible.length, g.quarters.length)
  visible.forEach((v, qi) => {
    for (const field of [...GEN_DURATION, ...GEN_INSTANT])
      assert.equal(v.values[field], g.truth(qi, field, g.lastFiled), `${field} of quarter ${qi}`)
    assert.equal(v.facts.net_income?.[0].source, 'ifrs')
    assert.equal(v.facts.net_income?.[0].unit, 'EUR')
  })
  const row = fundamentalsRows(visible, constantContext(1), PARAMS).at(-1)
  assert.equal(row?.sec_facts.ProfitLossAttributableToOwnersOfParent.source, 'ifrs')
})
