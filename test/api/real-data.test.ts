import assert from 'node:assert/strict'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { METRICS_V3_FIELDS } from '../../src/contract/ops/metrics.ts'
import { buildStore } from '../../src/engine/build/index.ts'
import { writeDataset } from '../../src/engine/data/dataset-writer.ts'
import type { ModelStore } from '../../src/engine/model-store/reader.ts'
import { debits, rawCall, readHyparquet } from '../helpers/history-checks.ts'
import { importRealDataset, realDataPresent } from '../helpers/real-data.ts'
import { startTestApp, type TestApp } from '../helpers/test-app.ts'

/**
 * The HTTP API over a model store built from real prices (../shared/data/real: 216 tickers,
 * 2019-01-02 → 2026-07-31, GICS classification). The synthetic suites pin shapes and formats;
 * this one checks that real names, real gaps and real industries come through the API equal to
 * the store, with the identities of the methodology, and known economics. Skips without the data.
 */

const nullable = (v: number | undefined) => (v === undefined || Number.isNaN(v) ? null : v)

function listedStocks(store: ModelStore): { ticker: string; index: number }[] {
  return store.symbols.flatMap((m, index) =>
    m.asset_type === 'stock' ? m.tickers.filter((w) => !w.to).map((w) => ({ ticker: w.ticker, index })) : [],
  )
}

