import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { startTestApp, type TestApp } from '../helpers/test-app.ts'
import {
  checkCsv,
  checkParquet,
  type ExpectedColumn,
  expectedWindow,
  raw,
  stocks,
} from './analytics-helpers.ts'

type Num = number | null
const n = (v: number | undefined): Num => (v === undefined || Number.isNaN(v) ? null : v)

describe('POST /batch/lstar and POST /batch/analyze', () => {
  let t: TestApp
  before(async () => {
    t = await startTestApp()
  })
  after(() => t?.close())

  /** A fresh funded account and key, so its ledger holds only this test's debits. */
  const fresh = async () => {
    const account = await t.account(5)
    return { account, key: await t.key(account) }
  }
  const debits = async (account: string) =>
    (await t.ctx.accounts.entries(account, { from: 0, to: Date.now() + 1, limit: 1000 }))
      .filter((e) => e.kind === 'debit')
      .map((e) => Math.abs(e.amountMicros))

  test('batch lstar: per-ticker status, duplicates once, series = GET /lstar, 0.005 per success', async () => {
    const { account, key } = await fresh()
    const store = t.ctx.models.store('live')
    const [a, b, c] = stocks(store, 3)
    assert.ok(a && b && c)
    const tickers = [a.ticker, ` ${a.ticker.toLowerCase()} `, b.ticker, c.ticker, 'ZZZZQ', '$$$']
    const r = await t.client.call('batchLstar', { key, body: { tickers, years: 2, threshold: 0.02 } })
    const body = r.ok()
    assert.deepEqual(Object.keys(body.results).sort(), [a.ticker, b.ticker, c.ticker, 'ZZZZQ', '$$$'].sort())
    assert.equal(body.succeeded, 3)
    assert.equal(body.failed, 2)
    assert.equal(body.threshold_used, 0.02)
    for (const s of [a, b, c]) {
      const one = (
        await t.client.call('getLstar', { key, query: { ticker: s.ticker, years: 2, threshold: 0.02 } })
      ).ok()
      const got = body.results[s.ticker]
      assert.ok(got?.status === 'ok')
      const { _metadata, _agent, threshold_used, ...series } = one
      assert.deepEqual(got, { status: 'ok', ...series })
    }
    assert.deepEqual(
      { ...body.results.ZZZZQ, detail: '', suggestions: [] },
      { status: 'error', code: 'TICKER_NOT_FOUND', detail: '', suggestions: [] },
    )
    assert.equal(body.results.$$$?.status === 'error' && body.results.$$$.code, 'INVALID_TICKER')
    assert.equal(r.headers['x-api-cost-usd'], '0.015')
    assert.equal(body._agent.cost_usd, 0.015)
    // 3 successes at 0.005, then 3 single GET /lstar at 0.02.
    assert.deepEqual((await debits(account)).sort(), [15_000, 20_000, 20_000, 20_000].sort())
  })

  test('batch lstar: one success costs the 0.01 minimum; none → 404/400 and no charge', async () => {
    const { account, key } = await fresh()
    const [a] = stocks(t.ctx.models.store('live'), 1)
    assert.ok(a)
    const one = await t.client.call('batchLstar', { key, body: { tickers: [a.ticker, 'NOPEQ'] } })
    assert.equal(one.ok()._agent.cost_usd, 0.01)
    const none = await t.client.call('batchLstar', { key, body: { tickers: ['NOPEQ', '$$$'] } })
    assert.equal(none.status, 404)
    const p = none.json as { code: string; results: Record<string, { code: string }> }
    assert.equal(p.code, 'TICKER_NOT_FOUND')
    assert.equal(p.results.$$$?.code, 'INVALID_TICKER')
    const invalid = await t.client.call('batchLstar', { key, body: { tickers: ['$$$', '%%'] } })
    assert.equal(invalid.status, 400)
    assert.equal((invalid.json as { code: string }).code, 'INVALID_TICKER')
    const analyze = await t.client.call('batchAnalyze', { key, body: { tickers: ['NOPEQ'] } })
    assert.equal(analyze.status, 404)
    assert.deepEqual(await debits(account), [10_000])
  })

  test('cursor walk: every ticker exactly once; each page charged for its successes, a re-read free', async () => {
    const { account, key } = await fresh()
    const found = stocks(t.ctx.models.store('live'), 6).map((x) => x.ticker)
    // Two unknown tickers side by side: with limit 2 they fill a page of their own.
    const asked = [found[0], found[1], 'NOPEQ', 'NOPEZ', found[2], found[3], found[4], found[5], found[0]]
    for (const [op, price] of [
      ['batchAnalyze', 5_000],
      ['batchLstar', 5_000],
    ] as const) {
      const seen: string[] = []
      const charged: number[] = []
      let cursor: string | undefined
      let pages = 0
      for (;;) {
        const body = { tickers: asked, years: 1, limit: 2, ...(cursor ? { cursor } : {}) }
        const r = await t.client.call(op, { key, body })
        const b = r.ok() as {
          results: Record<string, { status: string }>
          total: number
          next_cursor: string | null
          succeeded: number
          _agent: { cost_usd: number }
        }
        assert.equal(b.total, 8, op)
        seen.push(...Object.keys(b.results))
        charged.push(Math.round(b._agent.cost_usd * 1e6))
        pages++
        if (cursor) {
          // The same page again is the same request: free.
          const again = (await t.client.call(op, { key, body })).ok()
          assert.equal(again._agent.cost_usd, 0)
        }
        if (b.next_cursor === null) break
        cursor = b.next_cursor
      }
      assert.equal(pages, 4, op)
      assert.deepEqual(seen, [...new Set(asked)], `${op}: every distinct ticker once, in the order asked`)
      // The page of two unknown tickers costs nothing; batch lstar's minimum (0.01) is per page.
      const expected =
        op === 'batchLstar' ? [10_000, 0, 10_000, 10_000] : [2 * price, 0, 2 * price, 2 * price]
      assert.deepEqual(charged, expected, op)
    }
    const ledger = await debits(account)
    assert.equal(
      ledger.reduce((a, x) => a + x, 0),
      30_000 + 30_000,
    )
    // A cursor with other parameters is a 400 naming it.
    const first = (await t.client.call('batchAnalyze', { key, body: { tickers: asked, limit: 2 } })).ok()
    const other = await t.client.call('batchAnalyze', {
      key,
      body: { tickers: asked, limit: 2, years: 2, cursor: first.next_cursor ?? '' },
    })
    assert.equal(other.status, 400)
    assert.match(other.text, /cursor/)
  })

  test('more than 100 distinct tickers → 400 TOO_MANY_TICKERS (duplicates count once); free', async () => {
    const { account, key } = await fresh()
    const many = Array.from({ length: 101 }, (_, i) => `T${i}`)
    for (const op of ['batchLstar', 'batchAnalyze'] as const) {
      const r = await t.client.call(op, { key, body: { tickers: many } })
      assert.equal(r.status, 400, op)
      assert.equal((r.json as { code: string }).code, 'TOO_MANY_TICKERS')
    }
    // 101 entries, 100 distinct: accepted (all unknown here, so 404 rather than 400).
    const dup = await t.client.call('batchLstar', { key, body: { tickers: [...many.slice(0, 100), 't0'] } })
    assert.equal((dup.json as { code: string }).code, 'TICKER_NOT_FOUND')
    assert.deepEqual(await debits(account), [])
  })

  test('batch lstar tabular: one long table of the tickers that succeeded', async () => {
    const { key } = await fresh()
    const [a, b] = stocks(t.ctx.models.store('live'), 2)
    assert.ok(a && b)
    const json = (
      await t.client.call('batchLstar', { key, body: { tickers: [a.ticker, 'NOPEQ', b.ticker] } })
    ).ok()
    const cols: ExpectedColumn[] = [
      { name: 'ticker', kind: 'text', values: [] },
      { name: 'date', kind: 'date', values: [] },
      { name: 'lstar', kind: 'text', values: [] },
      ...[
        'market_hr',
        'sector_hr',
        'subsector_hr',
        'total_er',
        'residual_return',
        'l2_sector_er',
        'l3_subsector_er',
      ].map((name): ExpectedColumn => ({ name, kind: 'double', values: [] })),
    ]
    for (const s of [a, b]) {
      const r = json.results[s.ticker]
      assert.ok(r?.status === 'ok')
      for (const c of cols) {
        const v =
          c.name === 'ticker'
            ? r.dates.map(() => s.ticker)
            : c.name === 'date'
              ? r.dates
              : (r[c.name as 'lstar'] ?? [])
        c.values.push(...v)
      }
    }
    const body = { tickers: [a.ticker, 'NOPEQ', b.ticker] }
    const pq = await raw(t, 'POST', '/batch/lstar', key, { ...body, format: 'parquet' })
    assert.equal(pq.status, 200, pq.text)
    assert.match(pq.headers['content-disposition'] ?? '', /filename="batch-lstar_2-tickers_1y\.parquet"/)
    await checkParquet(pq.bytes, cols)
    const csv = await raw(t, 'POST', '/batch/lstar', key, body, { accept: 'text/csv' })
    checkCsv(csv.text, cols)
    assert.equal((await raw(t, 'POST', '/batch/lstar', key, { ...body, format: 'xml' })).status, 406)
  })

  test('batch analyze: returns, hedge_ratios, full_metrics and l3_decomposition equal their sources', async () => {
    const { account, key } = await fresh()
    const store = t.ctx.models.store('live')
    const [a, b] = stocks(store, 2)
    assert.ok(a && b)
    const all = ['returns', 'hedge_ratios', 'full_metrics', 'l3_decomposition'] as const
    const body = (
      await t.client.call('batchAnalyze', {
        key,
        body: { tickers: [a.ticker, b.ticker, 'NOPEQ'], metrics: [...all], years: 2 },
      })
    ).ok()
    assert.deepEqual(body.metrics, all)
    assert.equal(body.succeeded, 2)
    for (const s of [a, b]) {
      const r = body.results[s.ticker]
      assert.ok(r?.status === 'ok')
      const { from, to } = await expectedWindow(store, s.index, 2)
      const h = await store.history(
        s.index,
        ['returns_gross', 'l3_mkt_hr', 'l3_sec_hr', 'l3_sub_hr'],
        from,
        to,
      )
      const col = (f: string) => Array.from(h[f] as Float64Array, (x) => n(x))
      assert.deepEqual(r.returns, {
        dates: Array.from({ length: to - from }, (_, i) => store.date(from + i)),
        values: col('returns_gross'),
        l1: col('l3_mkt_hr'),
        l2: col('l3_sec_hr'),
        l3: col('l3_sub_hr'),
      })
      const m = (await t.client.call('getMetrics', { key, params: { ticker: s.ticker } })).ok()
      // MetricsV3 as GET /metrics serves it, plus the specification's long names of the level fields.
      const mm = m.metrics as Record<string, unknown>
      assert.deepEqual(r.full_metrics, {
        ...mm,
        l1_market_hr: mm.l1_mkt_hr,
        l1_market_er: mm.l1_mkt_er,
        l1_residual_er: mm.l1_res_er,
        l2_market_hr: mm.l2_mkt_hr,
        l2_sector_hr: mm.l2_sec_hr,
        l2_market_er: mm.l2_mkt_er,
        l2_sector_er: mm.l2_sec_er,
        l2_residual_er: mm.l2_res_er,
        l3_market_hr: mm.l3_mkt_hr,
        l3_sector_hr: mm.l3_sec_hr,
        l3_subsector_hr: mm.l3_sub_hr,
        l3_market_er: mm.l3_mkt_er,
        l3_sector_er: mm.l3_sec_er,
        l3_subsector_er: mm.l3_sub_er,
        l3_residual_er: mm.l3_res_er,
      })
      assert.equal(
        r.full_metrics?.l1_market_hr,
        r.hedge_ratios?.l1_market,
        'the specification: the same value',
      )
      assert.equal(r.teo, m.teo)
      assert.deepEqual(r.hedge_ratios, {
        l1_market: m.metrics.l1_mkt_hr,
        l2_market: m.metrics.l2_mkt_hr,
        l2_sector: m.metrics.l2_sec_hr,
        l3_market: m.metrics.l3_mkt_hr,
        l3_sector: m.metrics.l3_sec_hr,
        l3_subsector: m.metrics.l3_sub_hr,
      })
      const l3 = (
        await t.client.call('getL3Decomposition', { key, query: { ticker: s.ticker, years: 2 } })
      ).ok()
      const { ticker, symbol, periodicity, _metadata, _agent, ...series } = l3
      assert.deepEqual(r.l3_decomposition, series)
    }
    assert.equal(body._agent.cost_usd, 0.01)
    // Default metrics: returns and hedge_ratios only; one success costs 0.005 (no minimum).
    const def = (await t.client.call('batchAnalyze', { key, body: { tickers: [a.ticker] } })).ok()
    const only = def.results[a.ticker]
    assert.ok(only?.status === 'ok')
    assert.deepEqual(Object.keys(only).sort(), [
      'asset_type',
      'hedge_ratios',
      'returns',
      'status',
      'symbol',
      'teo',
      'ticker',
    ])
    assert.equal(def._agent.cost_usd, 0.005)
    const d = await debits(account)
    assert.ok(d.includes(10_000) && d.includes(5_000))
  })

  test('batch analyze as_of: the state of that day and series ending there (point in time)', async () => {
    const { account, key } = await fresh()
    const store = t.ctx.models.store('live')
    const [a] = stocks(store, 1)
    assert.ok(a)
    const T = store.calendar.length - 1 - 200
    assert.ok((await store.listedLife(a.index)).first < T - 300, 'listed well before T')
    const as_of = store.date(T)
    const body = (
      await t.client.call('batchAnalyze', {
        key,
        body: { tickers: [a.ticker], metrics: ['returns', 'hedge_ratios', 'full_metrics'], as_of },
      })
    ).ok()
    const r = body.results[a.ticker]
    assert.ok(r?.status === 'ok')
    assert.equal(r.teo, as_of)
    // hedge_ratios key → the stored field it is.
    const hr = {
      l1_market: 'l1_mkt_hr',
      l2_market: 'l2_mkt_hr',
      l2_sector: 'l2_sec_hr',
      l3_market: 'l3_mkt_hr',
      l3_sector: 'l3_sec_hr',
      l3_subsector: 'l3_sub_hr',
    } as const
    const row = await store.history(a.index, [...Object.values(hr), 'l3_res_er'], T, T + 1)
    const at = (f: string) => n((row[f] as Float64Array)[0])
    assert.deepEqual(r.hedge_ratios, Object.fromEntries(Object.entries(hr).map(([k, f]) => [k, at(f)])))
    assert.equal(r.full_metrics?.l3_res_er, at('l3_res_er'))
    assert.equal(r.returns?.dates.at(-1), as_of, 'the series end at as_of: nothing later')
    const bad = async (extra: Record<string, string>) =>
      (await t.client.call('batchAnalyze', { key, body: { tickers: [a.ticker], ...extra } })).status
    assert.equal(await bad({ as_of, end: store.date(T + 1) }), 400, 'an end after as_of')
    assert.equal(await bad({ as_of: '1900-01-02' }), 404)
    assert.equal(await bad({ as_of: '2021-02-30' }), 400)
    assert.deepEqual(await debits(account), [5_000], 'errors cost nothing')
  })

  test('batch analyze tabular = BatchAnalyzeExportRow of successes; needs returns; bad bodies 400', async () => {
    const { key } = await fresh()
    const [a, b] = stocks(t.ctx.models.store('live'), 2)
    assert.ok(a && b)
    const req = { tickers: [a.ticker, 'NOPEQ', b.ticker], years: 3 }
    const json = (await t.client.call('batchAnalyze', { key, body: req })).ok()
    const cols: ExpectedColumn[] = ['ticker', 'date', 'gross_return', 'l1', 'l2', 'l3'].map((name) => ({
      name,
      kind: name === 'ticker' ? 'text' : name === 'date' ? 'date' : 'double',
      values: [],
    }))
    for (const s of [a, b]) {
      const r = json.results[s.ticker]
      assert.ok(r?.status === 'ok' && r.returns)
      const x = r.returns
      const parts = [x.dates.map(() => s.ticker), x.dates, x.values, x.l1, x.l2, x.l3]
      parts.forEach((p, i) => {
        cols[i]?.values.push(...p)
      })
    }
    const pq = await raw(t, 'POST', '/batch/analyze', key, { ...req, format: 'parquet' })
    assert.equal(pq.status, 200, pq.text)
    await checkParquet(pq.bytes, cols)
    const csv = await raw(t, 'POST', '/batch/analyze', key, { ...req, format: 'csv' })
    assert.equal(csv.status, 200)
    checkCsv(csv.text, cols)
    const noReturns = await raw(t, 'POST', '/batch/analyze', key, {
      ...req,
      metrics: ['hedge_ratios'],
      format: 'csv',
    })
    assert.equal(noReturns.status, 400)
    for (const bad of [
      { tickers: [a.ticker], metrics: ['prices'] },
      { tickers: [a.ticker], years: '2' },
      { tickers: [a.ticker], years: 16 },
      { tickers: [] },
      { tickers: [a.ticker], extra: 1 },
    ]) {
      const r = await raw(t, 'POST', '/batch/analyze', key, bad)
      assert.equal(r.status, 400, JSON.stringify(bad))
      assert.equal(JSON.parse(r.text).code, 'INVALID_REQUEST')
    }
  })

  test('test keys: sandbox store, same shapes, nothing charged', async () => {
    const account = await t.account(0)
    const key = await t.key(account, { env: 'test' })
    const sandbox = t.ctx.models.store('test')
    const [s] = stocks(sandbox, 1)
    assert.ok(s)
    const r = (
      await t.client.call('batchAnalyze', { key, body: { tickers: [s.ticker], metrics: ['returns'] } })
    ).ok()
    const got = r.results[s.ticker]
    assert.ok(got?.status === 'ok' && got.returns)
    const { from, to } = await expectedWindow(sandbox, s.index, 1)
    const h = await sandbox.history(s.index, ['returns_gross'], from, to)
    assert.deepEqual(
      got.returns.values,
      Array.from(h.returns_gross as Float64Array, (x) => n(x)),
    )
    assert.equal(r._agent.cost_usd, 0)
    const l = (await t.client.call('batchLstar', { key, body: { tickers: [s.ticker] } })).ok()
    assert.equal(l._agent.cost_usd, 0)
  })
})
