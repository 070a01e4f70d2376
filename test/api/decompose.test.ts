import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import type { ModelStore } from '../../src/engine/model-store/reader.ts'
import { decompose } from '../../src/services/analytics/decompose.ts'
import { ModelRegistry } from '../../src/services/models.ts'
import { assertResponseShape, debits } from '../helpers/history-checks.ts'
import { startTestApp, type TestApp } from '../helpers/test-app.ts'

const L3 = [
  'l3_mkt_er',
  'l3_sec_er',
  'l3_sub_er',
  'l3_res_er',
  'l3_mkt_hr',
  'l3_sec_hr',
  'l3_sub_hr',
] as const
const FIELDS = [
  ...L3,
  'l1_mkt_beta',
  'l2_sec_beta',
  'l3_sub_beta',
  'sector_etf',
  'subsector_etf',
  'l3_style_er',
  'style_factors',
] as const
const nul = (x: number | undefined) => (x === undefined || Number.isNaN(x) ? null : x)

/** Expected values straight from the store (never through the service). */
async function expected(store: ModelStore, ticker: string, day?: number) {
  const i = store.resolve(ticker)
  const { t, values } =
    day === undefined
      ? await store.latest(i, FIELDS)
      : {
          t: day,
          values: Object.fromEntries(
            Object.entries(await store.history(i, [...FIELDS], day, day + 1)).map(([f, a]) => [
              f,
              (a as ArrayLike<number>)[0] as number,
            ]),
          ) as Record<(typeof FIELDS)[number], number>,
        }
  const etf = (c: number | undefined) => (c === undefined || c < 0 ? null : (store.etfs[c] ?? null))
  const v = Object.fromEntries(FIELDS.map((f) => [f, nul(values[f])])) as Record<
    (typeof FIELDS)[number],
    number | null
  >
  // Style keys in meta/factors.json order; bit j of style_factors is the j-th.
  const styleKeys = (store.factors ?? []).filter((f) => f.group === 'style').map((f) => f.key)
  const mask = values.style_factors ?? 0
  const styleFactors = v.l3_style_er === null ? [] : styleKeys.filter((_, j) => (mask >> j) & 1)
  return {
    teo: store.date(t),
    v,
    sector: etf(values.sector_etf),
    subsector: etf(values.subsector_etf),
    styleFactors,
  }
}

