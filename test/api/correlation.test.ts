import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { parse } from 'csv-parse/sync'
import type { ModelStore } from '../../src/engine/model-store/reader.ts'
import { startTestApp, type TestApp } from '../helpers/test-app.ts'

/**
 * GET /metrics/{ticker}/correlation and POST /correlation against a direct Pearson / Spearman
 * computation written here (never from src/engine/model) from the stored fields and factor returns of
 * the fixture store; aliases, nulls and short overlap, free 400s, prices and the sign convention.
 */

const KEYS = [
  'inflation',
  'term_spread',
  'short_rates',
  'credit',
  'oil',
  'gold',
  'usd',
  'volatility',
  'bitcoin',
  'vix_spot',
  'momentum',
  'quality',
  'low_vol',
  'value',
  'growth',
  'size',
  'dividend',
  'moat',
]
const FIELD = { gross: 'returns_gross', l1: 'l1_rr', l2: 'l2_rr', l3_residual: 'l3_rr' } as const

/** Textbook Pearson: means, then centred sums. */
function pearsonNaive(x: number[], y: number[]): number | null {
  const n = x.length
  const mx = x.reduce((a, b) => a + b, 0) / n
  const my = y.reduce((a, b) => a + b, 0) / n
  let sxy = 0
  let sxx = 0
  let syy = 0
  for (let i = 0; i < n; i++) {
    sxy += (x[i] - mx) * (y[i] - my)
    sxx += (x[i] - mx) ** 2
    syy += (y[i] - my) ** 2
  }
  if (sxx === 0 || syy === 0) return null
  return sxy / Math.sqrt(sxx * syy)
}

/** Average ranks (ties share the mean position) by a comparator sort. */
function ranks(x: number[]): number[] {
  const idx = x.map((_, i) => i).sort((a, b) => x[a] - x[b])
  const out = new Array<number>(x.length)
  for (let s = 0; s < idx.length; ) {
    let e = s + 1
    while (e < idx.length && x[idx[e]] === x[idx[s]]) e++
    for (let j = s; j < e; j++) out[idx[j]] = (s + 1 + e) / 2
    s = e
  }
  return out
}

/** docs/methodology.md §13 written out: the last `w` days ≤ end where both sides are finite. */
function direct(x: ArrayLike<number>, y: ArrayLike<number>, end: number, w: number, method: string) {
  const xs: number[] = []
  const ys: number[] = []
  for (let t = end; t >= 0 && xs.length < w; t--) {
    if (Number.isFinite(x[t]) && Number.isFinite(y[t])) {
      xs.unshift(x[t])
      ys.unshift(y[t])
    }
  }
  if (xs.length < 30) return { value: null, pairs: xs.length }
  const value = method === 'pearson' ? pearsonNaive(xs, ys) : pearsonNaive(ranks(xs), ranks(ys))
  return { value, pairs: xs.length }
}

type Result = {
  ticker: string
  symbol: string
  teo: string
  correlations: Record<string, number | null>
  overlap_days: Record<string, number>
  warnings: string[]
}