describe('the API on real prices (../shared/data/real)', {
  skip: realDataPresent ? false : 'shared/data/real is absent',
}, () => {
  let work: string
  let t: TestApp
  let store: ModelStore
  let account: string
  let key: string
  before(async () => {
    work = await mkdtemp(join(tmpdir(), 'erm3-real-api-'))
    const ds = await importRealDataset(join(work, 'unused'))
    await writeDataset(ds, join(work, 'dataset'))
    await buildStore({ dataset: join(work, 'dataset'), store: join(work, 'store') })
    t = await startTestApp({ liveStore: join(work, 'store') })
    store = t.ctx.models.store('live')
    account = await t.account(100)
    key = await t.key(account, { tier: 'premium' })
  })
  after(async () => {
    await t?.close()
    if (work) await rm(work, { recursive: true, force: true })
  })

  test('/metrics for every real stock: 200, every MetricsV3 field equal to the store, the ERs of each level summing to 1, billed 0.001 each', async () => {
    const stocks = listedStocks(store)
    assert.ok(stocks.length > 140, `${stocks.length} listed stocks`)
    const before = (await t.ctx.accounts.balance(account)).balanceMicros
    let full = 0
    for (const s of stocks) {
      const body = (await t.client.call('getMetrics', { key, params: { ticker: s.ticker } })).ok()
      assert.equal(body.ticker, s.ticker)
      const { values } = await store.latest(s.index, [...METRICS_V3_FIELDS])
      for (const f of METRICS_V3_FIELDS)
        assert.equal(body.metrics[f], nullable(values[f]), `${s.ticker} ${f}`)
      const m = body.metrics
      const l3 = [m.l3_mkt_er, m.l3_sec_er, m.l3_sub_er, m.l3_res_er]
      if (l3.every((x) => typeof x === 'number')) {
        full++
        const sums = [[m.l1_mkt_er, m.l1_res_er], [m.l2_mkt_er, m.l2_sec_er, m.l2_res_er], l3].map((xs) =>
          (xs as number[]).reduce((a, x) => a + x, 0),
        )
        for (const sum of sums) assert.ok(Math.abs(sum - 1) < 1e-9, `${s.ticker}: ER sum ${sum}`)
      }
    }
    assert.ok(full > 0.9 * stocks.length, `${full} of ${stocks.length} with a full L3 state`)
    const after = (await t.ctx.accounts.balance(account)).balanceMicros
    assert.equal(before - after, stocks.length * 1000)
  })

  test('/decompose on real names: the hedge map is −HR per ETF with shared ETFs summed; DHI hedges with ITB, XOM falls back to XLE', async () => {
    for (const ticker of ['DHI', 'XOM', 'AAPL', 'JPM']) {
      const b = (await t.client.call('decompose', { key, body: { ticker: ticker.toLowerCase() } })).ok()
      const want: Record<string, number> = {}
      for (const layer of Object.values(b.exposure)) {
        if (layer.hedge_etf === null || layer.hr === null) continue
        want[layer.hedge_etf] = (want[layer.hedge_etf] ?? 0) - layer.hr
      }
      assert.deepEqual(Object.keys(b.hedge).sort(), Object.keys(want).sort(), ticker)
      for (const [etf, h] of Object.entries(want))
        assert.ok(Math.abs((b.hedge[etf] ?? Number.NaN) - h) < 1e-15)
    }
    const dhi = (await t.client.call('getMetrics', { key, params: { ticker: 'DHI' } })).ok()
    assert.match(dhi.display.subsector_etf ?? '', /^ITB /)
    const xom = (await t.client.call('getMetrics', { key, params: { ticker: 'XOM' } })).ok()
    assert.equal(xom.meta.sector_etf, 'XLE')
    assert.equal(xom.metrics.l3_sub_hr, 0)
  })

  test('/ticker-returns 15y serves the whole real history (7.5 years), and its Parquet equals its JSON', async () => {
    const json = (await t.client.call('getTickerReturns', { key, query: { ticker: 'MSFT', years: 15 } })).ok()
    assert.equal(json.asset_type, 'stock')
    assert.equal(json.data[0]?.date, '2019-01-02')
    assert.equal(json.data.at(-1)?.date, store.dataAsOf)
    assert.deepEqual(json._metadata.range, ['2019-01-02', store.dataAsOf])
    const pq = await rawCall(t, 'GET', '/ticker-returns?ticker=MSFT&years=15&format=parquet', key)
    assert.equal(pq.status, 200)
    const rows = await readHyparquet(pq.bytes)
    assert.equal(rows.length, json.data.length)
    rows.forEach((r, i) => {
      const j = json.data[i] as Record<string, unknown>
      assert.equal(r.date, Date.parse(`${j.date}T00:00:00Z`))
      for (const [k, v] of Object.entries(j)) if (k !== 'date') assert.equal(r[k], v, `${j.date} ${k}`)
    })
  })

  test('/returns-decomposition on real stocks: gross = l3_cfr + l3_rr on every day with a state', async () => {
    let days = 0
    for (const ticker of ['AAPL', 'DHI', 'XOM', 'NVDA', 'KO']) {
      const b = (await t.client.call('getReturnsDecomposition', { key, query: { ticker, years: 15 } })).ok()
      b.dates.forEach((_, d) => {
        const [g, c, r] = [b.gross?.[d], b.l3_cfr?.[d], b.l3_rr?.[d]]
        if (g == null || c == null || r == null) return
        days++
        assert.ok(Math.abs(g - (c + r)) <= 1e-12, `${ticker} ${b.dates[d]}`)
      })
    }
    assert.ok(days > 5 * 1500, `identity on ${days} days`)
  })

  test('POST /batch/analyze with 100 real tickers: every one ok, hedge ratios equal /metrics, 100 × 0.005 charged once', async () => {
    const tickers = listedStocks(store)
      .slice(0, 100)
      .map((s) => s.ticker)
    const fresh = await t.account(10)
    const k = await t.key(fresh)
    const b = (
      await t.client.call('batchAnalyze', { key: k, body: { tickers, metrics: ['hedge_ratios'] } })
    ).ok()
    for (const ticker of tickers) {
      const r = b.results[ticker] as { status: string; hedge_ratios?: Record<string, number | null> }
      assert.equal(r?.status, 'ok', ticker)
      const m = (await t.client.call('getMetrics', { key, params: { ticker } })).ok().metrics
      assert.equal(r.hedge_ratios?.l3_market, m.l3_mkt_hr, ticker)
      assert.equal(r.hedge_ratios?.l3_subsector, m.l3_sub_hr, ticker)
    }
    assert.deepEqual(
      (await debits(t, fresh)).map(([micros]) => micros),
      [-500_000],
    )
  })

  test('prices only (no shares, no volume): cross-sectional products are not empty, say their basis, and the mc/dv universes are clear 400s', async () => {
    assert.equal(store.manifest.universe_basis, 'all_valid')
    const d = store.calendar.length - 1
    const panel = (
      await t.client.call('getIndustryPanel', { key, query: { level: 'market', min_peers: 1 } })
    ).ok()
    assert.equal(panel.weight_basis, 'equal')
    assert.equal(panel.universe_basis, 'all_valid')
    assert.ok(panel.industries.length > 20, `${panel.industries.length} industries`)
    // Equal weights over every valid stock with a beta (direct computation from the stored fields).
    const groups = new Map<string, number[]>()
    for (const [i, s] of store.symbols.entries()) {
      if (s.asset_type !== 'stock' || !s.industry) continue
      const h = await store.history(i, ['l1_mkt_beta', 'price_close', 'returns_gross'], d, d + 1)
      const [beta, px, r] = [h.l1_mkt_beta[0], h.price_close[0], h.returns_gross[0]]
      if (Number.isNaN(beta) || Number.isNaN(px) || Number.isNaN(r)) continue
      groups.set(s.industry, [...(groups.get(s.industry) ?? []), beta])
    }
    for (const row of panel.industries) {
      const g = groups.get(row.industry_name) ?? []
      assert.equal(row.n_companies, g.length, row.industry_name)
      assert.equal(row.total_log_mcap_weight, g.length)
      const mean = g.reduce((a, b) => a + b, 0) / g.length
      const scale = g.reduce((a, b) => a + Math.abs(b), 0) / g.length
      assert.ok(Math.abs((row.beta_mean as number) - mean) <= 1e-12 * scale, row.industry_name)
    }
    for (const [universe, missing] of [
      ['uni_mc_500', /no market caps/],
      ['uni_dv_500', /no volume/],
    ] as const) {
      const res = await t.client.call('getUniverseMembers', { key, params: { universe } })
      assert.equal(res.status, 400, universe)
      assert.match((res.json as { detail: string }).detail, missing)
    }
    const basket = (
      await t.client.call('residualReversionBasket', {
        key,
        body: { tickers: ['AAPL', 'MSFT', 'XOM', 'DHI'] },
      })
    ).ok()
    assert.equal(basket.universe_basis, 'all_valid')
    assert.ok(
      basket.members.every((m) => m.decile !== null && m.quality_quintile !== null),
      JSON.stringify(basket.members),
    )
  })

  test('rankings on real prices at data_as_of and 320 days back: er_l1 63d over the universe and within sectors equals a direct computation', async () => {
    const T = store.calendar.length
    for (const d of [T - 1, T - 321]) {
      const teo = store.date(d)
      const sectorCodes = await store.crossSection('sector_etf', d)
      const rows: { symbol: string; v: number; scale: number; sector: string | null }[] = []
      for (const [i, s] of store.symbols.entries()) {
        if (s.asset_type !== 'stock') continue
        const h = await store.history(i, ['l1_mkt_er', 'price_close', 'returns_gross'], d - 62, d + 1)
        if (Number.isNaN(h.price_close[62]) || Number.isNaN(h.returns_gross[62])) continue
        const er = Array.from(h.l1_mkt_er)
        if (er.length !== 63 || er.some(Number.isNaN)) continue
        rows.push({
          symbol: s.symbol,
          v: er.reduce((a, b) => a + b, 0) / 63,
          scale: er.reduce((a, b) => a + Math.abs(b), 0) / 63,
          sector: sectorCodes[i] >= 0 ? store.etfs[sectorCodes[i]] : null,
        })
      }
      rows.sort((a, b) => b.v - a.v || (a.symbol < b.symbol ? -1 : 1))
      assert.ok(rows.length > 100, `${rows.length} ranked`)
      const screen = (cohort: 'universe' | 'sector', sector?: string) =>
        t.client.call('rankingsScreen', {
          key,
          body: {
            metric: 'er_l1',
            window: '63d',
            cohort,
            limit: 500,
            teo,
            ...(sector ? { sector_filter: sector } : {}),
          },
        })
      const all = (await screen('universe')).ok()
      assert.equal(all.universe_basis, 'all_valid')
      assert.deepEqual(
        all.rows.map((r) => r.symbol),
        rows.map((r) => r.symbol),
        teo,
      )
      for (const [k, r] of all.rows.entries())
        assert.ok(
          Math.abs(r.value - rows[k].v) <= 1e-12 * rows[k].scale,
          `${r.symbol} ${r.value} vs ${rows[k].v}`,
        )
      for (const sector of ['XLK', 'XLE']) {
        const within = rows.filter((r) => r.sector === sector)
        const body = (await screen('sector', sector)).ok()
        assert.deepEqual(
          body.rows.map((r) => [r.symbol, r.rank_ordinal, r.cohort_size]),
          within.map((r, k) => [r.symbol, k + 1, within.length]),
          `${teo} ${sector}`,
        )
      }
    }
  })
})
