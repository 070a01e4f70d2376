import assert from 'node:assert/strict'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { gunzipSync } from 'node:zlib'
import { parse } from 'csv-parse/sync'
import { readDataset } from '../../src/engine/data/dataset-reader.ts'
import type { Dataset } from '../../src/engine/data/format.ts'
import {
  fundamentalsRows,
  parseCompanyFacts,
  quartersAsOf,
} from '../../src/engine/data/fundamentals/index.ts'
import type { ModelStore } from '../../src/engine/model-store/reader.ts'
import { betaReader } from '../../src/services/analytics/fundamentals.ts'
import { fixtureStores } from '../helpers/fixture-store.ts'
import { startTestApp, type TestApp } from '../helpers/test-app.ts'

/**
 * GET /fundamentals/{ticker}: the served rows are the fundamentals core applied to the dataset's
 * own filings (parsed here from the dataset, not from the store's digest), with the betas read
 * straight from the store at the last trading day ≤ period end and the rates straight from the
 * dataset; cost of equity and the grid cells recomputed here; point-in-time visibility, options,
 * free 400/404, the empty answer for a ticker without filings, price, cache and the CSV form.
 */

interface Row {
  period_end_date: string
  filed_date: string | null
  filed_date_source: string | null
  beta_market: number | null
  beta_sector: number | null
  beta_subsector: number | null
  beta_source: string | null
  rf_rate: number | null
  cost_of_equity: number | null
  roe_ttm: number | null
  sec_facts: Record<string, unknown>
  [k: string]: unknown
}
interface Body {
  ticker: string
  as_of: string
  periods_returned: number
  rows: Row[]
  market_cap: { value: number | null; basis: string; note: string }
  sensitivity_grid?: {
    period_end_date: string
    erp_values: number[]
    rf_tenor_values: string[]
    tax_rate: number
    cells: { cost_of_equity: number | null; wacc: number | null; economic_profit: number | null }[][]
  } | null
  disclosures: Record<string, unknown>
  _agent: { cost_usd: number; cache_status: string }
}

const day = (iso: string) => Date.parse(`${iso}T00:00:00Z`) / 86_400_000
const iso = (d: number) => new Date(d * 86_400_000).toISOString().slice(0, 10)

