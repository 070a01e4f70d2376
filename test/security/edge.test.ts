/**
 * Security review, the network edge: each attack the review made on the listener and the
 * per-address limits, kept as a regression test. The limits' cases run on both backend pairs
 * (in-process and Redis limits); what happens on the socket runs on a real 127.0.0.1 listener.
 */
import assert from 'node:assert/strict'
import { chmodSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { connect, type Socket } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import type { InjectOptions } from 'fastify'
import { pino } from 'pino'
import { createServerApp } from '../../src/main/app.ts'
import { secretsFor } from '../../src/main/context.ts'
import { loadConfig } from '../../src/platform/config.ts'
import { ADDRESS_BUCKET, addressRule } from '../../src/services/limits.ts'
import { createSqliteAccountStore } from '../../src/store/accounts/sqlite.ts'
import { BACKEND_PAIRS, type BackendPair, startTestApp, type TestApp } from '../helpers/test-app.ts'

type LogLine = Record<string, unknown> & { level: number; msg: string }

function memoryLog() {
  const lines: LogLine[] = []
  const log = pino({ level: 'info' }, { write: (s: string) => void lines.push(JSON.parse(s) as LogLine) })
  return { log, lines }
}

/** Polls `ok` until it holds; fails naming `what` after `ms` (a bound for liveness, not a speed test). */
async function until(what: string, ok: () => boolean, ms = 15_000): Promise<void> {
  const end = Date.now() + ms
  while (!ok()) {
    if (Date.now() > end) assert.fail(`${what}: not within ${ms / 1000} s`)
    await new Promise((r) => setTimeout(r, 20))
  }
}

/** An injected answer (`statusCode`) or one read off a socket (`status`). */
type Answer = { headers: Record<string, unknown>; body: string } & (
  | { statusCode: number }
  | { status: number }
)

function assertProblem(r: Answer, status: number, code: string) {
  assert.equal('statusCode' in r ? r.statusCode : r.status, status, r.body)
  assert.match(String(r.headers['content-type']), /^application\/problem\+json/)
  const p = JSON.parse(r.body) as Record<string, unknown>
  assert.equal(p.status, status)
  assert.equal(p.code, code)
  assert.match(String(p.type), new RegExp(`/docs/errors#${code.toLowerCase()}$`))
  for (const m of ['title', 'detail', 'instance', 'request_id']) assert.equal(typeof p[m], 'string', m)
  assert.equal(p.request_id, r.headers['x-request-id'])
  return p
}

// ----------------------------------------------------------------------------- raw sockets ----

interface RawAnswer {
  status: number
  headers: Record<string, string>
  body: string
}

function parseAnswer(text: string): RawAnswer {
  const at = text.indexOf('\r\n\r\n')
  assert.ok(at > 0, `an HTTP answer, got ${JSON.stringify(text.slice(0, 200))}`)
  const [statusLine, ...lines] = text.slice(0, at).split('\r\n')
  const headers: Record<string, string> = {}
  for (const l of lines) {
    const i = l.indexOf(':')
    headers[l.slice(0, i).toLowerCase()] = l.slice(i + 1).trim()
  }
  return { status: Number((statusLine ?? '').split(' ')[1]), headers, body: text.slice(at + 4) }
}

/** A connection to the listener on 127.0.0.1 that records what the server sends and whether it closed. */
async function open(port: number): Promise<{ s: Socket; data: () => string; closed: () => boolean }> {
  const s = connect(port, '127.0.0.1')
  let data = ''
  let closed = false
  s.on('data', (d) => {
    data += d.toString('latin1')
  })
  s.on('error', () => {})
  s.on('close', () => {
    closed = true
  })
  await new Promise<void>((resolve, reject) => {
    s.once('connect', resolve)
    s.once('error', reject)
  })
  return { s, data: () => data, closed: () => closed }
}

/** Sends `bytes` and waits for the server to answer and close the connection. */
async function exchange(port: number, bytes: string): Promise<RawAnswer> {
  const c = await open(port)
  c.s.write(bytes)
  await until('the server closes the connection', c.closed)
  return parseAnswer(c.data())
}

const portOf = (origin: string) => Number(new URL(origin).port)

// ------------------------------------------------------------------ who a per-address limit counts ----

const json = { 'content-type': 'application/json' }

function addressSuite(backends: BackendPair) {
  describe(`per-address limits count a client, not an address string: ${backends.name}`, {
    skip: backends.skip ?? undefined,
  }, () => {
    let t: TestApp
    before(async () => {
      t = await startTestApp({ ...backends })
    })
    after(() => t?.close())
    const from = (remoteAddress: string, r: InjectOptions) => t.app.fastify.inject({ ...r, remoteAddress })

    test('eight addresses of one IPv6 /64 get three free keys between them; another /64 gets its own', async () => {
      const statuses: number[] = []
      for (let i = 1; i <= 8; i++) {
        const r = await from(`2001:db8:10:1::${i.toString(16)}`, {
          method: 'POST',
          url: '/auth/provision-free',
          headers: json,
          payload: '{}',
        })
        statuses.push(r.statusCode)
        if (r.statusCode === 429) assertProblem(r, 429, 'RATE_LIMITED')
      }
      assert.deepEqual(statuses, [201, 201, 201, 429, 429, 429, 429, 429])
      const other = await from('2001:db8:10:2::1', {
        method: 'POST',
        url: '/auth/provision-free',
        headers: json,
        payload: '{}',
      })
      assert.equal(other.statusCode, 201, other.body)
    })

    test('an IPv4 client is one client in either spelling (dual-stack ::ffff:a.b.c.d)', async () => {
      const free = (address: string) =>
        from(address, { method: 'POST', url: '/auth/provision-free', headers: json, payload: '{}' })
      assert.equal((await free('198.51.100.77')).statusCode, 201)
      assert.equal((await free('::ffff:198.51.100.77')).statusCode, 201)
      assert.equal((await free('::ffff:c633:644d')).statusCode, 201) // 198.51.100.77 again
      assert.equal((await free('198.51.100.77')).statusCode, 429)
    })

    // Every per-address limit of an operation: its burst from one /64, then a refusal.
    const operations: { name: string; burst: number; request: (i: number) => InjectOptions }[] = [
      {
        name: 'sign-in mails (POST /auth/login)',
        burst: 10,
        request: (i) => ({
          method: 'POST',
          url: '/auth/login',
          headers: json,
          payload: JSON.stringify({ email: `rotate-${i}@example.com` }),
        }),
      },
      {
        name: 'OAuth client registration',
        burst: 30,
        request: (i) => ({
          method: 'POST',
          url: '/oauth/register',
          headers: json,
          payload: JSON.stringify({ client_name: `c${i}`, redirect_uris: ['http://127.0.0.1:9/cb'] }),
        }),
      },
      {
        name: 'OAuth token exchange',
        burst: 60,
        request: () => ({
          method: 'POST',
          url: '/oauth/token',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          payload: 'grant_type=refresh_token&refresh_token=nope',
        }),
      },
    ]
    operations.forEach((o, k) => {
      test(`${o.name}: rotating addresses within one /64 does not reset its limit`, async () => {
        for (let i = 0; i <= o.burst; i++) {
          const r = await from(`2001:db8:20:${k}::${(i + 1).toString(16)}`, o.request(i))
          if (i < o.burst) assert.notEqual(r.statusCode, 429, `request ${i + 1}: ${r.body}`)
          else assert.equal(r.statusCode, 429, `request ${i + 1} (over the burst of ${o.burst}): ${r.body}`)
        }
      })
    })

    test('the general address limit (also for a URL the router cannot parse) counts the /64', async () => {
      const rule = addressRule(t.ctx.config)
      const drain = () =>
        t.ctx.limits.rate.take(`${ADDRESS_BUCKET}2001:db8:30:1::/64`, rule, Date.now(), rule.burst)
      await drain()
      const health = await from('2001:db8:30:1::beef', { method: 'GET', url: '/health' })
      assertProblem(health, 429, 'RATE_LIMITED')
      await drain()
      const bad = await from('2001:db8:30:1::cafe', { method: 'GET', url: '/metrics/%E0%A4%A' })
      assertProblem(bad, 429, 'RATE_LIMITED')
    })
  })

  describe(`behind trusted proxies the client is the right-most untrusted hop: ${backends.name}`, {
    skip: backends.skip ?? undefined,
  }, () => {
    let t: TestApp
    before(async () => {
      t = await startTestApp({ ...backends, env: { TRUST_PROXY: 'loopback,10.0.0.0/8' } })
    })
    after(() => t?.close())
    const free = (remoteAddress: string, xff: string) =>
      t.app.fastify.inject({
        method: 'POST',
        url: '/auth/provision-free',
        headers: { ...json, 'x-forwarded-for': xff },
        payload: '{}',
        remoteAddress,
      })

    test('a forged left-most X-Forwarded-For entry changes nothing: three keys, then 429', async () => {
      const statuses: number[] = []
      for (let i = 1; i <= 8; i++)
        statuses.push((await free('127.0.0.1', `192.0.2.${i}, 203.0.113.50`)).statusCode)
      assert.deepEqual(statuses, [201, 201, 201, 429, 429, 429, 429, 429])
    })

    test('through two trusted hops (a balancer on 10/8, then the local proxy), the client before them', async () => {
      const statuses: number[] = []
      for (let i = 1; i <= 4; i++)
        statuses.push((await free('127.0.0.1', `198.18.0.${i}, 203.0.113.60, 10.1.2.3`)).statusCode)
      assert.deepEqual(statuses, [201, 201, 201, 429])
    })

    test('an IPv6 client named by the proxy counts by its /64', async () => {
      const statuses: number[] = []
      for (let i = 1; i <= 4; i++) statuses.push((await free('127.0.0.1', `2001:db8:40:1::${i}`)).statusCode)
      assert.deepEqual(statuses, [201, 201, 201, 429])
    })

    test('a client that is not a trusted proxy cannot name another client', async () => {
      const statuses: number[] = []
      for (let i = 1; i <= 4; i++)
        statuses.push((await free('198.51.100.200', `203.0.113.${100 + i}`)).statusCode)
      assert.deepEqual(statuses, [201, 201, 201, 429])
    })
  })

  describe(`a daily cap on free keys across nodes: ${backends.name}`, {
    skip: backends.skip ?? undefined,
  }, () => {
    let t: TestApp
    let nodeB: Awaited<ReturnType<typeof createServerApp>>
    const logA = memoryLog()
    const logB = memoryLog()
    before(async () => {
      t = await startTestApp({
        ...backends,
        log: logA.log,
        env: { ERM3_FREE_PROVISION_DAILY_CAP: '4', METRICS_TOKEN: 'edge-test-metrics-token' },
      })
      // A second node on the same database and limits.
      nodeB = await createServerApp({ ...t.ctx, log: logB.log }, { drainMs: 200 })
    })
    after(async () => {
      await nodeB?.close()
      await t?.close()
    })
    const free = (node: 'A' | 'B', remoteAddress: string, payload = '{}') =>
      (node === 'A' ? t.app : nodeB).fastify.inject({
        method: 'POST',
        url: '/auth/provision-free',
        headers: json,
        payload,
        remoteAddress,
      })
    const capWarnings = (lines: LogLine[]) =>
      lines.filter((l) => l.level === 40 && l.msg.includes('daily cap is reached'))

    test('refusals for other reasons spend none; the fifth key of the day is a 503 on every node', async () => {
      for (let i = 0; i < 3; i++) assert.equal((await free('A', '203.0.113.1')).statusCode, 201)
      // Refused by its address's limit, or for its body: no key, and none of the cap spent.
      for (let i = 0; i < 5; i++) assert.equal((await free('A', '203.0.113.1')).statusCode, 429)
      assert.equal((await free('B', '203.0.113.2', '{"nonsense":1}')).statusCode, 400)
      assert.equal((await free('B', '203.0.113.2')).statusCode, 201, 'the fourth key of the day')
      for (const [node, address] of [
        ['B', '203.0.113.3'],
        ['A', '203.0.113.4'],
        ['A', '203.0.113.5'],
      ] as const) {
        const r = await free(node, address)
        const p = assertProblem(r, 503, 'UNAVAILABLE')
        const now = t.ctx.now()
        const toMidnight = Math.ceil(((Math.floor(now / 86_400_000) + 1) * 86_400_000 - now) / 1000)
        const retry = Number(r.headers['retry-after'])
        assert.ok(Math.abs(retry - toMidnight) <= 5, `Retry-After ${retry} ≈ ${toMidnight} s to 00:00 UTC`)
        assert.equal(p.retry_after_seconds, retry)
      }
      // The operator hears of it once per node and day, and counts every refusal.
      assert.equal(capWarnings(logA.lines).length, 1)
      assert.equal(capWarnings(logB.lines).length, 1)
      const prom = await t.app.fastify.inject({
        method: 'GET',
        url: '/metrics-prom',
        headers: { authorization: 'Bearer edge-test-metrics-token' },
      })
      assert.match(prom.body, /^erm3_free_provision_cap_refusals_total 2$/m)
    })

    test('the next UTC day has its own cap', async () => {
      const now = t.ctx.now()
      t.clock.offsetMs += (Math.floor(now / 86_400_000) + 1) * 86_400_000 - now + 1000
      assert.equal((await free('A', '203.0.113.6')).statusCode, 201)
    })
  })
}

for (const b of BACKEND_PAIRS) addressSuite(b)

describe('free keys turned off (ERM3_FREE_PROVISION_DAILY_CAP=0)', () => {
  let t: TestApp
  before(async () => {
    t = await startTestApp({ env: { ERM3_FREE_PROVISION_DAILY_CAP: '0' } })
  })
  after(() => t?.close())
  test('POST /auth/provision-free is 403 FORBIDDEN, and the front page does not offer it', async () => {
    const r = await t.app.fastify.inject({
      method: 'POST',
      url: '/auth/provision-free',
      headers: json,
      payload: '{}',
    })
    assertProblem(r, 403, 'FORBIDDEN')
    const page = await t.app.fastify.inject({ method: 'GET', url: '/' })
    assert.doesNotMatch(page.body, /provision-free/)
  })
})

describe('TRUST_PROXY names the proxies; "true" is refused at start', () => {
  test('true, a hop count and malformed entries stop the process with a message naming the variable', () => {
    for (const v of ['true', '1', '2', 'loopback,not-an-address', '10.0.0.0/40'])
      assert.throws(() => loadConfig({ TRUST_PROXY: v }), /TRUST_PROXY.*list the proxies/)
  })
  test('lists of addresses, ranges and names are kept; false and unset trust nobody', () => {
    assert.deepEqual(loadConfig({ TRUST_PROXY: ' loopback, 10.0.0.0/8 ,2001:db8::1' }).server.trustProxy, [
      'loopback',
      '10.0.0.0/8',
      '2001:db8::1',
    ])
    assert.deepEqual(loadConfig({ TRUST_PROXY: 'false' }).server.trustProxy, [])
    assert.deepEqual(loadConfig({}).server.trustProxy, [])
    assert.equal(loadConfig({}).server.ipv6Prefix, 64)
    assert.equal(loadConfig({ ERM3_IPV6_PREFIX: '56' }).server.ipv6Prefix, 56)
  })
})

// ---------------------------------------------------------------------- slow and greedy clients ----

describe('request deadlines on a real listener', () => {
  let t: TestApp
  let port: number
  const { log, lines } = memoryLog()
  before(async () => {
    t = await startTestApp({ log, env: { ERM3_HEADERS_TIMEOUT_MS: '300', ERM3_REQUEST_TIMEOUT_MS: '600' } })
    port = portOf(await t.listen())
  })
  after(() => t?.close())

  test('ten stalled bodies are each answered 408 REQUEST_TIMEOUT and closed', async () => {
    const conns = await Promise.all(Array.from({ length: 10 }, () => open(port)))
    for (const c of conns)
      c.s.write(
        'POST /auth/provision-free HTTP/1.1\r\nHost: erm3.test\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"na',
      )
    for (const c of conns) {
      await until('a stalled body is cut off', c.closed)
      const r = parseAnswer(c.data())
      assertProblem(r, 408, 'REQUEST_TIMEOUT')
    }
  })

  test('a connection that sends nothing is closed at the headers deadline', async () => {
    const c = await open(port)
    await until('a silent connection is closed', c.closed)
    assertProblem(parseAnswer(c.data()), 408, 'REQUEST_TIMEOUT')
  })

  test('a kept-alive connection idle between requests is not cut by the headers deadline', async () => {
    const c = await open(port)
    const get = 'GET /health HTTP/1.1\r\nHost: erm3.test\r\n\r\n'
    c.s.write(get)
    await until('the first answer', () => c.data().includes('\r\n\r\n'))
    // Idle for several headers deadlines (0.3 s each), far below the keep-alive timeout (72 s).
    await new Promise((r) => setTimeout(r, 1500))
    assert.equal(c.closed(), false)
    c.s.write(get)
    await until('the second answer', () => (c.data().match(/HTTP\/1\.1 200/g) ?? []).length === 2)
    c.s.destroy()
  })

  test('stalled headers are answered 408 and closed', async () => {
    const c = await open(port)
    c.s.write('GET /health HTTP/1.1\r\nHost: erm3.test\r\nX-Slow: ')
    await until('stalled headers are cut off', c.closed)
    assertProblem(parseAnswer(c.data()), 408, 'REQUEST_TIMEOUT')
  })

  test('nothing of it is logged as an error, nor with a stack', async () => {
    await until('the aborted requests are logged', () =>
      lines.some((l) => l.msg === 'client left mid-request'),
    )
    const bad = lines.filter((l) => l.level >= 50 || JSON.stringify(l).includes('"stack"'))
    assert.deepEqual(bad, [])
  })
})

describe('connections per client address on a real listener', () => {
  let t: TestApp
  let port: number
  before(async () => {
    t = await startTestApp({
      env: { ERM3_MAX_CONNECTIONS_PER_ADDRESS: '3', METRICS_TOKEN: 'edge-conn-token' },
    })
    port = portOf(await t.listen())
  })
  after(() => t?.close())
  const health = 'GET /health HTTP/1.1\r\nHost: erm3.test\r\n\r\n'

  test('the fourth connection from one address is closed at once; the three open ones still work', async () => {
    const held = [await open(port), await open(port), await open(port)]
    const fourth = await open(port)
    await until('the fourth connection is closed by the server', fourth.closed)
    assert.equal(fourth.data(), '', 'closed without an answer')
    for (const c of held) {
      c.s.write(health)
      await until('an answer on a held connection', () => c.data().includes('\r\n\r\n'))
      assert.equal(parseAnswer(c.data()).status, 200)
    }
    // One closed frees a place.
    ;(held[0] as { s: Socket }).s.destroy()
    let ok = false
    for (let i = 0; i < 100 && !ok; i++) {
      const c = await open(port)
      c.s.write(health)
      await until('an answer or a close', () => c.closed() || c.data().includes('\r\n\r\n'))
      ok = c.data().startsWith('HTTP/1.1 200')
      c.s.destroy()
      if (!ok) await new Promise((r) => setTimeout(r, 20))
    }
    assert.ok(ok, 'a new connection is served once one of the three closed')
    for (const c of held) c.s.destroy()
    const prom = await t.app.fastify.inject({
      method: 'GET',
      url: '/metrics-prom',
      headers: { authorization: 'Bearer edge-conn-token' },
    })
    assert.match(prom.body, /^erm3_connections_refused_total [1-9]\d*$/m)
  })

  test('a trusted proxy is not capped: it carries every client’s connections', async () => {
    const proxied = await startTestApp({
      env: { ERM3_MAX_CONNECTIONS_PER_ADDRESS: '2', TRUST_PROXY: 'loopback' },
    })
    try {
      const p = portOf(await proxied.listen())
      const conns = await Promise.all(Array.from({ length: 5 }, () => open(p)))
      for (const c of conns) c.s.write(health)
      for (const c of conns) {
        await until('an answer', () => c.closed() || c.data().includes('\r\n\r\n'))
        assert.ok(c.data().startsWith('HTTP/1.1 200'), c.data().slice(0, 100))
        c.s.destroy()
      }
    } finally {
      await proxied.close()
    }
  })
})

// ------------------------------------------------------------------------------ low findings ----

describe('malformed HTTP is a problem document; a client leaving is not an error', () => {
  let t: TestApp
  let port: number
  const { log, lines } = memoryLog()
  before(async () => {
    t = await startTestApp({ log })
    port = portOf(await t.listen())
  })
  after(() => t?.close())

  test('garbage, an oversized header and HTTP/1.1 without Host: 400 INVALID_REQUEST problems', async () => {
    for (const bytes of [
      'GARBAGE\r\n\r\n',
      'GET / HTTP/1.1\r\nHost: erm3.test\r\nBad Header Name: x\r\n\r\n',
      `GET / HTTP/1.1\r\nHost: erm3.test\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`,
      'GET /health HTTP/1.1\r\n\r\n',
    ]) {
      const r = await exchange(port, bytes)
      assertProblem(r, 400, 'INVALID_REQUEST')
    }
  })

  test('a client that leaves mid-body is logged at info, without a stack', async () => {
    const c = await open(port)
    c.s.write(
      'POST /auth/provision-free HTTP/1.1\r\nHost: erm3.test\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"na',
    )
    await new Promise((r) => setTimeout(r, 50))
    c.s.destroy()
    await until('the abort is logged', () => lines.some((l) => l.msg === 'client left mid-request'))
    const left = lines.find((l) => l.msg === 'client left mid-request') as LogLine
    assert.equal(left.level, 30)
    assert.deepEqual(
      lines.filter((l) => l.level >= 50 || JSON.stringify(l).includes('"stack"')),
      [],
    )
  })
})

describe('/metrics-prom is off unless the operator sets METRICS_TOKEN', () => {
  test('off by default: 404, no metrics', async () => {
    const t = await startTestApp()
    try {
      const r = await t.app.fastify.inject({ method: 'GET', url: '/metrics-prom' })
      assertProblem(r, 404, 'NOT_FOUND')
      assert.doesNotMatch(r.body, /erm3_http/)
    } finally {
      await t.close()
    }
  })
  test('with a token: only its bearer reads them', async () => {
    const t = await startTestApp({ env: { METRICS_TOKEN: 'a-token-the-operator-chose' } })
    try {
      const get = (authorization?: string) =>
        t.app.fastify.inject({
          method: 'GET',
          url: '/metrics-prom',
          headers: authorization ? { authorization } : {},
        })
      assertProblem(await get(), 401, 'MISSING_CREDENTIALS')
      assertProblem(await get('Bearer another-token'), 401, 'MISSING_CREDENTIALS')
      const ok = await get('Bearer a-token-the-operator-chose')
      assert.equal(ok.statusCode, 200)
      assert.match(ok.body, /erm3_http_requests_total/)
    } finally {
      await t.close()
    }
  })
})

describe('/health names no file, directory or server', () => {
  let t: TestApp
  before(async () => {
    t = await startTestApp()
  })
  after(() => t?.close())
  test('the database detail has no path; a refused build’s error has none either', async () => {
    t.ctx.models.recordReloadFailure({
      build: 'b-broken',
      error: `ENOENT: no such file or directory, open '${t.home}/store/builds/b-broken/manifest.json' (from https://bucket.example.com/erm3/CURRENT via 10.0.0.7:9000)`,
      at: t.ctx.now(),
    })
    const r = await t.app.fastify.inject({ method: 'GET', url: '/health' })
    assert.equal(r.statusCode, 200)
    const h = JSON.parse(r.body)
    assert.match(h.database.detail, /^sqlite schema v\d+$/)
    assert.match(h.model.last_reload_failure.error, /^ENOENT: no such file or directory/)
    for (const leak of [t.home, 'erm3.db', 'bucket.example.com', '10.0.0.7', tmpdir()])
      assert.ok(!r.body.includes(leak), `/health shows ${leak}: ${r.body}`)
  })
})

describe('files erm3 creates under ERM3_HOME are its own', () => {
  const mode = (file: string) => statSync(file).mode & 0o777
  test('the SQLite database and its -wal and -shm are 0600; secrets, webhook key and outbox too', async () => {
    const t = await startTestApp()
    try {
      await t.account(1)
      await t.app.fastify.inject({
        method: 'POST',
        url: '/auth/login',
        headers: json,
        payload: JSON.stringify({ email: 'modes@example.com' }),
      })
      const db = join(t.home, 'erm3.db')
      for (const f of [db, `${db}-wal`, `${db}-shm`]) assert.equal(mode(f).toString(8), '600', f)
      assert.equal(mode(join(t.home, 'outbox')).toString(8), '700')
      assert.equal(mode(join(t.home, 'outbox', 'mail.jsonl')).toString(8), '600')
      await secretsFor(loadConfig({ ERM3_HOME: t.home }))
      for (const f of ['secrets.json', 'webhook-key'])
        assert.equal(mode(join(t.home, f)).toString(8), '600', f)
      // Nothing else at the top of the home is readable by others.
      for (const f of readdirSync(t.home)) assert.equal(mode(join(t.home, f)) & 0o077, 0, f)
    } finally {
      await t.close()
    }
  })
  test('a database an older erm3 left readable by others is made owner-only when opened', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'erm3-modes-'))
    try {
      const db = join(dir, 'erm3.db')
      const first = createSqliteAccountStore(db)
      await first.migrate()
      await first.close()
      writeFileSync(`${db}-wal`, '')
      for (const f of [db, `${db}-wal`]) chmodSync(f, 0o644)
      const again = createSqliteAccountStore(db)
      try {
        for (const f of [db, `${db}-wal`]) assert.equal(mode(f).toString(8), '600', f)
      } finally {
        await again.close()
      }
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})

describe('HSTS over https; the errors page has the other pages’ headers', () => {
  test('PUBLIC_URL https: every response (fast path, 404, malformed) carries Strict-Transport-Security', async () => {
    const t = await startTestApp({ env: { PUBLIC_URL: 'https://erm3.test' } })
    try {
      const origin = await t.listen()
      const key = await t.key(await t.account(1))
      for (const [url, headers] of [
        ['/health', {}],
        ['/balance', { authorization: `Bearer ${key}` }],
        ['/no/such/path', {}],
      ] as const) {
        const r = await fetch(`${origin}${url}`, { headers })
        assert.equal(r.headers.get('strict-transport-security'), 'max-age=31536000', url)
      }
      const bad = await exchange(portOf(origin), 'GARBAGE\r\n\r\n')
      assert.equal(bad.headers['strict-transport-security'], 'max-age=31536000')
    } finally {
      await t.close()
    }
  })
  test('PUBLIC_URL http: no HSTS (it would be ignored, and wrong)', async () => {
    const t = await startTestApp()
    try {
      const r = await fetch(`${await t.listen()}/health`)
      assert.equal(r.headers.get('strict-transport-security'), null)
    } finally {
      await t.close()
    }
  })
  test('/docs/errors: a CSP that loads and frames nothing, nosniff and the referrer policy of /', async () => {
    const t = await startTestApp()
    try {
      const page = await t.app.fastify.inject({ method: 'GET', url: '/docs/errors' })
      const landing = await t.app.fastify.inject({ method: 'GET', url: '/' })
      const csp = String(page.headers['content-security-policy'])
      for (const d of [
        "default-src 'none'",
        "frame-ancestors 'none'",
        "base-uri 'none'",
        "form-action 'none'",
      ])
        assert.ok(csp.includes(d), `${d} in ${csp}`)
      for (const h of ['x-content-type-options', 'referrer-policy']) {
        assert.ok(page.headers[h], h)
        assert.equal(page.headers[h], landing.headers[h], h)
      }
    } finally {
      await t.close()
    }
  })
})
