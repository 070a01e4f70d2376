import assert from 'node:assert/strict'
import { execFile, spawnSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { promisify } from 'node:util'
import { flakyProxy } from '../helpers/flaky-proxy.ts'
import { startTestApp, type TestApp } from '../helpers/test-app.ts'

type Client = typeof import('../../clients/typescript/src/index.ts')

const PKG = fileURLToPath(new URL('../../clients/typescript/', import.meta.url))
const TSC = fileURLToPath(new URL('../../node_modules/typescript/bin/tsc', import.meta.url))

// The package as it is published: built by its own tsconfig to plain ESM, then imported from the
// build (not from src/), against a real server on loopback over a tiny synthetic market.
describe('@erm3/client against a real server', () => {
  let t: TestApp
  let origin: string
  let key: string
  let out: string
  let lib: Client

  before(async () => {
    out = mkdtempSync(join(tmpdir(), 'erm3-ts-client-'))
    const built = spawnSync(process.execPath, [TSC, '-p', PKG, '--outDir', out], { encoding: 'utf8' })
    assert.equal(built.status, 0, built.stdout + built.stderr)
    lib = (await import(pathToFileURL(join(out, 'index.js')).href)) as Client
    t = await startTestApp()
    origin = await t.listen()
    key = await t.key(await t.account(50))
  })
  after(async () => {
    await t.close()
    rmSync(out, { recursive: true, force: true })
  })

  test('the build is ESM that imports nothing', () => {
    for (const f of ['index.js', 'errors.js', 'operations.js']) {
      const js = readFileSync(join(out, f), 'utf8')
      const imports = [...js.matchAll(/^import .* from '([^']+)'/gm)].map((m) => m[1])
      assert.ok(
        imports.every((i) => i?.startsWith('./')),
        `${f} imports ${imports.join(', ')}`,
      )
    }
  })

  test('the first requests of the README run', async () => {
    const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8')
    const code = (/```ts\n([\s\S]*?)```/.exec(readme)?.[1] ?? '')
      .replace("'@erm3/client'", JSON.stringify(pathToFileURL(join(out, 'index.js')).href))
      .replaceAll('http://127.0.0.1:8080', origin)
      .replaceAll('erm_agent_live_…', key)
    assert.match(code, /new Erm3Client/)
    const file = join(out, 'readme.mjs')
    writeFileSync(
      file,
      `${code}\nconsole.log(m.data.ticker, m.costUsd, (await csv.text()).split('\\n')[0])\n`,
    )
    // In a child process, while this one serves the requests.
    const r = await promisify(execFile)(process.execPath, [file], { encoding: 'utf8', timeout: 60_000 })
    assert.match(r.stdout, /^AAPL 0\.001 date,/)
  })

  test('an answer carries its data, cost, request id and lineage', async () => {
    const c = new lib.Erm3Client({ baseUrl: origin, apiKey: key })
    const a = await c.ops.getMetrics({ params: { ticker: 'googl' } })
    assert.equal(a.data.ticker, 'GOOGL')
    assert.equal(a.costUsd, 0.001)
    assert.equal(a.agent?.cost_usd, 0.001)
    assert.equal(a.headers.get('x-api-cost-usd'), '0.001')
    assert.match(a.requestId ?? '', /^req_/)
    assert.equal(a.requestId, a.agent?.request_id)
    assert.equal(a.lineage.dataAsOf, a.data._metadata.data_as_of)
    assert.equal(a.lineage.universeSize, a.data._metadata.universe_size)
    assert.match(a.lineage.dataset ?? '', /^synthetic; seed=\d+$/)
    // The same meaning again within one data_as_of: free, from the cache.
    const again = await c.call('getMetrics', { params: { ticker: 'GOOGL' } })
    assert.equal(again.costUsd, 0)
    assert.equal(again.cacheStatus, 'HIT')
  })

  test('an OAuth-style token (a function) is sent as the bearer', async () => {
    let asked = 0
    const c = new lib.Erm3Client({
      baseUrl: origin,
      token: () => {
        asked++
        return key
      },
    })
    const b = await c.ops.getBalance()
    assert.equal(typeof b.data.balance_usd, 'number')
    assert.equal(asked, 1)
  })

  test('errors are Erm3Error with the problem code', async () => {
    const c = new lib.Erm3Client({ baseUrl: origin, apiKey: key })
    const e = await c.ops.getMetrics({ params: { ticker: 'ZZZZ' } }).catch((x: unknown) => x)
    assert.ok(e instanceof lib.Erm3Error)
    assert.equal(e.status, 404)
    assert.equal(e.code, 'TICKER_NOT_FOUND')
    assert.match(e.requestId ?? '', /^req_/)
    const bad = new lib.Erm3Client({ baseUrl: origin, apiKey: 'erm_agent_live_nope' })
    const e2 = await bad.ops.getBalance().catch((x: unknown) => x)
    assert.ok(e2 instanceof lib.Erm3Error && e2.status === 401, String(e2))
  })

  test('CSV as bytes and Parquet as a stream hold the JSON answer’s rows', async () => {
    const c = new lib.Erm3Client({ baseUrl: origin, apiKey: key })
    const input = { query: { ticker: 'MSFT', years: 1 } }
    const json = await c.ops.getTickerReturns(input)
    const csv = await c.download('getTickerReturns', input, { format: 'csv' })
    assert.equal(csv.lineage.dataAsOf, json.lineage.dataAsOf)
    assert.match(csv.filename ?? '', /\.csv$/)
    const [head, ...lines] = (await csv.text()).trim().split('\n')
    const cols = (head ?? '').split(',')
    const rows = (json.data as { data: Record<string, unknown>[] }).data
    assert.equal(lines.length, rows.length)
    const i = cols.indexOf('returns_gross')
    lines.forEach((l, n) => {
      assert.equal(Number(l.split(',')[i]), rows[n]?.returns_gross)
    })
    const pq = await c.download('getTickerReturns', input, { format: 'parquet' })
    const chunks: Uint8Array[] = []
    for await (const ch of pq.body) chunks.push(ch)
    const bytes = Buffer.concat(chunks)
    assert.equal(bytes.subarray(0, 4).toString(), 'PAR1')
    assert.equal(bytes.subarray(-4).toString(), 'PAR1')
  })

  test('paginate walks every page once', async () => {
    const c = new lib.Erm3Client({ baseUrl: origin, apiKey: key })
    const seen: string[] = []
    let total = -1
    for await (const page of c.paginate('getTickers', { query: { limit: 7 } })) {
      assert.ok(page.data.tickers.length <= 7)
      seen.push(...page.data.tickers.map((x) => (typeof x === 'string' ? x : x.ticker)))
      total = page.data.total ?? -1
    }
    assert.equal(seen.length, total)
    assert.equal(new Set(seen).size, total)
    // The screen takes its cursor in the body.
    const rows: string[] = []
    let pages = 0
    for await (const page of c.paginate('rankingsScreen', {
      body: { metric: 'er_l3', window: '21d', limit: 10 },
    })) {
      rows.push(...page.data.rows.map((r) => r.ticker))
      total = page.data.total
      pages++
    }
    assert.ok(pages > 1)
    assert.equal(rows.length, total)
    assert.equal(new Set(rows).size, total)
  })

  test('429 and 503 are retried after Retry-After', async () => {
    const proxy = await flakyProxy(origin, (_m, _u, n) =>
      n === 1 ? { status: 429, headers: { 'retry-after': '0' } } : n === 2 ? { status: 503 } : 'pass',
    )
    try {
      const c = new lib.Erm3Client({ baseUrl: proxy.url, apiKey: key })
      const a = await c.ops.postCorrelation({ body: { ticker: 'AAPL' } })
      assert.equal(a.status, 200)
      assert.equal(proxy.seen.length, 3)
      // A wait longer than the client accepts is not waited for.
      const slow = await flakyProxy(origin, () => ({ status: 429, headers: { 'retry-after': '3600' } }))
      const e = await new lib.Erm3Client({ baseUrl: slow.url, apiKey: key }).ops
        .getBalance()
        .catch((x: unknown) => x)
      await slow.close()
      assert.ok(e instanceof lib.Erm3Error && e.retryAfterSeconds === 3600)
      assert.equal(slow.seen.length, 1)
    } finally {
      await proxy.close()
    }
  })

  test('a POST whose connection failed is not sent again; a GET is', async () => {
    const proxy = await flakyProxy(origin, (_m, _u, n) => (n === 1 ? 'cut-after' : 'pass'))
    try {
      const c = new lib.Erm3Client({ baseUrl: proxy.url, apiKey: key })
      await assert.rejects(c.ops.decompose({ body: { ticker: 'NVDA' } }))
      assert.deepEqual(proxy.seen, ['POST /decompose'])
      proxy.seen.length = 0
      const retried = await flakyProxy(origin, (_m, _u, n) => (n === 1 ? 'cut-after' : 'pass'))
      const a = await new lib.Erm3Client({ baseUrl: retried.url, apiKey: key }).ops.getMetrics({
        params: { ticker: 'NVDA' },
      })
      await retried.close()
      assert.equal(a.status, 200)
      assert.equal(retried.seen.length, 2)
    } finally {
      await proxy.close()
    }
  })

  test('timeouts and AbortSignal end a call', async () => {
    const proxy = await flakyProxy(origin, () => 'hang')
    try {
      const c = new lib.Erm3Client({ baseUrl: proxy.url, apiKey: key, timeoutMs: 150 })
      await assert.rejects(c.ops.getHealth(), (e: Error) => e.name === 'TimeoutError')
      const ac = new AbortController()
      const p = c.ops.getHealth(undefined, { signal: ac.signal, timeoutMs: 10_000 })
      ac.abort()
      await assert.rejects(p, (e: Error) => e.name === 'AbortError')
    } finally {
      await proxy.close()
    }
  })
})