describe('GET /fundamentals/{ticker}', () => {
  let t: TestApp
  let key: string
  let store: ModelStore
  let ds: Dataset
  /** Listed stocks with a CIK and filings in the dataset. */
  let withFilings: { ticker: string; index: number; cik: number }[]

  before(async () => {
    t = await startTestApp()
    key = await t.key(await t.account(5))
    store = t.ctx.models.store('live')
    ds = (await readDataset(join((await fixtureStores()).root, 'live-dataset'), { fundamentals: true }))
      .dataset
    const ciks = new Set(ds.fundamentals.map((f) => f.cik))
    withFilings = store.symbols.flatMap((m, index) => {
      const ticker = m.tickers.find((w) => w.to === null)?.ticker
      return m.asset_type === 'stock' && ticker && m.cik !== null && ciks.has(m.cik)
        ? [{ ticker, index, cik: m.cik }]
        : []
    })
  })
  after(() => t?.close())

  const get = async (ticker: string, query: Record<string, string> = {}, k = key) =>
    t.client.call('getFundamentals', { key: k, params: { ticker }, query } as never)

  /** The store's betas at the last calendar day ≤ d, read directly. */
  async function betasAt(i: number, d: number) {
    let tt = -1
    for (let k = 0; k < store.calendar.length; k++) if (store.calendar[k] <= d) tt = k
    const h = await store.history(i, ['l1_mkt_beta', 'l2_sec_beta', 'l3_sub_beta'], tt, tt + 1)
    const n = (x: number) => (Number.isNaN(x) ? null : x)
    return {
      t: tt,
      market: n(h.l1_mkt_beta[0] as number),
      sector: n(h.l2_sec_beta[0] as number),
      subsector: n(h.l3_sub_beta[0] as number),
    }
  }

  /** The dataset's rate of `tenor` at its last observation ≤ d, read directly. */
  function rateAt(tenor: string, d: number): number | null {
    const r = ds.rates
    const k = r ? r.tenors.indexOf(tenor) : -1
    if (!r || k < 0) return null
    let v: number | null = null
    for (let j = 0; j < r.days.length; j++)
      if (r.days[j] <= d && !Number.isNaN(r.values[k][j])) v = r.values[k][j]
    return v
  }

  test('rows: the dataset filings through the fundamentals core, with the store betas and the dataset rates', async () => {
    assert.ok(withFilings.length >= 10, `${withFilings.length} stocks with filings`)
    assert.ok(ds.rates, 'the synthetic dataset has rates')
    let compared = 0
    for (const s of withFilings.slice(0, 8)) {
      const b = (await get(s.ticker, { periods: '12' })).ok() as unknown as Body
      assert.equal(b.as_of, store.dataAsOf)
      assert.ok(b.rows.length > 0 && b.rows.length <= 12)
      assert.equal(b.periods_returned, b.rows.length)
      const f = ds.fundamentals.find((x) => x.cik === s.cik)
      const company = parseCompanyFacts(JSON.parse(gunzipSync(f?.gzipped as Uint8Array).toString('utf8')))
      const visible = quartersAsOf(company, day(store.dataAsOf))
      const ctx = {
        betas: () => ({ market: null, sector: null, subsector: null, source: null }),
        rate: () => null,
      }
      // Every number but the model-dependent ones equals the core on the raw filings.
      const want = fundamentalsRows(visible, ctx, { erp: 0.05, taxRate: 0.21, rfTenor: '3m' }).slice(-12)
      assert.deepEqual(
        b.rows.map((r) => [r.period_end_date, r.filed_date, r.roe_ttm, r.leverage_ratio, r.fcf_margin]),
        want.map((r) => [r.period_end_date, r.filed_date, r.roe_ttm, r.leverage_ratio, r.fcf_margin]),
      )
      for (const [k, row] of b.rows.entries()) {
        assert.deepEqual(row.sec_facts, want[k]?.sec_facts)
        const d = day(row.period_end_date)
        const beta = await betasAt(s.index, d)
        assert.equal(row.beta_market, beta.market, `${s.ticker} ${row.period_end_date} beta`)
        assert.equal(row.beta_sector, beta.sector)
        assert.equal(row.beta_subsector, beta.subsector)
        if (beta.market === null) assert.equal(row.beta_source, 'none')
        else assert.match(row.beta_source ?? '', /^(in|out-of)-universe$/)
        const rf = rateAt('3m', d)
        assert.equal(row.rf_rate, rf)
        const coe = rf === null || beta.market === null ? null : rf + beta.market * 0.05
        assert.equal(row.cost_of_equity, coe)
        assert.equal(row.market_cap, null)
        compared++
      }
      // Point in time: the newest row is not visible one day before its filing, and is on it.
      const newest = b.rows[b.rows.length - 1] as Row
      const filed = newest.filed_date as string
      const before1 = (
        await get(s.ticker, { as_of: iso(day(filed) - 1), periods: '40' })
      ).ok() as unknown as Body
      assert.ok(!before1.rows.some((r) => r.period_end_date === newest.period_end_date))
      const on = (await get(s.ticker, { as_of: filed, periods: '40' })).ok() as unknown as Body
      assert.equal(on.rows[on.rows.length - 1]?.period_end_date, newest.period_end_date)
      assert.equal(on.as_of, filed)
    }
    assert.ok(compared >= 40)
  })

  test('beta_source: post-delisting after the last trade (null, never carried forward), none before listing', async () => {
    const T = store.calendar.length
    let checked = 0
    for (const [i, m] of store.symbols.entries()) {
      if (m.asset_type !== 'stock') continue
      const life = await store.listedLife(i)
      if (life.last < 0 || life.last >= T - 1) continue
      const lastDay = store.calendar[life.last]
      const beforeListing = store.calendar[life.first] - 1
      const betas = await betaReader(store, i, [lastDay, lastDay + 1, lastDay + 200, beforeListing])
      const onLast = await betasAt(i, lastDay)
      assert.deepEqual(betas(lastDay), {
        market: onLast.market,
        sector: onLast.sector,
        subsector: onLast.subsector,
        source: onLast.market === null ? 'none' : betas(lastDay).source,
      })
      for (const after of [lastDay + 1, lastDay + 200])
        assert.deepEqual(betas(after), {
          market: null,
          sector: null,
          subsector: null,
          source: 'post-delisting',
        })
      assert.deepEqual(betas(beforeListing), {
        market: null,
        sector: null,
        subsector: null,
        source: 'none',
      })
      checked++
    }
    assert.ok(checked > 0, 'the fixture has delisted stocks')
  })

  test('periods, erp, tax_rate and rf_tenor; the grid equals the row formulas cell by cell', async () => {
    const s = withFilings[0] as (typeof withFilings)[number]
    const all = (await get(s.ticker, { periods: '40' })).ok() as unknown as Body
    const two = (await get(s.ticker, { periods: '2' })).ok() as unknown as Body
    assert.deepEqual(two.rows, all.rows.slice(-2))
    const q = {
      erp: '0.07',
      tax_rate: '0.3',
      rf_tenor: '10y',
      grid: 'true',
      erp_grid: '0.02,0.06',
      rf_tenor_grid: '1y,30y',
    }
    const b = (await get(s.ticker, q)).ok() as unknown as Body
    assert.deepEqual(
      { erp: b.disclosures.erp, tax_rate: b.disclosures.tax_rate, rf_tenor: b.disclosures.rf_tenor },
      { erp: 0.07, tax_rate: 0.3, rf_tenor: '10y' },
    )
    const last = b.rows[b.rows.length - 1] as Row
    const beta = await betasAt(s.index, day(last.period_end_date))
    const rf10 = rateAt('10y', day(last.period_end_date))
    assert.equal(last.rf_rate, rf10)
    if (rf10 !== null && beta.market !== null) assert.equal(last.cost_of_equity, rf10 + beta.market * 0.07)
    const g = b.sensitivity_grid
    assert.ok(g)
    assert.equal(g.period_end_date, last.period_end_date)
    assert.deepEqual(g.erp_values, [0.02, 0.06])
    assert.deepEqual(g.rf_tenor_values, ['1y', '30y'])
    assert.equal(g.tax_rate, 0.3)
    for (const [i, erp] of g.erp_values.entries()) {
      for (const [j, tenor] of g.rf_tenor_values.entries()) {
        const rf = rateAt(tenor, day(last.period_end_date))
        const want = rf === null || beta.market === null ? null : rf + beta.market * erp
        assert.equal(g.cells[i]?.[j]?.cost_of_equity, want, `cell ${i},${j}`)
      }
    }
    // The grid cell at the row's own (erp, tenor) is the row.
    const same = (
      await get(s.ticker, { erp: '0.06', rf_tenor: '30y', tax_rate: '0.3' })
    ).ok() as unknown as Body
    const row = same.rows[same.rows.length - 1] as Row
    assert.deepEqual(g.cells[1]?.[1], {
      cost_of_equity: row.cost_of_equity,
      wacc: row.wacc,
      economic_profit: row.economic_profit,
    })
    // No period visible: the grid is null with a note.
    const early = (await get(s.ticker, { as_of: '1990-01-02', grid: 'true' })).ok() as unknown as Body
    assert.deepEqual(early.rows, [])
    assert.equal(early.sensitivity_grid, null)
    assert.match(String(early.disclosures.grid_note), /no period visible/)
  })

  test('a ticker without filings answers 200 with no rows and says why; market_cap is the current snapshot', async () => {
    const etf = (await get('XLK')).ok() as unknown as Body
    assert.deepEqual(etf.rows, [])
    assert.equal(etf.periods_returned, 0)
    assert.match(String(etf.disclosures.note), /no SEC CIK/)
    const s = withFilings[1] as (typeof withFilings)[number]
    const b = (await get(s.ticker)).ok() as unknown as Body
    const { values } = await store.latest(s.index, ['market_cap'])
    assert.equal(b.market_cap.value, values.market_cap)
    assert.match(b.market_cap.note, /not point in time/)
  })

  test('bad options are free 400s naming the problem; an unknown ticker is a free 404 with suggestions', async () => {
    const k = await t.key(await t.account(1))
    const s = withFilings[0] as (typeof withFilings)[number]
    for (const [query, pattern] of [
      [{ periods: '0' }, /periods/],
      [{ periods: '41' }, /periods/],
      [{ erp: '0.6' }, /erp/],
      [{ erp: 'abc' }, /erp/],
      [{ tax_rate: '-0.1' }, /tax_rate/],
      [{ rf_tenor: '4m' }, /rf_tenor/],
      [{ erp_grid: '0.05,x' }, /erp_grid/],
      [{ erp_grid: Array(12).fill('0.05').join(',') }, /erp_grid/],
      [{ rf_tenor_grid: '3m,7y' }, /rf_tenor_grid/],
      [{ as_of: '2021-13-01' }, /as_of/],
      [{ grid: 'maybe' }, /grid/],
      [{ color: 'red' }, /color|additional/i],
    ] as [Record<string, string>, RegExp][]) {
      const r = await get(s.ticker, query, k)
      assert.equal(r.status, 400, JSON.stringify(query))
      assert.match(r.text, pattern, JSON.stringify(query))
    }
    const nf = await get('NOPE', {}, k)
    assert.equal(nf.status, 404)
    assert.match(nf.text, /suggestions/)
    const bal = (await t.client.call('getBalance', { key: k })).ok()
    assert.equal(bal.balance_usd, 1, 'errors are free')
  })

  test('0.005 per call, a repeat is a free cache HIT; CSV: the rows as one flat table', async () => {
    const k = await t.key(await t.account(1))
    const s = withFilings[2] as (typeof withFilings)[number]
    const a = (await get(s.ticker, {}, k)).ok() as unknown as Body
    assert.equal(a._agent.cost_usd, 0.005)
    const b = (await get(s.ticker, {}, k)).ok() as unknown as Body
    assert.equal(b._agent.cost_usd, 0)
    assert.equal(b._agent.cache_status, 'HIT')
    const csv = await get(s.ticker, { format: 'csv' }, k)
    assert.equal(csv.status, 200)
    const rows = parse(csv.text, { columns: true }) as Record<string, string>[]
    assert.equal(rows.length, a.rows.length)
    for (const [i, r] of rows.entries()) {
      const j = a.rows[i] as Row
      assert.equal(r.period_end_date, j.period_end_date)
      assert.equal(r.beta_source, j.beta_source ?? '')
      assert.deepEqual(JSON.parse(r.sec_facts as string), j.sec_facts)
      if (j.roe_ttm === null) assert.equal(r.roe_ttm, '')
      else assert.equal(Number(r.roe_ttm), j.roe_ttm)
    }
    const bal = (await t.client.call('getBalance', { key: k })).ok()
    // The CSV of an answer already paid for on this data_as_of is free (pay once, any format).
    assert.equal(csv.headers['x-api-cost-usd'], '0')
    assert.equal(Math.round(bal.balance_usd * 1e6), Math.round((1 - 0.005) * 1e6))
  })
})
