import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { parse } from 'csv-parse/sync'
import type { ModelStore } from '../../src/engine/model-store/reader.ts'
import { assertResponseShape, dayMs, debits, readHyparquet } from '../helpers/history-checks.ts'
import {
  type BenchmarkOut,
  type Body,
  BookMath,
  checkBody,
  checkSplit,
  expectedSnapshot,
  fin,
  LEVEL,
  legMap,
  lookbackWindow,
  MARKET,
  modelledTickers,
  near,
  nul,
  type PositionOut,
  rng,
  STRIPS,
  sameLegs,
  snapshotCall,
} from '../helpers/portfolio-math.ts'
import { startTestApp, type TestApp } from '../helpers/test-app.ts'

/**
 * POST /snapshot and GET /data/benchmark/{id} on the synthetic fixture store, against the
 * portfolio risk of docs/methodology.md §13 recomputed in test/helpers/portfolio-math.ts (plain
 * matrix algebra over the stored inputs; nothing from src/engine/model or src/services): weights and
 * share conversion, exposures, covariance, residual variance, the layer split, Euler
 * contributions, the diversification ratio, benchmarks and tracking error, the daily strips and
 * their geometric totals, cumulative return, drawdown and realised volatility. Then the rules:
 * every bad input a free 400/404, duplicates, uncovered positions, tabular forms and the price.
 * The recomputed books ask `estimator: "sample"` (the equal-weight covariance); the default,
 * ewma_nw, is checked against its own recomputation in snapshot-book.test.ts.
 */

