import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { startTestApp, type TestApp } from '../helpers/test-app.ts'

describe('HTTP platform (embedded backends)', () => {
  let t: TestApp
  let account: string
  let key: string
  before(async () => {
    t = await startTestApp({ env: { METRICS_TOKEN: 'platform-test-metrics-token' } })
    account = await t.account(1)
    key = await t.key(account)
  })
  after(() => t?.close())

  const raw = (method: string, url: string, headers: Record<string, string> = {}, body?: string) =>
    t.transport({ method, url, headers, body })

  test('unknown path → 404 NOT_FOUND; wrong method → 405 with Allow; both problem+json with X-Request-ID', async () => {
    const r404 = await raw('GET', '/no/such/thing')
    assert.equal(r404.status, 404)
    assert.equal(JSON.parse(r404.body).code, 'NOT_FOUND')
    assert.match(r404.headers['x-request-id'] ?? '', /^req_/)
    const r405 = await raw('DELETE', '/balance')
    assert.equal(r405.status, 405)
    assert.equal(JSON.parse(r405.body).code, 'METHOD_NOT_ALLOWED')
    assert.match(r405.headers.allow ?? '', /GET/)
    for (const path of ['/auth/token']) {
      assert.equal((await raw('GET', path)).status, 404)
      assert.equal((await raw('POST', path, { 'content-type': 'application/json' }, '{}')).status, 404)
    }
  })

  test('X-Request-ID is always erm3’s own; a well-formed client id comes back as X-Correlation-ID', async () => {
    const mine = await raw('GET', '/health', { 'x-request-id': 'abc-123' })
    assert.match(mine.headers['x-request-id'] ?? '', /^req_[A-Za-z0-9]+$/)
    assert.equal(mine.headers['x-correlation-id'], 'abc-123')
    const both = await raw('GET', '/health', { 'x-request-id': 'abc-123', 'x-correlation-id': 'corr-9' })
    assert.equal(both.headers['x-correlation-id'], 'corr-9')
    assert.notEqual(both.headers['x-request-id'], mine.headers['x-request-id'])
    const bad = await raw('GET', '/health', { 'x-request-id': 'bad id with spaces' })
    assert.match(bad.headers['x-request-id'] ?? '', /^req_/)
    assert.equal(bad.headers['x-correlation-id'], undefined)
  })

  test('an unparsable path (bad percent-encoding, over-long parameter) is a 400 problem, not a framework body', async () => {
    for (const path of ['/metrics/%zz', `/metrics/${'A'.repeat(300)}`, `/metrics/${'A'.repeat(101)}`]) {
      const r = await raw('GET', path)
      assert.equal(r.status, 400, path)
      assert.match(r.headers['content-type'] ?? '', /^application\/problem\+json/)
      const body = JSON.parse(r.body)
      assert.equal(body.code, 'INVALID_REQUEST')
      assert.equal(body.request_id, r.headers['x-request-id'])
    }
  })

  test('415, 413 and malformed JSON go through the error table', async () => {
    const r415 = await raw('POST', '/estimate', { 'content-type': 'text/xml' }, '<x/>')
    assert.equal(r415.status, 415)
    assert.equal(JSON.parse(r415.body).code, 'UNSUPPORTED_MEDIA_TYPE')
    const big = JSON.stringify({ operation: 'x'.repeat(2 * 1024 * 1024) })
    const r413 = await raw('POST', '/estimate', { 'content-type': 'application/json' }, big)
    assert.equal(r413.status, 413)
    assert.equal(JSON.parse(r413.body).code, 'PAYLOAD_TOO_LARGE')
    const bad = await raw('POST', '/estimate', { 'content-type': 'application/json' }, '{"operation": ')
    assert.equal(bad.status, 400)
    assert.equal(JSON.parse(bad.body).code, 'INVALID_REQUEST')
    const invalid = await raw(
      'POST',
      '/estimate',
      { 'content-type': 'application/json' },
      '{"operation": 5, "extra": 1}',
    )
    assert.equal(invalid.status, 400)
    const p = JSON.parse(invalid.body)
    assert.equal(p.code, 'INVALID_REQUEST')
    assert.ok(
      p.errors.some((e: { field: string }) => e.field.includes('operation')),
      invalid.body,
    )
  })

  test('a request without a body is never refused for its Content-Type; an empty POST body still is', async () => {
    // As the Python MCP SDK sends its DELETE: a JSON content type and nothing after the headers.
    for (const ct of ['application/json', 'application/json; charset=utf-8', 'text/xml']) {
      const h = { 'content-type': ct }
      const cases: [string, string, Record<string, string>, number][] = [
        ['GET', '/health', h, 200],
        ['HEAD', '/health', h, 200],
        ['OPTIONS', '/health', h, 405],
        ['DELETE', '/health', h, 405],
        ['DELETE', '/no/such/thing', h, 404],
        ['GET', '/no/such/thing', h, 404],
        ['GET', '/balance', { ...h, authorization: `Bearer ${key}` }, 200],
        // No session named: the MCP adapter's own 404, not a body error.
        ['DELETE', '/mcp', { ...h, authorization: `Bearer ${key}` }, 404],
        ['DELETE', '/mcp', { ...h, authorization: `Bearer ${key}`, 'mcp-session-id': 'mcp_none' }, 404],
      ]
      for (const [method, url, headers, status] of cases) {
        const r = await raw(method, url, headers)
        assert.equal(r.status, status, `${method} ${url} (${ct}): ${r.body}`)
      }
    }
    const empty = await raw('POST', '/estimate', { 'content-type': 'application/json' })
    assert.equal(empty.status, 400)
    assert.match(empty.headers['content-type'] ?? '', /^application\/problem\+json/)
    const p = JSON.parse(empty.body)
    assert.equal(p.code, 'INVALID_REQUEST')
    assert.match(p.detail, /[Bb]ody cannot be empty/)
  })

  test('GET /pricing and POST /estimate read the one pricing table', async () => {
    const pricing = (await t.client.call('getPricing')).ok()
    const m = pricing.capabilities.find((c) => c.capability_id === 'metrics')
    assert.deepEqual(m && [m.method, m.path, m.cost_usd, m.billing_code], [
      'GET',
      '/metrics/{ticker}',
      0.001,
      'metrics_v3',
    ])
    assert.equal(pricing.min_top_up_usd, 10)
    for (const c of pricing.capabilities)
      assert.ok(t.app.routes.includes(`${c.method} ${c.path.replace(/\{(\w+)\}/g, ':$1')}`), c.path)
    const e1 = (await t.client.call('estimate', { body: { operation: 'GET /metrics/AAPL' } })).ok()
    assert.equal(e1.estimated_cost_usd, 0.001)
    assert.equal(e1.capability, 'metrics')
    const e2 = (await t.client.call('estimate', { body: { operation: 'getBalance' } })).ok()
    assert.equal(e2.estimated_cost_usd, 0)
    const e3 = await t.client.call('estimate', { body: { operation: 'nonsense' } })
    assert.equal(e3.status, 404)
  })

  test('POST /estimate sizes a history answer: its rows exactly (a stock listed throughout), its bytes roughly', async () => {
    const key = await t.key(await t.account(1))
    const cases: [string, Record<string, unknown>, (b: Record<string, unknown[]>) => number][] = [
      ['getLstar', { ticker: 'AAPL', years: 1 }, (b) => b.dates?.length ?? -1],
      [
        'getTickerReturns',
        { ticker: 'AAPL', years: 2, fields: 'returns_gross' },
        (b) => b.data?.length ?? -1,
      ],
      [
        'getReturnsDecomposition',
        { ticker: 'AAPL', years: 2, fields: 'gross' },
        (b) => b.dates?.length ?? -1,
      ],
      ['getL3Decomposition', { ticker: 'AAPL' }, (b) => b.dates?.length ?? -1],
      [
        'getEtfReturns',
        { ticker: 'XLK', start: '2021-12-20', end: '2021-12-27' },
        (b) => b.dates?.length ?? -1,
      ],
    ]
    for (const [op, params, rowsOf] of cases) {
      const e = (await t.client.call('estimate', { body: { operation: op, params } })).ok()
      const r = await t.client.call(op as 'getLstar', { key, query: params as { ticker: string } })
      const rows = rowsOf(r.ok() as unknown as Record<string, unknown[]>)
      assert.equal(e.estimated_rows, rows, op)
      if (rows < 100) continue // the envelope (_metadata, _agent) outweighs a week of rows
      const ratio = Buffer.byteLength(r.text) / (e.estimated_bytes ?? 0)
      assert.ok(
        ratio > 0.5 && ratio < 2,
        `${op}: ${Buffer.byteLength(r.text)} bytes, estimated ${e.estimated_bytes}`,
      )
    }
    // No history: no size. A day outside the data is the request's own 400.
    const plain = (await t.client.call('estimate', { body: { operation: 'getMetrics' } })).ok()
    assert.equal(plain.estimated_rows, undefined)
    const outside = await t.client.call('estimate', {
      body: { operation: 'getLstar', params: { ticker: 'AAPL', start: '2031-01-02' } },
    })
    assert.equal(outside.status, 400)
    assert.match(outside.text, /outside the data/)
  })

  test('GET /health reports the store, the database and the limiter', async () => {
    const h = (await t.client.call('getHealth')).ok()
    assert.equal(h.status, 'ok')
    assert.equal(h.model.data_as_of, '2021-12-31')
    assert.equal(h.database.backend, 'sqlite')
    assert.equal(h.limits.backend, 'memory')
    assert.equal(h.limits.degraded, false)
  })

  test('GET /balance shows the real limits; premium keys get 300/min', async () => {
    const b = (await t.client.call('getBalance', { key })).ok()
    assert.equal(b.balance_usd, 1)
    assert.equal(b.status.can_make_requests, true)
    assert.deepEqual(b.limits, { requests_per_minute: 60, burst: 100, max_concurrent: 10 })
    const premium = await t.key(account, { tier: 'premium' })
    const pb = await t.client.call('getBalance', { key: premium })
    assert.deepEqual(pb.ok().limits, { requests_per_minute: 300, burst: 500, max_concurrent: 10 })
    assert.equal(pb.headers['x-ratelimit-limit'], '300')
  })

  test('metered GET /metrics: charged once, _agent and lineage, cache HIT free, ETag 304 free, no-cache BYPASS charged', async () => {
    const acct = await t.account(1)
    const k = await t.key(acct)
    const r1 = await t.client.call('getMetrics', { key: k, params: { ticker: 'aapl' } })
    const b1 = r1.ok()
    assert.equal(b1._agent.cost_usd, 0.001)
    assert.equal(b1._agent.cache_status, 'MISS')
    assert.equal(b1._agent.billing_code, 'metrics_v3')
    assert.equal(b1._agent.request_id, r1.headers['x-request-id'])
    assert.equal(r1.headers['x-api-cost-usd'], '0.001')
    assert.equal(r1.headers['x-risk-model-version'], 'ERM3-L3-v3')
    assert.equal(r1.headers['x-data-as-of'], '2021-12-31')
    assert.equal(r1.headers['x-factor-set-id'], 'SPY_uni_mc_3000')
    assert.equal(r1.headers['x-universe-size'], String(b1._metadata.universe_size))
    assert.equal(
      r1.headers['x-dataset'],
      `synthetic; seed=${(b1._metadata.dataset as { seed: number }).seed}`,
    )
    assert.equal(b1._agent.data_freshness, '2021-12-31T21:00:00.000Z')
    assert.equal(b1.ticker, 'AAPL')
    assert.deepEqual(b1._metadata.range, [b1.teo, b1.teo])
    const r2 = await t.client.call('getMetrics', { key: k, params: { ticker: 'AAPL' } })
    assert.equal(r2.ok()._agent.cache_status, 'HIT')
    assert.equal(r2.ok()._agent.cost_usd, 0)
    assert.equal(r2.headers['x-api-cost-usd'], '0')
    const r3 = await t.client.call('getMetrics', {
      key: k,
      params: { ticker: 'AAPL' },
      headers: { 'if-none-match': r1.headers.etag ?? '' },
    })
    assert.equal(r3.status, 304)
    const r4 = await t.client.call('getMetrics', {
      key: k,
      params: { ticker: 'AAPL' },
      headers: { 'cache-control': 'no-cache' },
    })
    assert.equal(r4.ok()._agent.cache_status, 'BYPASS')
    assert.equal(r4.ok()._agent.cost_usd, 0.001)
    const ledger = await t.ctx.accounts.entries(acct, { from: 0, to: Date.now() + 1, limit: 100 })
    assert.deepEqual(
      ledger.filter((e) => e.kind === 'debit').map((e) => [e.amountMicros, e.capability, e.requestId]),
      [
        [-1000, 'metrics', r1.headers['x-request-id']],
        [-1000, 'metrics', r4.headers['x-request-id']],
      ],
    )
    assert.equal((await t.ctx.accounts.balance(acct)).balanceMicros, 1_000_000 - 2000)
  })

  test('a no-cache computation rewrites the cached answer only when its bytes are new; a MISS always writes', async () => {
    const cache = t.ctx.limits.cache
    const { get, set } = cache
    let writes = 0
    let evict = false
    cache.set = (k, v, ttl) => {
      if (k.startsWith('resp:')) writes++
      return set.call(cache, k, v, ttl)
    }
    cache.get = (k) => (evict && k.startsWith('resp:') ? Promise.resolve(null) : get.call(cache, k))
    // The cache write runs after the response has left: let it.
    const settled = () => new Promise((r) => setTimeout(r, 20))
    const metrics = async (k: string, headers: Record<string, string> = {}) => {
      const r = await t.client.call('getMetrics', { key: k, params: { ticker: 'AAPL' }, headers })
      await settled()
      return r.ok()._agent
    }
    try {
      const k = await t.key(await t.account(1))
      const noCache = { 'cache-control': 'no-cache' }
      assert.equal((await metrics(k, noCache)).cache_status, 'BYPASS')
      assert.equal(writes, 1, 'the first fresh computation is cached')
      assert.equal((await metrics(k, noCache)).cost_usd, 0.001, 'charged all the same')
      assert.equal(writes, 1, 'the same bytes again: not rewritten')
      assert.equal((await metrics(k)).cache_status, 'HIT', 'the cached answer is there')
      evict = true
      const miss = await metrics(k)
      evict = false
      // Not in the cache, but paid for on this data_as_of (paid_requests): free, and written again.
      assert.deepEqual([miss.cache_status, miss.cost_usd], ['HIT', 0])
      assert.equal(writes, 2, 'a MISS writes, however recently the same bytes were written')
      await metrics(await t.key(await t.account(1)), noCache)
      assert.equal(writes, 3, "another account's entry is its own")
    } finally {
      cache.set = set
      cache.get = get
    }
  })

  test('format negotiation: JSON-only operations answer 406 to parquet/csv/unknown formats, free', async () => {
    const acct = await t.account(1)
    const k = await t.key(acct)
    for (const input of [
      { query: { format: 'parquet' } },
      { query: { format: 'xml' } },
      { headers: { accept: 'text/csv' } },
      { headers: { accept: 'application/xml' } },
    ]) {
      const r = await t.transport({
        method: 'GET',
        url: `/metrics/AAPL${input.query ? `?format=${input.query.format}` : ''}`,
        headers: { authorization: `Bearer ${k}`, ...(input.headers ?? {}) },
      })
      assert.equal(r.status, 406, JSON.stringify(input))
      assert.equal(JSON.parse(r.body).code, 'NOT_ACCEPTABLE')
    }
    const ok = await t.transport({
      method: 'GET',
      url: '/metrics/AAPL',
      headers: { authorization: `Bearer ${k}`, accept: 'text/csv;q=0.5, application/json' },
    })
    assert.equal(ok.status, 200)
    assert.equal((await t.ctx.accounts.balance(acct)).balanceMicros, 999_000)
  })

  test('errors are never charged: unknown ticker → 404 TICKER_NOT_FOUND with suggestions, free', async () => {
    const acct = await t.account(1)
    const k = await t.key(acct)
    const store = t.ctx.models.store('live')
    const known = store.symbols.find((s) => s.asset_type === 'stock')?.symbol ?? 'SPY'
    const r = await t.client.call('getMetrics', { key: k, params: { ticker: `${known}X` } })
    assert.equal(r.status, 404)
    const p = r.json as { code: string; suggestions: string[] }
    assert.equal(p.code, 'TICKER_NOT_FOUND')
    assert.ok(p.suggestions.includes(known), JSON.stringify(p))
    assert.equal((await t.ctx.accounts.balance(acct)).balanceMicros, 1_000_000)
    const bad = await t.client.call('getMetrics', { key: k, params: { ticker: 'A B C $' } })
    assert.equal(bad.status, 400)
    assert.equal((bad.json as { code: string }).code, 'INVALID_TICKER')
  })

  test('test keys read the sandbox store, at no cost', async () => {
    const tk = await t.key(account, { env: 'test' })
    const r = await t.client.call('getMetrics', { key: tk, params: { ticker: 'AAPL' } })
    const b = r.ok()
    assert.equal(r.headers['x-environment'], 'test')
    assert.equal(b._agent.cost_usd, 0)
    const live = (await t.client.call('getMetrics', { key, params: { ticker: 'AAPL' } })).ok()
    assert.notEqual(b.metrics.price_close, live.metrics.price_close, 'sandbox and live stores differ')
  })

  test('GET /invoices: ledger-backed summary per period', async () => {
    const acct = await t.account(2)
    const k = await t.key(acct)
    await t.client.call('getMetrics', { key: k, params: { ticker: 'AAPL' } })
    const inv = (await t.client.call('getInvoices', { key: k, query: { period: 'all' } })).ok()
    assert.equal(inv.summary.spent_usd, 0.001)
    assert.equal(inv.summary.requests, 1)
    assert.deepEqual(
      inv.invoices.map((i) => [i.kind, i.amount_usd]),
      [
        ['credit', 2],
        ['debit', -0.001],
      ],
    )
    const bad = await t.client.call('getInvoices', { key: k, query: { period: 'decade' as 'all' } })
    assert.equal(bad.status, 400)
  })

  test('documents: /docs/errors lists every code; /docs/methodology exists; /metrics-prom counts requests', async () => {
    const e = await raw('GET', '/docs/errors')
    assert.match(e.body, /id="insufficient_balance"/)
    assert.equal((await raw('GET', '/docs/methodology')).status, 200)
    const prom = await raw('GET', '/metrics-prom', { authorization: 'Bearer platform-test-metrics-token' })
    assert.match(prom.body, /erm3_http_requests_total\{operation="getHealth",status="200"\}/)
  })
})

