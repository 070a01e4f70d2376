import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import type { ModelStore } from '../../src/engine/model-store/reader.ts'
import {
  type Body,
  Cov,
  checkBody,
  clip5,
  etfReturns,
  ewmaNwCov,
  ewmaSpecific,
  ewVar,
  expectedSnapshot,
  fin,
  type Holding,
  loadStock,
  lookbackWindow,
  MARKET,
  modelledTickers,
  near,
  type PositionOut,
  peerVariance,
  residualsOf,
  rng,
  sampleCov,
  sampleVar,
  snapshotCall,
} from '../helpers/portfolio-math.ts'
import { startTestApp, type TestApp } from '../helpers/test-app.ts'

/**
 * POST /snapshot for the books a portfolio manager holds (docs/methodology.md §13 "Portfolio
 * risk"), against the independent computation of test/helpers/portfolio-math.ts: a past as_of
 * (point in time), long/short books normalised by the gross, ETFs as positions, the forecast
 * horizon, and the one rule for realised volatility shared with /metrics.
 */

/**
 * The book computations run twice: with `estimator: "sample"` asked explicitly (equal weights) and
 * with no estimator, the default, checked against ewma_nw computed in test/helpers/portfolio-math.ts.
 */
const ESTIMATORS = [
  { ask: { estimator: 'sample' }, expect: 'sample' },
  { ask: {}, expect: 'ewma_nw' },
] as const