describe('POST /snapshot and GET /data/benchmark/{id} (synthetic store)', () => {
  let t: TestApp
  let store: ModelStore
  let account: string
  let key: string
  /** Listed stocks with a model at data_as_of (current ticker, L1 state and a price at T). */
  let modelled: string[]

  before(async () => {
    t = await startTestApp()
    store = t.ctx.models.store('live')
    account = await t.account(200)
    key = await t.key(account, { tier: 'premium' })
    modelled = await modelledTickers(store)
    m = new BookMath(store)
  })
  after(() => t?.close())

  let m: BookMath
  const stock = (ticker: string, lookback: number) => m.stock(ticker, lookback)
  const holdings = (rows: { ticker: string; weight?: number; shares?: number }[], lookback: number) =>
    m.holdings(rows, lookback)
  const benchLegs = (parts: { ticker: string; weight: number }[], lookback: number) =>
    m.benchLegs(parts, lookback)
  const call = (body: Record<string, unknown>, k = key, headers: Record<string, string> = {}) =>
    snapshotCall(t.app, body, k, headers)
  async function ok(body: Record<string, unknown>, k = key): Promise<Body> {
    const r = await call(body, k)
    assert.equal(r.status, 200, `${JSON.stringify(body).slice(0, 300)} → ${r.status} ${r.text.slice(0, 500)}`)
    return r.json as Body
  }
  async function getBenchmark(id: string, k: string | null = key) {
    const res = await t.app.fastify.inject({
      method: 'GET',
      url: `/data/benchmark/${encodeURIComponent(id)}`,
      headers: k ? { authorization: `Bearer ${k}` } : {},
    })
    return { status: res.statusCode, json: JSON.parse(res.body) as Record<string, unknown> }
  }
  const micros = async () => (await t.ctx.accounts.balance(account)).balanceMicros

  test('random portfolios (weights and shares; lookbacks 20, 252, 1000) equal the independent computation', async () => {
    assert.ok(modelled.length >= 15, `${modelled.length} modelled stocks`)
    const rand = rng(16)
    const lookbacks = [20, 252, 1000]
    const sizes: number[] = []
    let uncovered = 0
    for (let c = 0; c < 9; c++) {
      const lookback = lookbacks[c % 3] as number
      const n = 1 + Math.floor(rand() * Math.min(30, modelled.length))
      const pool = [...modelled]
      const picked: string[] = []
      while (picked.length < n) picked.push(pool.splice(Math.floor(rand() * pool.length), 1)[0] as string)
      const byShares = c % 2 === 1
      const rows = picked.map((ticker) =>
        byShares
          ? { ticker, shares: 1 + Math.floor(rand() * 1000) }
          : { ticker, weight: Math.round((0.05 + rand() * 10) * 1000) / 1000 },
      )
      const what = `portfolio ${c} (${n} stocks, ${byShares ? 'shares' : 'weights'}, lookback ${lookback})`
      const body = await ok({
        type: 'portfolio',
        portfolio: rows,
        lookback_days: lookback,
        estimator: 'sample',
      })
      const book = await holdings(rows, lookback)
      const exp = await expectedSnapshot(store, book, lookbackWindow(store, lookback))
      assert.equal(body.metadata.lookback_days, lookback)
      assert.equal(body.snapshot.type, 'portfolio')
      assert.deepEqual(body.snapshot.unresolved, [])
      assertResponseShape('snapshot', body)
      checkBody(store, body, exp, what)
      assert.ok(exp.risk, `${what}: risk figures`)
      sizes.push(n)
      uncovered += exp.book.filter((h) => !h.stock.covered).length
      if (byShares)
        for (const r of rows) {
          const p = body.snapshot.positions.find((x) => x.ticker === r.ticker) as PositionOut
          const s = await stock(r.ticker, lookback)
          assert.equal(p.shares, r.shares, `${what} ${r.ticker} shares echoed`)
          assert.equal(p.price_close, s.price, `${what} ${r.ticker} latest price_close`)
          near(
            p.market_value,
            (r.shares as number) * s.price,
            1e-12 * (r.shares as number) * s.price,
            `${what} market_value`,
          )
        }
    }
    assert.ok(Math.max(...sizes) >= 10 && Math.min(...sizes) <= 5, `portfolio sizes ${sizes}`)
    // Gaps in the last 20 days leave some stocks fewer than 20 residual days: uncovered at lookback 20.
    assert.ok(
      uncovered >= 1,
      'the seeded portfolios include a position uncovered by the 20-residual-day rule',
    )
  })

  test('a one-position portfolio is the ticker itself; type ticker gives the same numbers with ticker_meta', async () => {
    // MSFT: three distinct ETFs; AAPL: its subsector ETF is its sector ETF (legs summed).
    for (const ticker of ['MSFT', 'AAPL']) {
      const lookback = 252
      const s = await stock(ticker, lookback)
      assert.equal(s.level, 3)
      const body = await ok({
        type: 'portfolio',
        portfolio: [{ ticker, weight: 7 }],
        lookback_days: lookback,
        estimator: 'sample',
      })
      const exp = await expectedSnapshot(store, [{ stock: s, weight: 1 }], lookbackWindow(store, lookback))
      checkBody(store, body, exp, `one-position ${ticker}`)
      const p = body.snapshot.positions[0] as PositionOut
      assert.equal(p.weight, 1)
      for (const f of ['l3_mkt_er', 'l3_sec_er', 'l3_sub_er', 'l3_res_er'] as const)
        assert.equal(p[f], nul(s.at[f]), f)
      const want = new Map<string, number>()
      for (const [e, hr] of [
        [MARKET, s.at.l3_mkt_hr],
        [s.sector, s.at.l3_sec_hr],
        [s.subsector, s.at.l3_sub_hr],
      ] as [string, number][])
        want.set(e, (want.get(e) ?? 0) + hr)
      assert.deepEqual(legMap(body.snapshot.hedges.L3), want, `${ticker}: the L3 hedge is its own HRs`)
      // Strips are its own stored decomposition × 1.
      const w = s.w
      for (let d = 0; d < body.attribution.dates.length; d++) {
        if (!fin(w.returns_gross[d])) continue
        assert.equal(body.attribution.gross[d], w.returns_gross[d])
        if (fin(w.l3_fr[d])) {
          assert.equal(body.attribution.market[d], w.l1_fr[d])
          assert.equal(body.attribution.sector[d], w.l2_fr[d])
          assert.equal(body.attribution.subsector[d], w.l3_fr[d])
          assert.equal(body.attribution.residual[d], w.l3_rr[d])
        }
      }
      const tk = await ok({
        type: 'ticker',
        ticker: ticker.toLowerCase(),
        lookback_days: lookback,
        estimator: 'sample',
      })
      assert.equal(tk.snapshot.type, 'ticker')
      checkBody(store, tk, exp, `type ticker ${ticker}`)
      assert.equal(tk.snapshot.volatility_ann, body.snapshot.volatility_ann)
      assert.deepEqual(tk.snapshot.variance_decomposition, body.snapshot.variance_decomposition)
      assert.deepEqual(tk.snapshot.hedges, body.snapshot.hedges)
      assert.deepEqual(tk.attribution, body.attribution)
      assert.deepEqual(tk.time_behavior, body.time_behavior)
      assert.ok(tk.snapshot.ticker_meta, 'type ticker has ticker_meta')
      assert.equal(tk.snapshot.ticker_meta.ticker, ticker)
      assert.deepEqual(tk.snapshot.ticker_meta.factors, [...new Set([MARKET, s.sector, s.subsector])])
      assert.equal(tk.snapshot.ticker_meta.recommended_level, LEVEL(s.recommended))
      assert.equal(body.snapshot.ticker_meta, undefined, 'a portfolio has no ticker_meta')
    }
  })

  test('benchmarks: SPY, market, a sector ETF, a mix; tracking error recomputed; a custom mix equal to the book', async () => {
    const lookback = 252
    const win = lookbackWindow(store, lookback)
    const rows = [
      { ticker: 'MSFT', weight: 30 },
      { ticker: 'NVDA', weight: 25 },
      { ticker: 'JPM', weight: 20 },
      { ticker: 'GE', weight: 15 },
      { ticker: 'TSLA', weight: 10 },
    ]
    const book = await holdings(rows, lookback)
    const cases: [string, { ticker: string; weight: number }[], string, string][] = [
      ['SPY', [{ ticker: 'SPY', weight: 1 }], 'etf', 'bm_etf_spy'],
      ['market', [{ ticker: 'SPY', weight: 1 }], 'etf', 'bm_etf_spy'],
      ['XLK', [{ ticker: 'XLK', weight: 1 }], 'sector_etf', 'bm_sector_xlk'],
      [
        '60:SPY,40:XLK',
        [
          { ticker: 'SPY', weight: 0.6 },
          { ticker: 'XLK', weight: 0.4 },
        ],
        'mix',
        '',
      ],
      // A custom mix: one stock shared with the book, one not (the active residual runs over both).
      [
        '50:MSFT,50:AAPL',
        [
          { ticker: 'AAPL', weight: 0.5 },
          { ticker: 'MSFT', weight: 0.5 },
        ],
        'custom',
        '',
      ],
    ]
    const ids = new Map<string, string>()
    const kinds = new Map<string, string>()
    for (const [expr, parts, kind, id] of cases) {
      const what = `benchmark ${expr}`
      const body = await ok({
        type: 'portfolio',
        portfolio: rows,
        lookback_days: lookback,
        benchmark: expr,
        estimator: 'sample',
      })
      const exp = await expectedSnapshot(store, book, win, await benchLegs(parts, lookback))
      checkBody(store, body, exp, what)
      const b = body.snapshot.benchmark as BenchmarkOut
      assert.ok(b, `${what} resolves`)
      assert.equal(b.kind, kind, `${what} kind`)
      if (id) assert.equal(b.id, id, `${what} id`)
      else assert.match(b.id, new RegExp(`^bm_${kind}_`))
      assert.equal(body.snapshot.benchmark_context_id, b.id)
      assert.equal(body.metadata.benchmark_context_id, b.id)
      assert.equal(body.metadata.benchmark, expr, `${what} echoed raw`)
      ids.set(expr, b.id)
      kinds.set(expr, kind)
      const comps = new Map(b.components.map((c) => [c.ticker, c.weight]))
      assert.deepEqual(comps, new Map(parts.map((p) => [p.ticker, p.weight])))
      // Tracking error, its split, active exposures, the benchmark's own risk.
      const eb = exp.bench
      assert.ok(eb && exp.risk)
      const act = body.risk_summary.active
      assert.ok(act, `${what}: active block`)
      near(
        act.tracking_error_ann,
        eb.te,
        (252 * 1e-11 * eb.teScale) / (2 * eb.te) + 1e-15,
        `${what} tracking_error_ann`,
      )
      const tv = eb.te ** 2 / 252
      const tol = (1e-11 * eb.teScale) / tv + 1e-14
      for (const k of ['market', 'sector', 'subsector', 'residual', 'systematic'] as const)
        near(act.active_split[k], eb.activeSplit[k], tol, `${what} active_split ${k}`)
      for (const e of new Set([...eb.active[2].keys(), ...act.active_exposures.map((x) => x.etf)])) {
        const row = act.active_exposures.find((x) => x.etf === e)
        const want = eb.active[2].get(e) ?? 0
        if (!row) {
          assert.ok(Math.abs(want) < 1e-15, `${what}: active exposure row ${e}`)
          continue
        }
        near(row.active, want, 1e-13, `${what} active exposure ${e}`)
        near(row.portfolio, exp.risk.h[2].get(e) ?? 0, 1e-13, `${what} portfolio exposure ${e}`)
        near(row.benchmark, eb.risk.h[2].get(e) ?? 0, 1e-13, `${what} benchmark exposure ${e}`)
      }
      const br = body.risk_summary.benchmark_risk
      assert.ok(br, `${what}: benchmark_risk`)
      near(
        br.volatility_ann,
        eb.risk.vol,
        (252 * 1e-11 * eb.risk.scale) / (2 * eb.risk.vol),
        `${what} benchmark vol`,
      )
      checkSplit(br.variance_decomposition, eb.risk, `${what} benchmark split`)
      sameLegs(legMap(br.hedges_L3), eb.risk.h[2], 1e-13, `${what} benchmark hedges_L3`)
      assertResponseShape('snapshot', body)
      // Benchmark daily series.
      const tb = body.time_behavior
      assert.ok(
        tb.benchmark_return && tb.active_return && tb.benchmark_cumulative_return,
        `${what}: benchmark series`,
      )
      let bcum = 1
      for (let d = 0; d < win.days; d++) {
        bcum *= 1 + (eb.daily[d] as number)
        near(
          tb.benchmark_cumulative_return[d],
          bcum - 1,
          1e-12 * bcum,
          `${what} benchmark_cumulative_return ${tb.dates[d]}`,
        )
      }
      for (let d = 0; d < win.days; d++) {
        const got = tb.benchmark_return[d]
        if (got === null || got === undefined) continue
        near(got, eb.daily[d] as number, 1e-15, `${what} benchmark_return ${tb.dates[d]}`)
        const pr = tb.portfolio_return[d]
        if (pr !== null && pr !== undefined)
          near(tb.active_return[d], pr - (got as number), 1e-15, `${what} active_return ${tb.dates[d]}`)
      }
      if (expr === '60:SPY,40:XLK') {
        // Level 1 of the mix: 0.6 + 0.4·β_XLK on SPY, β = cov(XLK, SPY)/var(SPY) over the ETF days.
        const beta = eb.beta.get('XLK') as number
        assert.ok(beta > 0.3 && beta < 3, `β_XLK ${beta}`)
        near(eb.risk.h[0].get(MARKET), 0.6 + 0.4 * beta, 1e-15, 'the test’s own L1 mix exposure')
      }
    }
    assert.equal(ids.get('SPY'), ids.get('market'))
    // The same mix written differently has the same id.
    for (const expr of ['40:XLK,60:SPY', '60:spy, 40:xlk', ' 60 : SPY , 40 : XLK ']) {
      const r = await call({ type: 'portfolio', portfolio: rows, benchmark: expr })
      if (expr.startsWith(' ') && r.status === 400) continue // spaces around ':' may be refused
      assert.equal(r.status, 200, `${expr}: ${r.text.slice(0, 300)}`)
      assert.equal((r.json as Body).snapshot.benchmark_context_id, ids.get('60:SPY,40:XLK'), expr)
      assert.equal((r.json as Body).metadata.benchmark, expr, 'echoed as sent')
    }
    // A custom mix identical to the book: zero active risk.
    const same = rows.map((r) => `${r.weight}:${r.ticker}`).join(',')
    const body = await ok({
      type: 'portfolio',
      portfolio: rows,
      lookback_days: lookback,
      benchmark: same,
      estimator: 'sample',
    })
    assert.equal(body.snapshot.benchmark?.kind, 'custom')
    assert.match(body.snapshot.benchmark_context_id ?? '', /^bm_custom_/)
    const act = body.risk_summary.active
    assert.ok(act)
    const exp = await expectedSnapshot(
      store,
      book,
      win,
      await benchLegs(
        rows.map((r) => ({ ticker: r.ticker, weight: r.weight / 100 })),
        lookback,
      ),
    )
    assert.ok(
      exp.bench && exp.bench.te < 1e-7,
      `the independent TE of a book against itself: ${exp.bench?.te}`,
    )
    near(act.tracking_error_ann, 0, 1e-7, 'custom mix equal to the book: tracking error')
    for (const e of act.active_exposures) near(e.active, 0, 1e-14, `active exposure ${e.etf}`)
    for (const w of act.active_weights) near(w.active, 0, 1e-14, `active weight ${w.ticker}`)
    // An unresolvable benchmark: echoed, null id, a warning.
    for (const expr of ['NOPEX', 'GLD']) {
      const u = await ok({ type: 'portfolio', portfolio: rows, benchmark: expr })
      assert.equal(u.snapshot.benchmark, null, expr)
      assert.equal(u.snapshot.benchmark_context_id, null, expr)
      assert.equal(u.metadata.benchmark, expr)
      assert.equal(u.metadata.benchmark_context_id, null)
      assert.ok(
        u.snapshot.warnings.some((w) => w.includes(expr)),
        `${expr}: a warning names it: ${u.snapshot.warnings.join('; ')}`,
      )
      assert.equal(u.risk_summary.active, null)
    }
    // GET /data/benchmark/{id}: free, the same components; expressions too; unknown → 404.
    const before = await micros()
    for (const [expr, id] of ids) {
      const r = await getBenchmark(id)
      assert.equal(r.status, 200, `${id}: ${JSON.stringify(r.json)}`)
      const j = r.json as {
        id: string
        kind: string
        methodology: string
        components: { ticker: string; weight: number }[]
        inception: string | null
        data_as_of: string
      }
      assertResponseShape('getBenchmark', j)
      assert.equal(j.id, id)
      assert.equal(j.kind, kinds.get(expr))
      // The specification's name, and the earlier one kept while deprecated.
      assert.equal((j as { benchmark_kind?: string }).benchmark_kind, kinds.get(expr))
      assert.ok(j.methodology.length > 40, 'methodology text')
      near(
        j.components.reduce((a, c) => a + c.weight, 0),
        1,
        1e-12,
        `${id} component weights sum to 1`,
      )
      assert.ok(j.inception === null || /^\d{4}-\d{2}-\d{2}$/.test(j.inception), `inception ${j.inception}`)
      assert.equal(j.data_as_of, store.dataAsOf)
      const viaExpr = await getBenchmark(expr)
      assert.equal(viaExpr.status, 200, expr)
      assert.equal(viaExpr.json.id, id, `${expr} as the path resolves to the same id`)
    }
    const custom = await getBenchmark(body.snapshot.benchmark_context_id as string)
    assert.equal(custom.status, 200)
    assert.equal(custom.json.kind, 'custom')
    assert.deepEqual(
      new Map(
        (custom.json.components as { ticker: string; weight: number }[]).map((c) => [c.ticker, c.weight]),
      ),
      new Map(rows.map((r) => [r.ticker, r.weight / 100])),
    )
    for (const bad of ['bm_nope', 'bm_mix_!!', 'bm_sector_zzzz'])
      assert.equal((await getBenchmark(bad)).status, 404, `${bad} is unknown`)
    assert.equal((await getBenchmark('bm_etf_spy', null)).status, 401, 'needs a key')
    assert.equal(await micros(), before, 'GET /data/benchmark is free')
  })

  test('bad input: each a 400 (or 404) that says why, and nothing is charged', async () => {
    const before = await micros()
    const p = (portfolio: unknown[], extra: Record<string, unknown> = {}) => ({
      type: 'portfolio',
      portfolio,
      ...extra,
    })
    const many = (n: number) =>
      Array.from({ length: n }, (_, i) => ({ ticker: modelled[i % modelled.length], weight: 1 }))
    const cases: [string, Record<string, unknown>, number][] = [
      [
        'weight and shares mixed across rows',
        p([
          { ticker: 'MSFT', weight: 1 },
          { ticker: 'NVDA', shares: 10 },
        ]),
        400,
      ],
      ['weight and shares in one row', p([{ ticker: 'MSFT', weight: 1, shares: 10 }]), 400],
      ['neither weight nor shares', p([{ ticker: 'MSFT' }]), 400],
      ['weight 0', p([{ ticker: 'MSFT', weight: 0 }]), 400],
      ['shares 0', p([{ ticker: 'MSFT', shares: 0 }]), 400],
      [
        'weights netting to zero',
        p([
          { ticker: 'MSFT', weight: 1 },
          { ticker: 'MSFT', weight: -1 },
        ]),
        400,
      ],
      ['horizon 5', p([{ ticker: 'MSFT', weight: 1 }], { horizon: 5 }), 400],
      ['estimator unknown', p([{ ticker: 'MSFT', weight: 1 }], { estimator: 'magic' }), 400],
      ['as_of not a date', p([{ ticker: 'MSFT', weight: 1 }], { as_of: '2020-13-45' }), 400],
      ['as_of before the store', p([{ ticker: 'MSFT', weight: 1 }], { as_of: '1900-01-02' }), 404],
      ['0 positions', p([]), 400],
      ['101 positions', p(many(101)), 400],
      ['lookback_days 19', p([{ ticker: 'MSFT', weight: 1 }], { lookback_days: 19 }), 400],
      ['lookback_days 2001', p([{ ticker: 'MSFT', weight: 1 }], { lookback_days: 2001 }), 400],
      ['mode rolling', p([{ ticker: 'MSFT', weight: 1 }], { mode: 'rolling' }), 400],
      ['type portfolio without portfolio', { type: 'portfolio' }, 400],
      ['type ticker without ticker', { type: 'ticker' }, 400],
      [
        'type ticker with portfolio',
        { type: 'ticker', ticker: 'MSFT', portfolio: [{ ticker: 'MSFT', weight: 1 }] },
        400,
      ],
      ['unknown field', p([{ ticker: 'MSFT', weight: 1 }], { foo: 1 }), 400],
      ['unknown field in a row', p([{ ticker: 'MSFT', weight: 1, side: 'long' }]), 400],
      [
        'mix weights not summing to 100',
        p([{ ticker: 'MSFT', weight: 1 }], { benchmark: '60:SPY,30:XLK' }),
        400,
      ],
      [
        'all tickers unknown',
        p([
          { ticker: 'NOPEX', weight: 1 },
          { ticker: 'ZZZZQ', weight: 2 },
        ]),
        404,
      ],
      ['type ticker unknown', { type: 'ticker', ticker: 'NOPEX' }, 404],
      [
        'proxy not an ETF',
        p([
          { ticker: 'MSFT', weight: 1 },
          { ticker: 'NOPEX', weight: 1, proxy: 'NVDA' },
        ]),
        400,
      ],
      ['proxy unknown', p([{ ticker: 'NOPEX', weight: 1, proxy: 'NOPEY' }]), 400],
      ['proxy malformed', p([{ ticker: 'NOPEX', weight: 1, proxy: 'a/b' }]), 400],
    ]
    for (const [what, body, status] of cases) {
      const r = await call(body)
      assert.equal(r.status, status, `${what}: ${r.status} ${r.text.slice(0, 300)}`)
      const j = r.json as { detail?: string; title?: string }
      assert.ok(
        typeof j?.detail === 'string' && j.detail.length > 10,
        `${what}: a clear message (${r.text.slice(0, 200)})`,
      )
    }
    assert.equal(await micros(), before, 'no 4xx is charged')
    // Some unknown: 200, a position priced by a proxy (never zero-risk cash), charged once.
    const r = await call(
      p([
        { ticker: 'MSFT', weight: 1 },
        { ticker: 'NOPEX', weight: 1 },
        { ticker: 'NVDA', weight: 2 },
      ]),
    )
    assert.equal(r.status, 200, r.text.slice(0, 300))
    const body = r.json as Body
    assert.deepEqual(body.snapshot.unresolved, [])
    assert.deepEqual(body.snapshot.positions.map((x) => x.ticker).sort(), ['MSFT', 'NOPEX', 'NVDA'])
    const nopex = body.snapshot.positions.find((x) => x.ticker === 'NOPEX')
    assert.equal(nopex?.in_dataset, false)
    assert.equal(nopex?.risk_basis, 'proxy')
    near(
      body.snapshot.positions.find((x) => x.ticker === 'NVDA')?.weight,
      2 / 4,
      1e-15,
      'weights over every position, the unknown one included',
    )
    assert.equal(before - (await micros()), 250_000, 'charged once, 0.25 USD')
    // Shares of an unknown ticker cannot be priced: listed in unresolved, the rest analysed.
    const s = await call(
      p([
        { ticker: 'MSFT', shares: 10 },
        { ticker: 'NOPEX', shares: 5 },
      ]),
    )
    assert.equal(s.status, 200, s.text.slice(0, 300))
    const sb = s.json as Body
    assert.deepEqual(
      sb.snapshot.unresolved.map((u) => [u.ticker, u.code]),
      [['NOPEX', 'TICKER_NOT_FOUND']],
    )
    assert.deepEqual(
      sb.snapshot.positions.map((x) => x.ticker),
      ['MSFT'],
    )
  })

  test('duplicates are summed with a warning; an uncovered position keeps its weight out of the risk', async () => {
    const lookback = 252
    const win = lookbackWindow(store, lookback)
    const rows = [
      { ticker: 'MSFT', weight: 1 },
      { ticker: 'NVDA', weight: 2 },
      { ticker: 'msft', weight: 3 },
    ]
    const body = await ok({
      type: 'portfolio',
      portfolio: rows,
      lookback_days: lookback,
      estimator: 'sample',
    })
    assert.deepEqual(
      body.snapshot.positions.map((x) => x.ticker),
      ['MSFT', 'NVDA'],
      'one MSFT, the largest first',
    )
    assert.ok(
      body.snapshot.warnings.some((w) => w.includes('MSFT')),
      `a warning names the duplicate: ${body.snapshot.warnings.join('; ')}`,
    )
    const book = await holdings(
      [
        { ticker: 'MSFT', weight: 4 },
        { ticker: 'NVDA', weight: 2 },
      ],
      lookback,
    )
    checkBody(store, body, await expectedSnapshot(store, book, win), 'duplicates')
    // WP was delisted in 2020: no model at data_as_of.
    const wp = await stock('WP', lookback)
    assert.equal(wp.covered, false, 'the fixture’s WP has no state at T')
    const withWp = await ok({
      type: 'portfolio',
      portfolio: [
        { ticker: 'MSFT', weight: 3 },
        { ticker: 'WP', weight: 1 },
      ],
      lookback_days: lookback,
      estimator: 'sample',
    })
    const wpBook = await holdings(
      [
        { ticker: 'MSFT', weight: 3 },
        { ticker: 'WP', weight: 1 },
      ],
      lookback,
    )
    checkBody(store, withWp, await expectedSnapshot(store, wpBook, win), 'with an uncovered WP')
    near(withWp.snapshot.weight_covered, 0.75, 1e-15, 'weight_covered')
    const p = withWp.snapshot.positions.find((x) => x.ticker === 'WP')
    assert.ok(p && !p.covered && p.weight === 0.25 && p.l3_mkt_hr === null)
  })

  test('tabular forms: csv and parquet of positions, attribution and time_behavior equal the JSON', async () => {
    const req = {
      type: 'portfolio',
      portfolio: [
        { ticker: 'MSFT', shares: 100 },
        { ticker: 'JPM', shares: 40 },
        { ticker: 'TSLA', shares: 250 },
      ],
      lookback_days: 60,
    }
    const json = await ok(req)
    const num = (v: unknown) => (v === '' || v === null || v === undefined ? null : Number(v))
    const dateOf = (v: unknown) =>
      typeof v === 'number' ? v : typeof v === 'string' ? dayMs(v.slice(0, 10)) : v
    for (const format of ['csv', 'parquet'] as const) {
      const rowsOf = async (table: string): Promise<Record<string, unknown>[]> => {
        const r = await call({ ...req, format, table })
        assert.equal(r.status, 200, `${format} ${table}: ${r.text.slice(0, 300)}`)
        if (format === 'csv') {
          assert.match(r.headers['content-type'] ?? '', /csv/)
          return parse(r.text, { columns: true }) as Record<string, string>[]
        }
        assert.match(r.headers['content-type'] ?? '', /parquet|octet/)
        return (await readHyparquet(r.bytes)) as Record<string, unknown>[]
      }
      const pos = await rowsOf('positions')
      assert.equal(pos.length, json.snapshot.positions.length, `${format} positions rows`)
      for (const [i, row] of pos.entries()) {
        const p = json.snapshot.positions[i] as PositionOut
        assert.equal(row.ticker, p.ticker, `${format} positions order`)
        for (const f of [
          'weight',
          'shares',
          'price_close',
          'l3_mkt_hr',
          'l3_sec_hr',
          'l3_sub_hr',
          'vol_23d',
        ] as const) {
          if (!(f in row)) continue
          const want = p[f]
          const got = num(row[f])
          if (want === null) assert.equal(got, null, `${format} ${p.ticker} ${f}`)
          else near(got, want, 1e-15 * Math.abs(want), `${format} ${p.ticker} ${f}`)
        }
        assert.ok('weight' in row, `${format} positions table has weight`)
      }
      const att = await rowsOf('attribution')
      assert.equal(att.length, json.attribution.dates.length, `${format} attribution rows`)
      for (const [d, row] of att.entries()) {
        assert.equal(
          dateOf(row.date),
          dayMs(json.attribution.dates[d] as string),
          `${format} attribution date`,
        )
        for (const n of STRIPS)
          assert.equal(num(row[n]), json.attribution[n][d], `${format} ${n} ${row.date}`)
      }
      const tb = await rowsOf('time_behavior')
      assert.equal(tb.length, json.time_behavior.dates.length, `${format} time_behavior rows`)
      for (const [d, row] of tb.entries()) {
        assert.equal(dateOf(row.date), dayMs(json.time_behavior.dates[d] as string))
        for (const n of ['portfolio_return', 'cumulative_return', 'drawdown'] as const)
          assert.equal(num(row[n]), json.time_behavior[n][d], `${format} ${n} ${row.date}`)
      }
    }
  })

  test('price: a 200 debits exactly 0.25 USD; an identical repeat is a free cache HIT', async () => {
    const acct = await t.account(1)
    const k = await t.key(acct)
    const req = {
      type: 'portfolio',
      portfolio: [
        { ticker: 'GE', weight: 1 },
        { ticker: 'V', weight: 1 },
      ],
      lookback_days: 100,
    }
    const first = await call(req, k)
    assert.equal(first.status, 200, first.text.slice(0, 300))
    assert.equal(first.headers['x-api-cost-usd'], '0.25')
    assert.equal((first.json as Body)._agent.cost_usd, 0.25)
    assert.equal((await t.ctx.accounts.balance(acct)).balanceMicros, 750_000)
    const again = await call(req, k)
    assert.equal(again.status, 200)
    assert.equal(again.headers['x-api-cost-usd'], '0')
    assert.equal((again.json as Body)._agent.cost_usd, 0)
    assert.equal((again.json as Body)._agent.cache_status, 'HIT')
    const forced = await call(req, k, { 'cache-control': 'no-cache' })
    assert.equal(forced.status, 200)
    assert.equal(forced.headers['x-api-cost-usd'], '0.25', 'no-cache recomputes and is charged')
    assert.deepEqual(
      (await debits(t, acct)).map(([x]) => -x),
      [250_000, 250_000],
    )
    // A type ticker costs the same.
    const tk = await call({ type: 'ticker', ticker: 'GE' }, k)
    assert.equal(tk.status, 200)
    assert.equal((await t.ctx.accounts.balance(acct)).balanceMicros, 250_000)
  })
})
