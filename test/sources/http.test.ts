import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import {
  abortableSleep,
  HttpClient,
  type HttpClientOptions,
  retryAfterMs,
  SourceError,
} from '../../src/engine/sources/http.ts'
import { startVendorServer, type VendorServer } from '../fakes/vendor-server.ts'

const KEY = 'sk_query_secret_42'
let server: VendorServer
/** Requests the server holds until `release()`; `held` resolves when `n` are waiting. */
let holding = false
let waiting: (() => void)[] = []
let onHeld: { n: number; resolve: () => void } | null = null

before(async () => {
  server = await startVendorServer(async (req) => {
    if (req.url.pathname === '/auth' && req.url.searchParams.get('token') !== KEY)
      return { status: 401, body: { message: 'invalid key' } }
    if (holding) {
      await new Promise<void>((resolve) => {
        waiting.push(resolve)
        if (onHeld && waiting.length === onHeld.n) onHeld.resolve()
      })
    }
    return { body: { path: req.url.pathname } }
  })
})
after(() => server.close())

function client(o: Partial<HttpClientOptions> = {}): { c: HttpClient; waits: number[] } {
  const waits: number[] = []
  const c = new HttpClient({
    source: 'vendor',
    baseUrl: server.url,
    query: { token: KEY },
    headers: { authorization: `Bearer ${KEY}` },
    random: () => 1,
    backoffMs: 100,
    sleep: async (ms) => {
      waits.push(ms)
    },
    ...o,
  })
  return { c, waits }
}

describe('the sources HTTP client', () => {
  it('429 with Retry-After (seconds): waits at least that long, then succeeds', async () => {
    const { c, waits } = client({ random: () => 0 })
    server.failNext(2, { kind: 'status', status: 429, retryAfter: 3 })
    assert.deepEqual(await c.getJson('a'), { path: '/a' })
    assert.deepEqual(waits, [3000, 3000])
    assert.deepEqual([c.calls, c.retries], [3, 2])
  })

  it('Retry-After as an HTTP date, and unreadable', () => {
    const now = Date.parse('2024-01-02T00:00:00Z')
    assert.equal(retryAfterMs('Tue, 02 Jan 2024 00:00:05 GMT', now), 5000)
    assert.equal(retryAfterMs('soon', now), null)
    assert.equal(retryAfterMs(null, now), null)
  })

  it('5xx: retried with exponential backoff (full jitter at its ceiling)', async () => {
    const { c, waits } = client()
    server.failNext(1, { kind: 'status', status: 500 })
    server.failNext(1, { kind: 'status', status: 502 })
    server.failNext(1, { kind: 'status', status: 503 })
    assert.deepEqual(await c.getJson('b'), { path: '/b' })
    assert.deepEqual(waits, [100, 200, 400])
  })

  it('gives up after maxRetries with the last status', async () => {
    const { c } = client({ maxRetries: 2 })
    server.failNext(3, { kind: 'status', status: 503 })
    await assert.rejects(
      c.get('c'),
      (e: unknown) =>
        e instanceof SourceError && e.status === 503 && /gave up after 3 attempts/.test(e.message),
    )
  })

  it('401: not retried; the message names the source and carries no key', async () => {
    const { c, waits } = client({ query: { token: 'wrong-key-000' } })
    const before = server.calls
    await assert.rejects(c.get('auth'), (e: unknown) => {
      assert.ok(e instanceof SourceError)
      assert.equal(e.status, 401)
      assert.equal(e.message, `vendor: HTTP 401 from ${server.url}/auth: invalid key`)
      assert.ok(!e.message.includes('wrong-key-000') && !e.message.includes(KEY))
      return true
    })
    assert.equal(server.calls - before, 1)
    assert.deepEqual(waits, [])
  })

  it('a body cut short is retried', async () => {
    const { c } = client()
    server.failNext(1, { kind: 'truncate' })
    assert.deepEqual(await c.getJson('d'), { path: '/d' })
    assert.deepEqual([c.calls, c.retries], [2, 1])
  })

  it('never more requests in flight than the concurrency bound', async () => {
    const { c } = client({ concurrency: 3 })
    holding = true
    const held = new Promise<void>((resolve) => {
      onHeld = { n: 3, resolve }
    })
    const all = Promise.all(Array.from({ length: 10 }, (_, i) => c.getJson(`e${i}`)))
    await held
    assert.equal(c.calls, 3) // the other seven wait for a slot before being sent
    holding = false
    for (const go of waiting) go()
    waiting = []
    onHeld = null
    assert.equal((await all).length, 10)
    assert.equal(c.calls, 10)
  })

  it('rate pacing: starts are spaced 1/ratePerSecond apart', async (t) => {
    // A frozen clock: every wait is then exactly the distance to its scheduled start.
    t.mock.method(performance, 'now', () => 1000)
    const { c, waits } = client({ ratePerSecond: 4 })
    await Promise.all(Array.from({ length: 5 }, (_, i) => c.getJson(`f${i}`)))
    assert.deepEqual(waits, [250, 500, 750, 1000])
  })

  it('abort: during a backoff wait, and while waiting for a slot', async () => {
    const ac = new AbortController()
    const { c } = client({
      backoffMs: 60_000,
      sleep: (ms, signal) => {
        const s = abortableSleep(ms, signal)
        ac.abort(new Error('stopped by the user'))
        return s
      },
    })
    server.failNext(1, { kind: 'status', status: 503 })
    await assert.rejects(c.get('g', { signal: ac.signal }), /stopped by the user/)
    assert.equal(c.calls, 1)

    const slot = client({ concurrency: 1 }).c
    holding = true
    const held = new Promise<void>((resolve) => {
      onHeld = { n: 1, resolve }
    })
    const first = slot.getJson('h1')
    await held
    const ac2 = new AbortController()
    const second = slot.getJson('h2', { signal: ac2.signal })
    ac2.abort(new Error('cancelled'))
    await assert.rejects(second, /cancelled/)
    holding = false
    for (const go of waiting) go()
    waiting = []
    onHeld = null
    assert.deepEqual(await first, { path: '/h1' })
    assert.equal(slot.calls, 1)
  })
})