describe('correlation endpoints', () => {
  let t: TestApp
  let key: string
  let store: ModelStore
  let factors: { keys: string[]; returns: Float64Array[] }
  /** Stocks that have a sector ETF at their last priced day (so every return type exists). */
  let stocks: string[]
  before(async () => {
    t = await startTestApp()
    key = await t.key(await t.account(5))
    store = t.ctx.models.store('live')
    factors = await store.factorReturns()
    stocks = []
    for (let i = 0; i < store.symbols.length; i++) {
      const s = store.symbols[i]
      // Symbols whose key is also their current ticker (a renamed one's key has a date suffix).
      if (s.asset_type !== 'stock' || store.resolve(s.symbol) !== i) continue
      const { values } = await store.latest(i, ['sector_etf'])
      if (values.sector_etf >= 0) stocks.push(s.symbol)
    }
  })
  after(() => t?.close())

  const get = (ticker: string, query: Record<string, unknown> = {}) =>
    t.client.call('getCorrelation', { key, params: { ticker }, query } as never)

  test('every factor, return type and method equals a direct computation from the store', async () => {
    assert.ok(stocks.length >= 5)
    assert.deepEqual(factors.keys, KEYS)
    for (const sym of stocks.slice(0, 4)) {
      const i = store.resolve(sym)
      const end = await store.lastPriced(i)
      for (const rt of ['gross', 'l1', 'l2', 'l3_residual'] as const) {
        const x = (await store.history(i, [FIELD[rt]]))[FIELD[rt]] as Float64Array
        for (const method of ['pearson', 'spearman'] as const) {
          for (const w of [252, 40]) {
            const body = (
              await get(sym, { return_type: rt, method, window_days: w })
            ).ok() as unknown as Result
            assert.equal(body.teo, store.date(end))
            assert.deepEqual(Object.keys(body.correlations), KEYS)
            for (const [k, name] of KEYS.entries()) {
              const d = direct(x, factors.returns[k], end, w, method)
              const got = body.correlations[name]
              const what = `${sym} ${rt} ${method} ${w} ${name}`
              assert.equal(body.overlap_days[name], d.pairs, what)
              if (d.value === null || got === null) assert.equal(got, d.value, what)
              else assert.ok(Math.abs(got - d.value) <= 1e-12, `${what}: ${got} vs ${d.value}`)
            }
          }
        }
      }
    }
  })

  test('aliases and proxy tickers name the same factors; POST one ticker equals GET', async () => {
    const sym = stocks[0] as string
    const all = (await get(sym)).ok() as unknown as Result
    const some = (await get(sym, { factors: 'DXY, btc,Oil,HYG,low-vol,oil' })).ok() as unknown as Result
    assert.deepEqual(Object.keys(some.correlations), ['usd', 'bitcoin', 'oil', 'credit', 'low_vol'])
    for (const k of Object.keys(some.correlations)) assert.equal(some.correlations[k], all.correlations[k], k)
    const post = (
      await t.client.call('postCorrelation', { key, body: { ticker: sym } } as never)
    ).ok() as unknown as Result
    assert.deepEqual(post.correlations, all.correlations)
    assert.equal(all.ticker, sym)
  })

  test('short overlap: a factor that starts late gets fewer pairs and a warning; < 30 pairs is null', async () => {
    const sym = stocks[0] as string
    const body = (await get(sym, { return_type: 'gross', window_days: 2000 })).ok() as unknown as Result
    // BITO starts in October 2021, near the end of the fixture.
    const n = body.overlap_days.bitcoin as number
    assert.ok(n > 0 && n < 252, `bitcoin pairs ${n}`)
    assert.ok(
      body.warnings.some((w) => w.includes('bitcoin')),
      body.warnings.join('; '),
    )
    // 20 trading days back from teo leave bitcoin 20 pairs: below the 30-pair floor.
    const short = (await get(sym, { return_type: 'gross', window_days: 20 })).ok() as unknown as Result
    for (const k of KEYS) {
      assert.equal(short.correlations[k], null, k)
      assert.ok(short.overlap_days[k] <= 20)
    }
    assert.ok(short.warnings.some((w) => w.startsWith('fewer than 30 paired days with bitcoin')))
  })

  test('bad options are free 400s that say why', async () => {
    const before = (await t.client.call('getBalance', { key })).ok().balance_usd
    const bad = await get(stocks[0] as string, { factors: 'oil,carry' })
    assert.equal(bad.status, 400)
    const p = bad.json as { code: string; detail: string }
    assert.equal(p.code, 'INVALID_REQUEST')
    assert.ok(p.detail.includes('"carry"') && p.detail.includes('vix_spot'), p.detail)
    assert.equal((await get(stocks[0] as string, { window_days: 10 })).status, 400)
    assert.equal((await get(stocks[0] as string, { method: 'kendall' })).status, 400)
    const both = await t.client.call('postCorrelation', {
      key,
      body: { ticker: 'SPY', tickers: ['SPY', 'XLK'] },
    } as never)
    assert.equal(both.status, 400)
    // An ETF has no sector ETF of its own: no L2 / L3 residual.
    const etf = await get('XLK', { return_type: 'l2' })
    assert.equal(etf.status, 400)
    assert.match((etf.json as { detail: string }).detail, /no sector ETF/)
    assert.equal((await t.client.call('getBalance', { key })).ok().balance_usd, before, 'a 400 costs nothing')
  })

  test('batch: results in order, per-ticker errors, long CSV table', async () => {
    const asked = [stocks[1] as string, 'NOPE', 'XLK', stocks[2] as string]
    const body = (
      await t.client.call('postCorrelation', {
        key,
        body: { tickers: asked, factors: 'credit,oil', return_type: 'l2' },
      } as never)
    ).ok() as unknown as { results: (Result | { ticker: string; status: string; code: string })[] }
    assert.deepEqual(
      body.results.map((r) => r.ticker),
      asked,
    )
    assert.equal((body.results[1] as { code: string }).code, 'TICKER_NOT_FOUND')
    assert.equal((body.results[2] as { code: string }).code, 'INVALID_REQUEST')
    const one = (
      await get(stocks[1] as string, { factors: 'credit,oil', return_type: 'l2' })
    ).ok() as unknown as Result
    assert.deepEqual((body.results[0] as Result).correlations, one.correlations)
    const csv = await t.transport({
      method: 'POST',
      url: '/correlation?format=csv',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ tickers: [stocks[1], stocks[2]], factors: 'credit,oil' }),
    })
    assert.equal(csv.status, 200)
    const rows = parse(csv.body, { columns: true }) as Record<string, string>[]
    assert.deepEqual(Object.keys(rows[0] ?? {}), ['ticker', 'factor', 'correlation', 'pairs'])
    assert.deepEqual(
      rows.map((r) => [r.ticker, r.factor]),
      [
        [stocks[1], 'credit'],
        [stocks[1], 'oil'],
        [stocks[2], 'credit'],
        [stocks[2], 'oil'],
      ],
    )
    const none = await t.client.call('postCorrelation', { key, body: { tickers: ['NOPE', 'NADA'] } } as never)
    assert.equal(none.status, 404)
  })

  test('prices: 0.002 single (GET and POST), 0.005 per batch call, a repeat is free', async () => {
    const k = await t.key(await t.account(1))
    const calls = [
      ['getCorrelation', { key: k, params: { ticker: stocks[0] } }, 0.002],
      ['postCorrelation', { key: k, body: { ticker: stocks[1] } }, 0.002],
      ['postCorrelation', { key: k, body: { tickers: stocks.slice(0, 5) } }, 0.005],
      ['postCorrelation', { key: k, body: { tickers: [stocks[0], 'NOPE'] } }, 0.005],
    ] as const
    let spent = 0
    for (const [op, input, price] of calls) {
      const a = (await t.client.call(op as 'getCorrelation', input as never)).ok() as unknown as {
        _agent: { cost_usd: number }
      }
      assert.equal(a._agent.cost_usd, price, op)
      spent += price
      const b = (await t.client.call(op as 'getCorrelation', input as never)).ok() as unknown as {
        _agent: { cost_usd: number; cache_status: string }
      }
      assert.equal(b._agent.cost_usd, 0)
      assert.equal(b._agent.cache_status, 'HIT')
    }
    const bal = (await t.client.call('getBalance', { key: k })).ok()
    assert.equal(Math.round(bal.balance_usd * 1e6), Math.round((1 - spent) * 1e6))
    // The one table says the same everywhere.
    const pricing = (await t.client.call('getPricing', {})).ok()
    const row = pricing.capabilities.find((c) => c.capability_id === 'correlation_batch')
    assert.equal(row?.cost_usd, 0.002)
    assert.equal(row?.batch_cost_usd, 0.005)
    assert.equal(pricing.capabilities.find((c) => c.capability_id === 'correlation')?.cost_usd, 0.002)
    const est = async (params: Record<string, unknown>) =>
      (await t.client.call('estimate', { body: { operation: 'POST /correlation', params } })).ok()
        .estimated_cost_usd
    assert.equal(await est({ ticker: 'AAPL' }), 0.002)
    assert.equal(await est({ tickers: ['AAPL', 'MSFT'] }), 0.005)
    const doc = (await t.client.call('getOpenApi')).json as {
      paths: Record<string, Record<string, { 'x-pricing'?: Record<string, unknown> }>>
    }
    assert.deepEqual(doc.paths['/correlation']?.post?.['x-pricing'], {
      capability_id: 'correlation_batch',
      tier: 'baseline',
      model: 'per_request',
      cost_usd: 0.002,
      billing_code: 'correlation_v1',
      batch_cost_usd: 0.005,
    })
  })

  test('sign convention: gross returns correlate positively with credit and negatively with volatility', async () => {
    // The generator loads HYG on the market (beta 0.3) and VXX against it (−3.2); stocks load on it positively.
    const body = (
      await t.client.call('postCorrelation', {
        key,
        body: { tickers: stocks.slice(0, 50), return_type: 'gross', factors: 'credit,volatility' },
      } as never)
    ).ok() as unknown as { results: Result[] }
    const mean = (k: string) =>
      body.results.reduce((a, r) => a + (r.correlations[k] ?? 0), 0) / body.results.length
    assert.ok(mean('credit') > 0.2, `mean credit correlation ${mean('credit')}`)
    assert.ok(mean('volatility') < -0.2, `mean volatility correlation ${mean('volatility')}`)
  })
})