describe('POST /snapshot: as_of, long/short, ETF positions, horizon (synthetic store)', () => {
  let t: TestApp
  let store: ModelStore
  let key: string
  let modelled: string[]

  before(async () => {
    t = await startTestApp()
    store = t.ctx.models.store('live')
    key = await t.key(await t.account(200), { tier: 'premium' })
    modelled = await modelledTickers(store)
  })
  after(() => t?.close())

  async function ok(body: Record<string, unknown>): Promise<Body & Record<string, unknown>> {
    const r = await snapshotCall(t.app, body, key)
    assert.equal(r.status, 200, `${JSON.stringify(body).slice(0, 300)} → ${r.status} ${r.text.slice(0, 500)}`)
    return r.json as Body & Record<string, unknown>
  }

  /** A book of weights at day T over `lookback`, as the test computes it (weights / Σ|weights|). */
  async function book(rows: { ticker: string; weight: number }[], lookback: number, T?: number) {
    const win = lookbackWindow(store, lookback, T)
    const gross = rows.reduce((a, r) => a + Math.abs(r.weight), 0)
    const holdings: Holding[] = []
    for (const r of rows)
      holdings.push({ stock: await loadStock(store, store.resolve(r.ticker), win), weight: r.weight / gross })
    return { win, holdings }
  }

  const pick = (n: number, seed: number) => {
    const rand = rng(seed)
    const pool = [...modelled]
    return Array.from({ length: n }, () => pool.splice(Math.floor(rand() * pool.length), 1)[0] as string)
  }

  test('as_of a past day equals the computation over the window ending that day', async () => {
    const T = store.calendar.length - 1 - 300
    const rows = pick(8, 3).map((ticker, i) => ({ ticker, weight: 1 + i }))
    for (const lookback of [60, 252]) {
      for (const e of ESTIMATORS) {
        const body = await ok({
          type: 'portfolio',
          portfolio: rows,
          lookback_days: lookback,
          as_of: store.date(T),
          ...e.ask,
        })
        const { win, holdings } = await book(rows, lookback, T)
        const exp = await expectedSnapshot(store, holdings, win, null, e.expect)
        checkBody(store, body, exp, `as_of ${store.date(T)} lookback ${lookback} ${e.expect}`)
      }
      const body = await ok({
        type: 'portfolio',
        portfolio: rows,
        lookback_days: lookback,
        as_of: store.date(T),
      })
      assert.equal(body.snapshot.as_of, store.date(T))
      assert.ok(
        body.time_behavior.dates.every((d) => d <= store.date(T)),
        'nothing after as_of',
      )
      // The default is data_as_of: a different answer.
      const latest = await ok({ type: 'portfolio', portfolio: rows, lookback_days: lookback })
      assert.notEqual(latest.snapshot.volatility_ann, body.snapshot.volatility_ann)
    }
    // A weekend resolves to the previous trading day, with a warning.
    const friday = store.calendar.findIndex((d, i) => i > 10 && d - (store.calendar[i - 1] as number) > 1) - 1
    const gap = new Date(((store.calendar[friday] as number) + 1) * 86_400_000).toISOString().slice(0, 10)
    const w = await ok({ type: 'portfolio', portfolio: rows, as_of: gap })
    assert.equal(w.snapshot.as_of, store.date(friday))
    assert.ok(w.snapshot.warnings.some((x) => x.includes(`as_of ${gap} is not a trading day`)))
  })

  test('a long/short book: weights by gross, signed hedges and contributions, exposure and leverage', async () => {
    const names = pick(6, 11)
    const rows = names.map((ticker, i) => ({ ticker, weight: i % 3 === 2 ? -(1 + i) : 2 + i }))
    const { win, holdings } = await book(rows, 252)
    for (const e of ESTIMATORS) {
      const b = await ok({ type: 'portfolio', portfolio: rows, lookback_days: 252, ...e.ask })
      checkBody(
        store,
        b,
        await expectedSnapshot(store, holdings, win, null, e.expect),
        `long/short ${e.expect}`,
      )
    }
    const body = await ok({ type: 'portfolio', portfolio: rows, lookback_days: 252 })
    const gross = rows.reduce((a, r) => a + Math.abs(r.weight), 0)
    const long = rows.filter((r) => r.weight > 0).reduce((a, r) => a + r.weight, 0) / gross
    const short = rows.filter((r) => r.weight < 0).reduce((a, r) => a + r.weight, 0) / gross
    const x = body.snapshot.exposure ?? {}
    near(x.long, long, 1e-15, 'long')
    near(x.short, short, 1e-15, 'short')
    near(x.net, long + short, 1e-15, 'net')
    near(x.gross, 1, 1e-15, 'gross')
    near(x.leverage, 1 / Math.abs(long + short), 1e-12, 'leverage = gross / |net|')
    near(x.gross_amount, gross, 1e-12, 'gross_amount')
    assert.equal(x.short_count, rows.filter((r) => r.weight < 0).length)
    for (const r of rows) {
      const p = body.snapshot.positions.find((q) => q.ticker === r.ticker) as PositionOut
      near(p.weight, r.weight / gross, 1e-15, `${r.ticker} signed weight`)
    }
    // A pure long/short pair of one name nets out: market neutral has no leverage ratio.
    const pair = await ok({
      type: 'portfolio',
      portfolio: [
        { ticker: names[0], weight: 1 },
        { ticker: names[1], weight: -1 },
      ],
    })
    assert.equal(pair.snapshot.exposure?.leverage, null)
    near(pair.snapshot.exposure?.net, 0, 1e-15, 'a 1/−1 pair is net zero')
  })

  test('ETFs are positions: exposure 1 to themselves, covered, equal to the direct computation', async () => {
    const stock = modelled[0] as string
    for (const rows of [
      [
        { ticker: stock, weight: 50 },
        { ticker: 'XLE', weight: 50 },
      ],
      [
        { ticker: stock, weight: 1 },
        { ticker: 'SPY', weight: -0.8 },
      ],
    ])
      for (const e of ESTIMATORS) {
        const body = await ok({ type: 'portfolio', portfolio: rows, lookback_days: 252, ...e.ask })
        const { win, holdings } = await book(rows, 252)
        const exp = await expectedSnapshot(store, holdings, win, null, e.expect)
        checkBody(store, body, exp, `${JSON.stringify(rows)} ${e.expect}`)
        assert.deepEqual(body.snapshot.unresolved, [], 'nothing dropped')
        assert.equal(body.snapshot.positions.length, 2)
        const etf = body.snapshot.positions.find((p) => p.ticker === rows[1]?.ticker) as PositionOut &
          Record<string, unknown>
        assert.equal(etf.asset_type, 'etf')
        assert.equal(etf.risk_basis, 'etf')
        near(
          etf.weight,
          (rows[1]?.weight as number) /
            (Math.abs(rows[0]?.weight as number) + Math.abs(rows[1]?.weight as number)),
          1e-15,
          'ETF weight',
        )
        const g = Math.abs(rows[0]?.weight as number) + Math.abs(rows[1]?.weight as number)
        const wc =
          (exp.book[0]?.stock.covered ? Math.abs(rows[0]?.weight as number) : 0) +
          Math.abs(rows[1]?.weight as number)
        near(body.snapshot.weight_covered, wc / g, 1e-15, 'weight_covered counts the ETF')
      }
  })

  test('a delisted stock is never zero-risk cash: proxied by its sector ETF and its peers, flagged', async () => {
    const T = store.calendar.length - 1
    let delisted: string | null = null
    for (let i = 0; i < store.symbols.length && !delisted; i++) {
      const m = store.symbols[i]
      if (m?.asset_type !== 'stock' || !m.sector) continue
      const life = await store.listedLife(i)
      const last = m.tickers.at(-1)?.ticker as string
      if (life.last >= 0 && life.last < T - 5 && store.resolve(last) === i) delisted = last
    }
    assert.ok(delisted, 'the fixture has a delisted stock with a sector')
    const rows = [...pick(2, 5).map((ticker) => ({ ticker, weight: 1 })), { ticker: delisted, weight: 1 }]
    for (const e of ESTIMATORS) {
      const body = await ok({ type: 'portfolio', portfolio: rows, lookback_days: 252, ...e.ask })
      const { win, holdings } = await book(rows, 252)
      const exp = await expectedSnapshot(store, holdings, win, null, e.expect)
      checkBody(store, body, exp, `with a delisted name ${e.expect}`)
      const p = body.snapshot.positions.find((q) => q.ticker === delisted) as PositionOut &
        Record<string, unknown>
      assert.equal(p.covered, false)
      assert.equal(p.risk_basis, 'proxy')
      assert.ok(p.proxy && p.proxy.peers > 0)
      near(body.snapshot.weight_proxied, 1 / 3, 1e-15, 'weight_proxied')
      near(body.snapshot.weight_covered, 2 / 3, 1e-15, 'weight_covered stays honest')
      assert.ok(body.snapshot.warnings.some((w) => w.startsWith(`${delisted} has no model at as_of`)))
      assert.ok((p.risk_contribution.component as number) > 0, 'it carries risk')
    }
  })

  test('horizon scales the daily variance by the horizon; _metadata names the model and estimator', async () => {
    const rows = pick(5, 7).map((ticker) => ({ ticker, weight: 1 }))
    const { win, holdings } = await book(rows, 252)
    const exp = await expectedSnapshot(store, holdings, win)
    assert.ok(exp.risk)
    for (const horizon of [1, 21, 63, 252]) {
      const body = await ok({ type: 'portfolio', portfolio: rows, horizon, estimator: 'sample' })
      const f = body.snapshot.forecast ?? {}
      assert.equal(f.horizon_days, horizon)
      const want = Math.sqrt(horizon * exp.risk.V)
      near(f.volatility, want, 1e-10 * want, `forecast volatility at ${horizon} days`)
      near(f.residual_vol, Math.sqrt(horizon * exp.risk.D), 1e-10 * want, `residual at ${horizon} days`)
      const rm = (body._metadata as unknown as { risk_model: Record<string, unknown> }).risk_model
      assert.equal(rm.estimator, 'sample')
      assert.equal(rm.default_estimator, 'ewma_nw')
      assert.equal(rm.horizon_days, horizon)
      assert.match(String(rm.version), /^erm3-book-risk-v\d+$/)
    }
  })

  test('estimator ewma_nw: the book volatility equals exponential weights with Newey-West', async () => {
    const rows = pick(3, 11).map((ticker, i) => ({ ticker, weight: [1, -0.5, 2][i] as number }))
    const { win, holdings } = await book(rows, 252)
    const etfs = new Set<string>([MARKET])
    for (const p of holdings) for (const m of p.stock.b) for (const e of m.keys()) etfs.add(e)
    const names = [...etfs]
    const series = await Promise.all(
      names.map(async (e) => clip5(Array.from(await etfReturns(store, e, win)))),
    )
    const days = [...Array(win.days).keys()].filter((t) => series.every((x) => fin(x[t])))
    const cols = series.map((x) => days.map((t) => x[t] as number))
    const cov = ewmaNwCov(cols)
    const S = (a: number, b: number) => cov[a][b]
    const h = names.map((e) => holdings.reduce((acc, p) => acc + p.weight * (p.stock.b[2].get(e) ?? 0), 0))
    let V = 0
    for (let a = 0; a < names.length; a++) for (let b = 0; b < names.length; b++) V += h[a] * h[b] * S(a, b)
    // Specific variance: each residual's exponentially weighted variance (half-life 42); 252 days ≥ 126: no shrinkage.
    const spec = await Promise.all(holdings.map((p) => ewmaSpecific(store, p.stock, win)))
    holdings.forEach((p, i) => {
      const e = spec[i] as { v: number; m: number; variance: number }
      assert.ok(e.m >= 126, `${p.stock.ticker}: a long history (${e.m} residual returns)`)
      near(e.variance, ewVar(residualsOf(p.stock, win.days), 42), 0, `${p.stock.ticker} own estimate alone`)
      V += p.weight ** 2 * e.variance
    })
    const body = await ok({ type: 'portfolio', portfolio: rows, estimator: 'ewma_nw', horizon: 63 })
    const s = body.snapshot
    for (const p of s.positions) {
      const e = spec[holdings.findIndex((h) => h.stock.ticker === p.ticker)] as { variance: number }
      near(p.residual_vol_ann, Math.sqrt(252 * e.variance), 1e-12, `${p.ticker} residual_vol_ann`)
      assert.equal(p.specific_shrinkage, 0, `${p.ticker}: no shrinkage for a long history`)
    }
    near(s.volatility_ann, Math.sqrt(252 * V), 1e-10 * Math.sqrt(252 * V), 'annualised volatility')
    near(s.forecast?.volatility, Math.sqrt(63 * V), 1e-10 * Math.sqrt(63 * V), '63-day forecast: 63 × daily')
    assert.ok(!s.warnings.some((w) => /eigenvalue|outnumber/.test(w)), s.warnings.join('; '))
    const rm = (body._metadata as unknown as { risk_model: Record<string, unknown> }).risk_model
    assert.equal(rm.estimator, 'ewma_nw')
    assert.match(String(rm.estimator_description), /Newey-West/)
    const sample = await ok({ type: 'portfolio', portfolio: rows, estimator: 'sample' })
    assert.notEqual(sample.snapshot.volatility_ann, s.volatility_ann, 'the estimator changes the figures')
    // No estimator is ewma_nw, the default: the same figures, and _metadata says so.
    const byDefault = await ok({ type: 'portfolio', portfolio: rows, horizon: 63 })
    assert.equal(byDefault.snapshot.volatility_ann, s.volatility_ann, 'the default is ewma_nw')
    const dm = (byDefault._metadata as unknown as { risk_model: Record<string, unknown> }).risk_model
    assert.equal(dm.estimator, 'ewma_nw')
    assert.equal(dm.default_estimator, 'ewma_nw')
  })

  test('ewma_nw shrinks a short history toward its sector peers; sample keeps the sample variance', async () => {
    // A 60-day lookback gives every stock fewer than 126 residual returns: γ = (m − 20)/106.
    for (const ticker of pick(3, 5)) {
      const { win, holdings } = await book([{ ticker, weight: 1 }], 60)
      const st = (holdings[0] as Holding).stock
      const xs = residualsOf(st, win.days)
      const m = xs.length
      assert.ok(m >= 20 && m < 126, `${ticker}: ${m} residual returns`)
      const gamma = (m - 20) / (126 - 20)
      const prior = (await peerVariance(store, win.T, st.sector)).variance
      assert.ok(prior > 0, `${ticker}: a peer prior`)
      const want = gamma * ewVar(xs, 42) + (1 - gamma) * prior
      const body = await ok({ type: 'ticker', ticker, lookback_days: 60, estimator: 'ewma_nw' })
      const p = body.snapshot.positions[0] as PositionOut
      near(p.residual_vol_ann, Math.sqrt(252 * want), 1e-12, `${ticker} residual_vol_ann (shrunk)`)
      near(p.specific_shrinkage, 1 - gamma, 1e-15, `${ticker} specific_shrinkage`)
      const rm = (body as unknown as { _metadata: { risk_model: { estimator_description: string } } })
        ._metadata
      assert.match(rm.risk_model.estimator_description, /shrunk toward the median specific variance/)
      const sample = await ok({ type: 'ticker', ticker, lookback_days: 60, estimator: 'sample' })
      const q = sample.snapshot.positions[0] as PositionOut
      const sv = sampleVar(xs) as number
      near(q.residual_vol_ann, Math.sqrt(252 * sv), 1e-12, `${ticker} sample residual_vol_ann`)
      assert.equal(q.specific_shrinkage, 0, `${ticker}: sample never shrinks`)
    }
  })

  test('an unknown estimator is a 400 that lists the estimators', async () => {
    const r = await snapshotCall(t.app, { type: 'ticker', ticker: modelled[0], estimator: 'garch' }, key)
    assert.equal(r.status, 400, r.text)
    const detail = String((r.json as { detail?: string }).detail)
    for (const e of ['sample', 'ewma', 'ewma_nw']) assert.ok(detail.includes(e), detail)
  })

  test('warnings: more ETFs than observations (singular), a lookback past the window', async () => {
    const rows = modelled.slice(0, 100).map((ticker) => ({ ticker, weight: 1 }))
    const body = await ok({ type: 'portfolio', portfolio: rows, lookback_days: 20, estimator: 'ewma_nw' })
    const n = body.snapshot.lookback.etf_days
    const etfs = new Set(
      body.snapshot.positions.flatMap((p) => [
        p.hedge_etfs.market,
        p.hedge_etfs.sector,
        p.hedge_etfs.subsector,
      ]),
    )
    etfs.delete(null)
    assert.ok(etfs.size > n - 1, `the fixture has ${etfs.size} ETFs in play for ${n} days`)
    const msg = body.snapshot.warnings.find((w) => w.includes('outnumber'))
    assert.ok(msg?.includes(`${etfs.size} ETFs`), body.snapshot.warnings.join('; '))
    const wide = await ok({ type: 'portfolio', portfolio: rows, lookback_days: 252, estimator: 'ewma_nw' })
    assert.ok(!wide.snapshot.warnings.some((w) => w.includes('outnumber')), 'not over 252 days')
    const long = await ok({
      type: 'portfolio',
      portfolio: rows.slice(0, 3),
      lookback_days: 600,
      estimator: 'ewma',
    })
    assert.ok(long.snapshot.lookback.etf_days <= 504, 'ewma reads at most its 504-day window')
    assert.ok(
      long.snapshot.warnings.some((w) => w.includes('reads the last 504 of the 600 lookback days')),
      long.snapshot.warnings.join('; '),
    )
  })

  test('notes flag a residual far from the /metrics basis and a negative layer share, with the reason', async () => {
    const T = store.calendar.length - 1
    let flagged = 0
    for (const ticker of modelled.slice(0, 12)) {
      const body = await ok({ type: 'ticker', ticker, lookback_days: 60 })
      const p = body.snapshot.positions[0] as PositionOut & Record<string, number | null>
      const row = await store.history(store.resolve(ticker), ['vol_23d', 'l3_res_er'], T, T + 1)
      const v = (row.vol_23d as ArrayLike<number>)[0] as number
      const er = (row.l3_res_er as ArrayLike<number>)[0] as number
      const basis = fin(v) && fin(er) && er >= 0 ? v * Math.sqrt(er) : null
      if (basis === null) assert.equal(p.residual_vol_model_ann, null)
      else near(p.residual_vol_model_ann, basis, 1e-15 * basis, `${ticker} residual_vol_model_ann`)
      const notes = (body.snapshot as unknown as { notes: string[] }).notes
      const far = basis !== null && p.residual_vol_ann !== null && Math.abs(p.residual_vol_ann - basis) > 0.05
      assert.equal(
        notes.some((n) => n.includes('Same residual, different windows')),
        far,
        `${ticker} residual note`,
      )
      const split = body.snapshot.variance_decomposition as unknown as Record<string, number | null>
      const negative = ['market', 'sector', 'subsector'].some((k) => (split[k] ?? 0) < 0)
      assert.equal(
        notes.some((n) => n.includes('share of the variance is negative')),
        negative,
        `${ticker} split note`,
      )
      if (far || negative) flagged++
    }
    assert.ok(flagged > 0, 'some one-stock book at lookback 60 is flagged')
  })

  test('/metrics as_of a past day answers the stored row of that day', async () => {
    const T = store.calendar.length - 1 - 200
    const ticker = modelled[1] as string
    const i = store.resolve(ticker)
    const r = await t.app.fastify.inject({
      method: 'GET',
      url: `/metrics/${ticker}?as_of=${store.date(T)}`,
      headers: { authorization: `Bearer ${key}` },
    })
    assert.equal(r.statusCode, 200, r.body.slice(0, 300))
    const b = JSON.parse(r.body) as { teo: string; metrics: Record<string, number | null> }
    assert.equal(b.teo, store.date(T))
    const row = await store.history(i, ['l3_mkt_hr', 'vol_252d_ann', 'l3_res_er'], T, T + 1)
    for (const f of ['l3_mkt_hr', 'vol_252d_ann', 'l3_res_er'])
      assert.equal(
        b.metrics[f],
        fin((row[f] as ArrayLike<number>)[0]) ? (row[f] as ArrayLike<number>)[0] : null,
        f,
      )
    const bad = await t.app.fastify.inject({
      method: 'GET',
      url: `/metrics/${ticker}?as_of=1900-01-02`,
      headers: { authorization: `Bearer ${key}` },
    })
    assert.equal(bad.statusCode, 404)
  })

  test('realised volatility skips days without a return, as /metrics does (one rule)', async () => {
    // A stock with a gap inside the last 252 days: the one-stock snapshot and vol_252d_ann agree.
    const T = store.calendar.length - 1
    let gapped: string | null = null
    for (const ticker of modelled) {
      const h = await store.history(store.resolve(ticker), ['returns_gross'], T - 251, T + 1)
      const r = h.returns_gross as ArrayLike<number>
      let nulls = 0
      for (let i = 0; i < r.length; i++) if (!fin(r[i] as number)) nulls++
      if (nulls > 0 && nulls < 100) {
        gapped = ticker
        break
      }
    }
    assert.ok(gapped, 'the fixture has a stock with a gap in its last 252 days')
    const body = await ok({ type: 'ticker', ticker: gapped, lookback_days: 252 })
    const h = await store.history(store.resolve(gapped), ['returns_gross', 'vol_252d_ann'], T - 251, T + 1)
    const r = Array.from(h.returns_gross as ArrayLike<number>).filter((x) => fin(x))
    const want = Math.sqrt(252 * (sampleVar(r) as number))
    near(body.time_behavior.realized_vol_ann, want, 1e-12 * want, 'realised vol over the non-null days')
    near(
      body.risk_summary.hedge_effectiveness.realized_vol_ann,
      want,
      1e-12 * want,
      'the same in hedge effectiveness',
    )
    const metrics = await t.app.fastify.inject({
      method: 'GET',
      url: `/metrics/${gapped}`,
      headers: { authorization: `Bearer ${key}` },
    })
    const vol = (JSON.parse(metrics.body) as { metrics: { vol_252d_ann: number } }).metrics.vol_252d_ann
    near(body.time_behavior.realized_vol_ann, vol, 1e-12 * want, '/snapshot and /metrics agree')
    const nulls = body.time_behavior.portfolio_return.filter((x) => x === null).length
    assert.ok(nulls > 0, 'a day without a return is null, not 0')
  })

  test('a ticker not in the dataset: the proxy ETF given (else the market ETF) plus a median specific risk', async () => {
    const win = lookbackWindow(store, 252)
    const [a, b] = pick(2, 23) as [string, string]
    const sa = await loadStock(store, store.resolve(a), win)
    const sb = await loadStock(store, store.resolve(b), win)
    assert.ok(sa.covered && sb.covered && sa.sector, 'two stocks with a model, one with a sector')
    const E = sa.sector as string
    const rows = [
      { ticker: a, weight: 1 },
      { ticker: b, weight: -0.5 },
      { ticker: 'QZQZX', weight: 0.75 },
      { ticker: 'qzqzy', weight: 0.5, proxy: E.toLowerCase() },
    ]
    const body = await ok({ type: 'portfolio', portfolio: rows, estimator: 'sample' })
    const s = body.snapshot
    const G = 2.75
    const [wa, wb, wx, wy] = rows.map((r) => r.weight / G) as [number, number, number, number]
    // The direct computation: sample covariance of the ETFs in play over their common days.
    const all = await peerVariance(store, win.T, null)
    const sector = await peerVariance(store, win.T, E)
    assert.ok(all.peers > 0 && sector.peers > 0)
    const legsOf = (q: typeof sa) => q.b.flatMap((m) => [...m.keys()])
    const etfs = [...new Set([MARKET, E, ...legsOf(sa), ...legsOf(sb)])]
    const series = await Promise.all(etfs.map((e) => etfReturns(store, e, win)))
    const days = [...Array(win.days).keys()].filter((t) => series.every((x) => fin(x[t])))
    const cov = new Cov(etfs, sampleCov(series.map((x) => days.map((t) => x[t] as number))))
    const betaE = cov.s(E, MARKET) / cov.s(MARKET, MARKET)
    const h = [0, 1, 2].map((k) => {
      const m = new Map<string, number>()
      const add = (e: string, v: number) => m.set(e, (m.get(e) ?? 0) + v)
      for (const [e, v] of sa.b[k] as Map<string, number>) add(e, wa * v)
      for (const [e, v] of sb.b[k] as Map<string, number>) add(e, wb * v)
      add(MARKET, wx) // unknown, no proxy: exposure 1 to the market ETF at every level
      if (k === 0)
        add(MARKET, wy * betaE) // the sector ETF given: its market beta at L1
      else add(E, wy)
      return m
    })
    const D =
      wa ** 2 * (sa.resVar as number) +
      wb ** 2 * (sb.resVar as number) +
      wx ** 2 * all.variance +
      wy ** 2 * sector.variance
    const Vk = h.map((m) => cov.form(m, m).v)
    const V = (Vk[2] as number) + D
    near(
      s.volatility_ann,
      Math.sqrt(252 * V),
      1e-10 * Math.sqrt(252 * V),
      'volatility with the unknown tickers',
    )
    near(
      s.variance_decomposition.market,
      (Vk[0] as number) / V,
      1e-10,
      'market share (β of the proxy ETF at L1)',
    )
    near(s.variance_decomposition.residual, D / V, 1e-10, 'residual share (the peer medians)')
    near(s.weight_proxied, wx + wy, 1e-15, 'weight_proxied counts the unknown tickers')
    near(s.weight_covered, Math.abs(wa) + Math.abs(wb), 1e-15, 'weight_covered stays honest')
    const x = s.positions.find((p) => p.ticker === 'QZQZX') as PositionOut
    const y = s.positions.find((p) => p.ticker === 'QZQZY') as PositionOut
    for (const [p, want, resVar] of [
      [x, { etf: MARKET, peers: all.peers, peers_of: null, given: false }, all.variance],
      [y, { etf: E, peers: sector.peers, peers_of: E, given: true }, sector.variance],
    ] as const) {
      assert.equal(p.in_dataset, false)
      assert.equal(p.covered, false)
      assert.equal(p.risk_basis, 'proxy')
      assert.deepEqual(p.proxy, want)
      near(p.residual_vol_ann, Math.sqrt(252 * resVar), 1e-12, `${p.ticker} residual_vol_ann`)
      const said = `${p.ticker} is not in the dataset: its risk is proxied by ${want.etf}`
      assert.ok(
        s.warnings.some((w) => w.startsWith(said)),
        s.warnings.join('; '),
      )
    }
    near(y.weight, wy, 1e-15, 'weights by the gross, the unknown ones included')
    assert.deepEqual(s.unresolved, [])
    // No returns of their own: the daily series are the known stocks' alone.
    for (let t = 0; t < win.days; t++) {
      const r = [sa, sb].map((q) => (q.w.returns_gross as ArrayLike<number>)[t] as number)
      const want = (fin(r[0]) ? wa * (r[0] as number) : 0) + (fin(r[1]) ? wb * (r[1] as number) : 0)
      near(body.attribution.gross[t], want, 1e-15, `gross return day ${t}`)
    }
    // Another ETF given (not a sector ETF): exposure 1 to it, the whole universe's median.
    const sub = sa.subsector && sa.subsector !== E ? sa.subsector : null
    if (sub) {
      const z = await ok({
        type: 'portfolio',
        portfolio: [rows[0], { ticker: 'QZQZX', weight: 1, proxy: sub }],
        estimator: 'sample',
      })
      const p = z.snapshot.positions.find((q) => q.ticker === 'QZQZX')
      assert.deepEqual(p?.proxy, { etf: sub, peers: all.peers, peers_of: null, given: true })
    }
    // A proxy on a ticker the dataset knows is ignored, with a warning.
    const known = await ok({ type: 'portfolio', portfolio: [{ ticker: a, weight: 1, proxy: 'SPY' }] })
    assert.ok(known.snapshot.warnings.some((w) => w.includes('proxy SPY is ignored')))
    assert.equal(known.snapshot.positions[0]?.risk_basis, 'model')
  })
})