describe('POST /decompose and POST /v4/decompose', () => {
  let t: TestApp
  let account: string
  let key: string
  let stocks: string[]
  before(async () => {
    t = await startTestApp()
    account = await t.account(5)
    key = await t.key(account)
    stocks = t.ctx.models
      .store('live')
      .symbols.filter((s) => s.asset_type === 'stock')
      .map((s) => s.tickers[s.tickers.length - 1]?.ticker ?? s.symbol)
  })
  after(() => t?.close())

  test('contract shape and values equal the latest L3 state of the store, for every stock', async () => {
    const store = t.ctx.models.store('live')
    let split = 0
    for (const ticker of stocks) {
      const e = await expected(store, ticker)
      const b = (await t.client.call('decompose', { key, body: { ticker } })).ok()
      assertResponseShape('decompose', b)
      assert.equal(b.symbol, store.symbols[store.resolve(ticker)]?.symbol)
      assert.equal(b.teo, e.teo)
      assert.equal(b.data_as_of, '2021-12-31')
      assert.deepEqual(b.exposure, {
        market: { er: e.v.l3_mkt_er, hr: e.v.l3_mkt_hr, hedge_etf: 'SPY' },
        sector: { er: e.v.l3_sec_er, hr: e.v.l3_sec_hr, hedge_etf: e.sector },
        subsector: { er: e.v.l3_sub_er, hr: e.v.l3_sub_hr, hedge_etf: e.subsector },
        residual: { er: e.v.l3_res_er, hr: null, hedge_etf: null },
      })
      // hedge = −HR per ETF, shared ETFs summed: every ETF once, and the total is −ΣHR.
      const want: Record<string, number> = {}
      const layers: [string | null, number | null][] = [
        ['SPY', e.v.l3_mkt_hr],
        [e.sector, e.v.l3_sec_hr],
        [e.subsector, e.v.l3_sub_hr],
      ]
      for (const [etf, hr] of layers) if (etf && hr !== null) want[etf] = (want[etf] ?? 0) - hr
      assert.deepEqual(Object.keys(b.hedge).sort(), Object.keys(want).sort())
      for (const [etf, h] of Object.entries(want))
        assert.ok(Math.abs((b.hedge[etf] ?? Number.NaN) - h) < 1e-15)
      const total = Object.values(b.hedge).reduce((a, x) => a + x, 0)
      const hrSum = (e.v.l3_mkt_hr ?? 0) + (e.v.l3_sec_hr ?? 0) + (e.v.l3_sub_hr ?? 0)
      assert.ok(Math.abs(total + hrSum) < 1e-12, `${ticker}: Σhedge ${total} vs −ΣHR ${-hrSum}`)
      // ER identity and _data_health.
      const ers = [e.v.l3_mkt_er, e.v.l3_sec_er, e.v.l3_sub_er, e.v.l3_res_er]
      const populated = ers.every((x) => x !== null)
      assert.equal(b._data_health.er_populated, populated)
      if (populated) {
        assert.ok(
          Math.abs((b._data_health.er_sum ?? 0) - 1) < 1e-9,
          `${ticker} er_sum ${b._data_health.er_sum}`,
        )
        assert.equal(
          b._data_health.er_sum,
          ers.reduce<number>((a, x) => a + (x ?? 0), 0),
        )
      } else assert.equal(b._data_health.er_sum, null)
      // The style split as stored: style + stock_specific = l3_res_er.
      const res = e.v.l3_res_er
      assert.equal(b.style?.explained_variance, res === null ? null : e.v.l3_style_er)
      assert.equal(b.style?.hedgeable, false)
      assert.equal(b.style?.role, 'diagnostic')
      assert.deepEqual(b.style?.factors, e.styleFactors)
      assert.equal(b.stock_specific?.hedgeable, false)
      const style = b.style?.explained_variance ?? null
      const specific = b.stock_specific?.explained_variance ?? null
      if (res !== null && style !== null) {
        split++
        assert.ok(style >= 0 && style <= res, `${ticker}: style ${style} within [0, ${res}]`)
        assert.ok(
          Math.abs(style + (specific ?? Number.NaN) - res) <= 1e-12,
          `${ticker}: style + specific = res`,
        )
        assert.ok(e.styleFactors.length > 0)
        assert.equal(b.style?.note, null)
      } else {
        assert.equal(specific, res, `${ticker}: without a style share all of l3_res_er is stock-specific`)
        assert.match(b.style?.note ?? '', res === null ? /no L3 residual/ : /no style ETF/)
      }
      assert.deepEqual(b._metadata.range, [e.teo, e.teo])
    }
    assert.ok(stocks.length >= 20)
    assert.ok(split >= stocks.length / 2, `${split} of ${stocks.length} stocks with a style share`)
  })

  test('hedge_levels is the same block /metrics serves for the ticker', async () => {
    const ticker = stocks[0] as string
    const d = (await t.client.call('decompose', { key, body: { ticker } })).ok()
    const m = (await t.client.call('getMetrics', { key, params: { ticker } })).ok()
    assert.ok(d.hedge_levels)
    assert.deepEqual(d.hedge_levels, m.hedge_levels)
  })

  test('ticker is trimmed and case-insensitive; ETFs (no model) answer 200 with nulls and er_populated false', async () => {
    const ticker = stocks[1] as string
    const b = (await t.client.call('decompose', { key, body: { ticker: `  ${ticker.toLowerCase()} ` } })).ok()
    assert.equal(b.ticker, ticker)
    const etf = (await t.client.call('decompose', { key, body: { ticker: 'XLK' } })).ok()
    assertResponseShape('decompose', etf)
    assert.deepEqual(etf._data_health, { er_populated: false, er_sum: null })
    assert.deepEqual(etf.exposure.residual, { er: null, hr: null, hedge_etf: null })
    assert.equal(etf.exposure.market.er, null)
    assert.deepEqual(etf.hedge, {})
    assert.equal(etf.hedge_levels, null)
    assert.equal(etf.stock_specific?.explained_variance, null)
  })

  test('/v4/decompose: named blocks with labelled betas, L3 ERs and −HR notionals', async () => {
    const store = t.ctx.models.store('live')
    for (const ticker of stocks.slice(0, 8)) {
      const e = await expected(store, ticker)
      const b = (await t.client.call('decomposeV4', { key, body: { ticker } })).ok()
      assertResponseShape('decomposeV4', b)
      const neg = (x: number | null) => (x === null ? null : 0 - x)
      assert.deepEqual(b.market, {
        etf: 'SPY',
        beta: e.v.l1_mkt_beta,
        beta_source: 'l1_mkt_beta',
        explained_variance: e.v.l3_mkt_er,
        hedge_notional: neg(e.v.l3_mkt_hr),
        hedge_source: 'l3_mkt_hr',
      })
      assert.deepEqual(b.industry, {
        sector: {
          etf: e.sector,
          beta: e.v.l2_sec_beta,
          beta_source: 'l2_sec_beta',
          explained_variance: e.v.l3_sec_er,
          hedge_notional: neg(e.v.l3_sec_hr),
          hedge_source: 'l3_sec_hr',
        },
        subsector: {
          etf: e.subsector,
          beta: e.v.l3_sub_beta,
          beta_source: 'l3_sub_beta',
          explained_variance: e.v.l3_sub_er,
          hedge_notional: neg(e.v.l3_sub_hr),
          hedge_source: 'l3_sub_hr',
        },
      })
      const res = e.v.l3_res_er
      const style = res === null ? null : e.v.l3_style_er
      assert.deepEqual(b.style, {
        etf: null,
        beta: null,
        beta_source: null,
        explained_variance: style,
        hedge_notional: null,
        hedge_source: null,
        hedgeable: false,
        role: 'diagnostic',
        factors: e.styleFactors,
        note: style === null ? b.style.note : null,
      })
      assert.equal(b.stock_specific.explained_variance, res === null || style === null ? res : res - style)
      assert.equal(b.stock_specific.hedge_notional, null)
    }
  })

  test('a warning is logged when the four L3 ERs stray more than 0.05 from 1, and the answer still comes', async () => {
    const real = t.ctx.models.store('live')
    const ticker = stocks[0] as string
    // A store view whose latest state has a broken ER identity (the real build never produces one).
    const skewed = Object.create(real) as ModelStore
    skewed.latest = async (i, fields) => {
      const r = await real.latest(i, fields)
      return { t: r.t, values: { ...r.values, l3_res_er: (r.values.l3_res_er ?? 0) + 0.2 } }
    }
    const warnings: unknown[] = []
    const log = { warn: (o: unknown) => warnings.push(o) } as unknown as TestApp['ctx']['log']
    const models = new ModelRegistry(skewed, null, 'http://erm3.test')
    const r = await decompose(models, 'live', ticker, log)
    assert.equal(warnings.length, 1)
    assert.ok(Math.abs((r.body._data_health.er_sum ?? 0) - 1.2) < 1e-9)
    const fine = await decompose(new ModelRegistry(real, null, 'http://erm3.test'), 'live', ticker, log)
    assert.equal(fine.body._data_health.er_populated, true)
    assert.equal(warnings.length, 1, 'no warning when the identity holds')
  })

  test('a subsector that fell back to the sector ETF is summed into the sector entry of the hedge map', async () => {
    const real = t.ctx.models.store('live')
    const ticker = stocks[0] as string
    // The fixture may hold no fallback state at data_as_of; a store view forces one (docs/methodology.md §5).
    const fallback = Object.create(real) as ModelStore
    fallback.latest = async (i, fields) => {
      const r = await real.latest(i, fields)
      return {
        t: r.t,
        values: { ...r.values, subsector_etf: r.values.sector_etf as number, l3_sub_hr: 0.25 },
      }
    }
    const log = { warn: () => undefined } as unknown as TestApp['ctx']['log']
    const r = await decompose(new ModelRegistry(fallback, null, 'http://erm3.test'), 'live', ticker, log)
    const { sector, subsector, market } = r.body.exposure
    assert.equal(subsector.hedge_etf, sector.hedge_etf)
    assert.ok(sector.hr !== null && market.hr !== null && sector.hedge_etf !== null)
    assert.deepEqual(Object.keys(r.body.hedge).sort(), ['SPY', sector.hedge_etf].sort())
    assert.equal(r.body.hedge[sector.hedge_etf], 0 - sector.hr + (0 - 0.25))
    assert.equal(r.body.hedge.SPY, 0 - market.hr)
  })

  test('as_of: the stored row of that day (nothing later), a non-trading day noted, 404 before the first trade', async () => {
    const store = t.ctx.models.store('live')
    const T = store.calendar.length - 1 - 200
    const acct = await t.account(1)
    const k = await t.key(acct)
    let checked = 0
    for (const ticker of stocks.slice(0, 8)) {
      const life = await store.listedLife(store.resolve(ticker))
      if (!(life.first <= T && life.last > T)) continue
      const e = await expected(store, ticker, T)
      const as_of = store.date(T)
      const b = (await t.client.call('decompose', { key: k, body: { ticker, as_of } })).ok()
      assertResponseShape('decompose', b)
      assert.equal(b.teo, as_of)
      assert.equal(b.data_as_of, '2021-12-31')
      assert.deepEqual(b._metadata.range, [as_of, as_of])
      assert.equal(b._metadata.as_of_note, undefined)
      assert.equal(b.exposure.market.hr, e.v.l3_mkt_hr)
      assert.equal(b.exposure.sector.er, e.v.l3_sec_er)
      assert.equal(b.exposure.subsector.hr, e.v.l3_sub_hr)
      assert.equal(b.exposure.residual.er, e.v.l3_res_er)
      assert.equal(b.exposure.sector.hedge_etf, e.sector)
      const v4 = (await t.client.call('decomposeV4', { key: k, body: { ticker, as_of } })).ok()
      assertResponseShape('decomposeV4', v4)
      assert.equal(v4.teo, as_of)
      assert.equal(v4.market.beta, e.v.l1_mkt_beta)
      assert.equal(v4.industry.sector.beta, e.v.l2_sec_beta)
      assert.equal(v4.industry.subsector.hedge_notional, e.v.l3_sub_hr === null ? null : 0 - e.v.l3_sub_hr)
      // The latest state is another answer.
      const latest = (await t.client.call('decompose', { key: k, body: { ticker } })).ok()
      assert.notEqual(latest.exposure.market.hr, b.exposure.market.hr)
      checked++
    }
    assert.ok(checked >= 3, `${checked} stocks listed on ${store.date(T)}`)
    // A weekend: the latest trading day on or before it, said in _metadata.
    const friday = store.calendar.findIndex((d, i) => i > 10 && d - (store.calendar[i - 1] as number) > 1) - 1
    const gap = new Date(((store.calendar[friday] as number) + 1) * 86_400_000).toISOString().slice(0, 10)
    let listed = ''
    for (const ticker of stocks) {
      const life = await store.listedLife(store.resolve(ticker))
      if (life.first <= friday && life.last > friday) {
        listed = ticker
        break
      }
    }
    for (const id of ['decompose', 'decomposeV4'] as const) {
      const w = (await t.client.call(id, { key: k, body: { ticker: listed, as_of: gap } })).ok()
      assert.equal(w.teo, store.date(friday))
      assert.equal(w._metadata.as_of_requested, gap)
      assert.match(
        w._metadata.as_of_note ?? '',
        new RegExp(`${gap} is not a trading day.*${store.date(friday)}`),
      )
    }
    const paid = (await debits(t, acct)).length
    // Before the ticker's first trade, outside the store, not a date: 404 / 404 / 400, all free.
    let young = ''
    for (const ticker of stocks) {
      const life = await store.listedLife(store.resolve(ticker))
      if (life.first > 5) {
        young = store.date(life.first - 1)
        listed = ticker
        break
      }
    }
    assert.ok(young, 'the fixture has a stock listed after the first day')
    for (const id of ['decompose', 'decomposeV4'] as const) {
      const early = await t.client.call(id, { key: k, body: { ticker: listed, as_of: young } })
      assert.equal(early.status, 404, early.text)
      assert.equal((early.json as { code: string }).code, 'DATE_NOT_AVAILABLE')
      const outside = await t.client.call(id, { key: k, body: { ticker: listed, as_of: '1900-01-02' } })
      assert.equal(outside.status, 404)
      for (const as_of of ['2021-02-30', 'yesterday', '20210104'])
        assert.equal(
          (await t.client.call(id, { key: k, body: { ticker: listed, as_of } })).status,
          400,
          as_of,
        )
    }
    assert.equal((await debits(t, acct)).length, paid, 'errors cost nothing')
    // Listed on as_of but without a model yet (its first day): the free empty answer, said why.
    for (const id of ['decompose', 'decomposeV4'] as const) {
      const first = await t.client.call(id, {
        key: k,
        body: {
          ticker: listed,
          as_of: store.date((await store.listedLife(store.resolve(listed))).first),
        },
      })
      const b = first.ok()
      assert.equal(b._agent.cost_usd, 0)
      assert.match(b._metadata.nothing_to_answer?.reason ?? '', /on as_of/)
      assert.equal(b._data_health.er_populated, false)
    }
    assert.equal((await debits(t, acct)).length, paid, 'a day without a model costs nothing')
    // /metrics says the same of a non-trading day.
    const m = await t.client.call('getMetrics', {
      key: k,
      params: { ticker: stocks[0] as string },
      query: { as_of: gap },
    })
    assert.equal(m.ok()._metadata.as_of_requested, gap)
  })

  test('errors: unknown ticker 404 with suggestions, bad bodies 400, all free', async () => {
    const acct = await t.account(1)
    const k = await t.key(acct)
    const known = stocks[0] as string
    for (const id of ['decompose', 'decomposeV4'] as const) {
      const nf = await t.client.call(id, { key: k, body: { ticker: `${known}Q` } })
      assert.equal(nf.status, 404)
      const p = nf.json as { code: string; suggestions: string[] }
      assert.equal(p.code, 'TICKER_NOT_FOUND')
      assert.ok(p.suggestions.includes(known))
      for (const body of [{}, { ticker: 5 }, { ticker: 'AN', extra: 1 }, { ticker: '' }])
        assert.equal((await t.client.call(id, { key: k, body: body as { ticker: string } })).status, 400)
      const bad = await t.client.call(id, { key: k, body: { ticker: 'A B $' } })
      assert.equal((bad.json as { code: string }).code, 'INVALID_TICKER')
    }
    assert.deepEqual(await debits(t, acct), [])
  })

  test('charged the listed price per call (0.001 each) and test keys read the sandbox with the same shape', async () => {
    const acct = await t.account(1)
    const k = await t.key(acct)
    const ticker = stocks[2] as string
    const r1 = (await t.client.call('decompose', { key: k, body: { ticker } })).ok()
    const r2 = (await t.client.call('decomposeV4', { key: k, body: { ticker } })).ok()
    assert.equal(r1._agent.cost_usd, 0.001)
    assert.equal(r2._agent.cost_usd, 0.001)
    assert.equal(r1._agent.billing_code, 'metrics_v3')
    assert.deepEqual(await debits(t, acct), [
      [-1000, 'decompose'],
      [-1000, 'decompose_v4'],
    ])
    const sandbox = t.ctx.models.store('test')
    const sbTicker = sandbox.symbols.find((s) => s.asset_type === 'stock')?.symbol as string
    const tk = await t.key(acct, { env: 'test' })
    const r = await t.client.call('decompose', { key: tk, body: { ticker: sbTicker } })
    const sb = r.ok()
    assert.equal(r.headers['x-environment'], 'test')
    assertResponseShape('decompose', sb)
    const e = await expected(sandbox, sbTicker)
    assert.equal(sb.exposure.market.hr, e.v.l3_mkt_hr)
    const live = t.ctx.models.store('live')
    if (live.resolve(sbTicker) >= 0)
      assert.notEqual(sb.exposure.market.hr, (await expected(live, sbTicker)).v.l3_mkt_hr)
    assert.equal((await debits(t, acct)).length, 2, 'test keys never move the balance')
  })
})