describe('billing page and the 402 top_up_url', () => {
  test('/docs/billing lists every served price from the pricing table; TOP_UP_URL replaces it in a 402', async () => {
    const t = await startTestApp({ env: { TOP_UP_URL: 'https://billing.example.com/erm3' } })
    try {
      const page = await t.transport({ method: 'GET', url: '/docs/billing', headers: {} })
      assert.equal(page.status, 200)
      assert.match(page.headers['content-type'] ?? '', /^text\/markdown/)
      const pricing = JSON.parse((await t.transport({ method: 'GET', url: '/pricing', headers: {} })).body)
      const caps = pricing.capabilities as { capability_id: string; cost_usd: number }[]
      assert.ok(caps.length > 5)
      for (const c of caps) {
        const row = page.body.split('\n').find((l) => l.startsWith(`| ${c.capability_id} |`))
        assert.ok(row, `${c.capability_id} on the billing page`)
        assert.match(row, new RegExp(`\\| ${String(c.cost_usd).replace('.', '\\.')} `))
      }
      assert.match(page.body, /https:\/\/billing\.example\.com\/erm3/)
      const poor = await t.key(await t.account(0))
      const r = await t.transport({
        method: 'GET',
        url: '/metrics/AAPL',
        headers: { authorization: `Bearer ${poor}` },
      })
      assert.equal(r.status, 402)
      assert.equal(JSON.parse(r.body).top_up_url, 'https://billing.example.com/erm3')
    } finally {
      await t.close()
    }
  })
})
