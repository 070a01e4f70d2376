/**
 * A webhook cannot be pointed into the server's own networks. The URL is refused at
 * creation (every local range, in every form the URL parser accepts) and the target is checked
 * again at each delivery on what its name resolves to then: resolved once, every address checked,
 * the connection made only to the checked addresses. Loopback only with the operator's opt-in.
 * A refused target reads the same in the delivery log whatever the reason, and so does every
 * failure to connect.
 *
 * No test here reaches beyond 127.0.0.0/8: names are answered by an injected resolver, and the
 * egress guard (test/helpers/no-egress.ts) fails any connection that is not to loopback before a
 * packet leaves — and records every connection attempted, so a refusal is shown to come before
 * any connection.
 */
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { createServer } from 'node:http'
import { createServer as createTlsServer } from 'node:https'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { loadConfig } from '../../src/platform/config.ts'
import { newId } from '../../src/platform/ids.ts'
import { encryptSecret } from '../../src/services/webhooks/crypto.ts'
import { createDispatcher } from '../../src/services/webhooks/dispatcher.ts'
import { addressKind, type ResolveHost } from '../../src/services/webhooks/target.ts'
import { guardEgress } from '../helpers/no-egress.ts'
import {
  BACKEND_PAIRS,
  type BackendPair,
  sessionApi,
  startTestApp,
  type TestApp,
} from '../helpers/test-app.ts'
import { startReceiver } from '../helpers/webhook-receiver.ts'

// biome-ignore lint/suspicious/noExplicitAny: test bodies are read loosely
type Json = Record<string, any>

const REFUSED = 'target refused: not a public address'
const NO_CONNECTION = 'could not connect'
/** A public address for the resolver to answer: never connected to (the guard fails it first). */
const PUBLIC = '93.184.215.14'

const guard = guardEgress()
after(() => guard.restore())

/** Connections of the database and Redis clients: the only ones a refused delivery may leave. */
const backendPorts = new Set(
  [process.env.DATABASE_URL, process.env.REDIS_URL]
    .filter((u): u is string => !!u)
    .map((u) => Number(new URL(u).port || (u.startsWith('redis') ? 6379 : 5432))),
)
const attemptsSince = (mark: number) => guard.attempts.slice(mark).filter((a) => !backendPorts.has(a.port))

/** An injected resolver: answers from the table (a function per call number), counts every call. */
function fakeDns(table: Record<string, string[] | ((call: number) => string[]) | 'hang'>) {
  const calls: string[] = []
  const resolve: ResolveHost = async (host) => {
    calls.push(host)
    const a = table[host]
    if (a === 'hang') return new Promise(() => undefined)
    const list = typeof a === 'function' ? a(calls.filter((c) => c === host).length) : a
    if (!list) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' })
    return list.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }))
  }
  return { calls, resolve }
}

/** A self-signed certificate for hooks.example.com (null without openssl). */
const certificate = (() => {
  const dir = mkdtempSync(join(tmpdir(), 'erm3-cert-'))
  try {
    execFileSync(
      'openssl',
      [
        ...['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'],
        ...['-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem'), '-days', '1'],
        ...['-subj', '/CN=hooks.example.com', '-addext', 'subjectAltName=DNS:hooks.example.com'],
      ],
      { stdio: 'ignore' },
    )
    return {
      key: readFileSync(join(dir, 'key.pem'), 'utf8'),
      cert: readFileSync(join(dir, 'cert.pem'), 'utf8'),
    }
  } catch {
    return null
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})()

describe('the address policy: only public unicast (after unwrapping IPv4 carried in IPv6)', () => {
  const refused = [
    ...['0.0.0.0', '0.1.2.3', '10.0.0.1', '10.255.255.255', '172.16.0.1', '172.31.255.255', '192.168.0.1'],
    ...['100.64.0.1', '100.127.255.254', '169.254.169.254', '169.254.0.1', '192.0.0.1', '192.0.0.170'],
    ...['192.0.2.1', '198.51.100.1', '203.0.113.1', '198.18.0.1', '198.19.255.255', '192.88.99.1'],
    ...['224.0.0.1', '239.255.255.250', '240.0.0.1', '255.255.255.255'],
    ...['::', '::ffff:10.0.0.1', '::ffff:169.254.169.254', '::ffff:0:10.0.0.1', '::10.0.0.1', '::8.8.8.8'],
    ...['::127.0.0.1', '::7f00:1', 'fe80::1%eth0', 'ff02::1%1'],
    ...['fc00::1', 'fd12:3456::1', 'fe80::1', 'fec0::1', 'ff02::1', '100::1', '2001:db8::1', '3fff::1'],
    ...['64:ff9b::a9fe:a9fe', '64:ff9b::10.0.0.1', '64:ff9b::127.0.0.1', '64:ff9b:1::808:808'],
    ...['2002:a00:1::1', '2002:7f00:1::1', '2002:a9fe:a9fe::1', '2002:c0a8:1::1'],
    ...['2001::1', '2001:0:4136:e378:8000:63bf:3fff:fdd2', '2001:2::1', '2001:10::1', '5f00::1'],
    ...['not an address', '0x7f.1', '127.1', '2130706433'],
  ]
  for (const a of refused) test(`refused: ${a}`, () => assert.equal(addressKind(a), 'refused'))
  for (const a of ['127.0.0.1', '127.255.255.254', '::1', '::ffff:127.0.0.1'])
    test(`loopback (only with the opt-in): ${a}`, () => assert.equal(addressKind(a), 'loopback'))
  for (const a of [
    PUBLIC,
    '8.8.8.8',
    '1.1.1.1',
    '2606:4700:4700::1111',
    '64:ff9b::808:808',
    '2002:808:808::1',
  ])
    test(`public: ${a}`, () => assert.equal(addressKind(a), 'public'))
})

test('loopback targets are off unless the operator sets ERM3_WEBHOOK_ALLOW_LOOPBACK', () => {
  const allow = (v?: string) =>
    loadConfig(v === undefined ? {} : { ERM3_WEBHOOK_ALLOW_LOOPBACK: v }).server.webhookAllowLoopback
  assert.deepEqual([allow(), allow(''), allow('false'), allow('0')], [false, false, false, false])
  assert.deepEqual([allow('true'), allow('1')], [true, true])
  assert.throws(() => allow('yes'), /ERM3_WEBHOOK_ALLOW_LOOPBACK must be true or false/)
})

/** URLs refused at creation without the opt-in; the first group stays refused with it. */
const ALWAYS_REFUSED = [
  // private, link-local (cloud metadata), CGNAT, unspecified
  ...['https://10.0.0.1/h', 'http://10.0.0.1/h', 'https://172.16.5.4/h', 'https://192.168.1.1:8443/h'],
  ...[
    'https://169.254.169.254/latest/meta-data/',
    'https://100.64.0.1/h',
    'https://0.0.0.0/h',
    'https://0/h',
  ],
  // special and reserved IPv4
  ...['https://192.0.0.1/h', 'https://192.0.2.1/h', 'https://198.51.100.7/h', 'https://203.0.113.9/h'],
  ...['https://198.18.0.1/h', 'https://240.0.0.1/h', 'https://255.255.255.255/h', 'https://224.0.0.1/h'],
  // numeric forms the URL parser normalises: 10.0.0.1, 169.254.169.254, 192.168.0.1
  ...[
    'https://167772161/h',
    'https://0xa9fea9fe/h',
    'https://0xa9.0xfe.0xa9.0xfe/h',
    'https://0300.0250.0.1/h',
  ],
  ...['https://10.1/h', 'https://%31%30.0.0.1/h', 'https://１０.０.０.１/h', 'https://10.0.0.1./h'],
  // IPv6: unspecified, ULA, link-local, site-local, multicast, documentation, Teredo, benchmarking
  ...['https://[::]/h', 'https://[fd00::1]/h', 'https://[fc00::1]/h', 'https://[fe80::1]/h'],
  ...['https://[fec0::1]/h', 'https://[ff02::1]/h', 'https://[2001:db8::1]/h', 'https://[2001::1]/h'],
  ...['https://[2001:2::1]/h'],
  // IPv4-mapped, -translated, -compatible, NAT64 and 6to4 forms of private addresses
  ...['https://[::ffff:10.0.0.1]/h', 'https://[::ffff:a9fe:a9fe]/h', 'https://[::ffff:0:10.0.0.1]/h'],
  ...['https://[::10.0.0.1]/h', 'https://[64:ff9b::169.254.169.254]/h', 'https://[64:ff9b:1::1]/h'],
  ...['https://[2002:a00:1::1]/h', 'https://[2002:a9fe:a9fe::]/h'],
  // names local by definition, and single labels (resolved through the server's search domains)
  ...[
    'https://metadata/h',
    'https://metadata./h',
    'https://metadata.google.internal/h',
    'https://printer.local/h',
  ],
  ...['https://router.home.arpa/h', 'https://db.corp/h', 'https://x.test/h', 'https://kubernetes/h'],
  // http to a public name or address
  ...['http://hooks.example.com/h', `http://${PUBLIC}/h`],
]
/** Loopback in every form: refused unless the operator opted in. */
const LOOPBACK = [
  ...['https://127.0.0.1/h', 'http://127.0.0.1:8080/h', 'https://127.255.255.254/h', 'https://[::1]/h'],
  ...['https://2130706433/h', 'https://0x7f.1/h', 'https://0177.0.0.1/h', 'https://127.1/h'],
  ...['https://127.0.0.1./h', 'https://[::ffff:127.0.0.1]/h', 'https://１２７.０.０.１/h'],
  ...['https://localhost/h', 'http://localhost:9/h', 'https://localhost./h', 'https://LOCALHOST/h'],
  ...['https://a.localhost/h', 'https://ⓛocalhost/h'],
]
/** Accepted at creation (nothing is sent: a name is judged at delivery by what it resolves to). */
const ACCEPTED = [
  ...['https://hooks.example.com/h', 'https://hooks.example.com./h', `https://${PUBLIC}:8443/h`],
  ...['https://[2606:4700:4700::1111]/h', 'https://[64:ff9b::808:808]/h', 'https://[2002:808:808::1]/h'],
]

function targetSuite(backends: BackendPair) {
  describe(`webhook targets: ${backends.name}`, { skip: backends.skip ?? undefined }, () => {
    let plain: TestApp
    let dev: TestApp
    let n = 0
    before(async () => {
      plain = await startTestApp(backends)
      dev = await startTestApp({ ...backends, env: { ERM3_WEBHOOK_ALLOW_LOOPBACK: 'true' } })
    })
    after(async () => {
      await plain?.close()
      await dev?.close()
    })
    const onPlain = sessionApi(() => plain)
    const onDev = sessionApi(() => dev)
    async function user(t: TestApp) {
      const email = `tg${++n}@example.com`
      return { id: await t.account(0, email), email }
    }
    /** A subscription stored as it would be after a change of name or setting (no creation check). */
    async function stored(t: TestApp, accountId: string, url: string) {
      const id = newId('whs')
      await t.ctx.accounts.webhooks().createSubscription({
        id,
        accountId,
        url,
        events: ['key.created'],
        secretEnc: encryptSecret(t.ctx.secrets.webhookKey as string, id, 'whsec_targets'),
        createdAt: t.ctx.now(),
      })
      return id
    }
    /**
     * Sends one test event to each subscription with a dispatcher on `resolve`, and returns what
     * the subscriber reads of each (the delivery log's error) and the connections attempted.
     */
    async function deliver(
      t: TestApp,
      who: { id: string; email: string },
      subs: string[],
      resolve: ResolveHost,
    ) {
      const call = t === plain ? onPlain : onDev
      for (const id of subs) await t.ctx.accounts.webhooks().enqueueTest(who.id, id, t.ctx.now())
      // No retry falls due during the run: each test sees only its own attempts.
      const d = createDispatcher(t.ctx, { resolve, timeoutMs: 2000, baseDelayMs: 3600_000 })
      const mark = guard.attempts.length
      while ((await d.runOnce()) > 0) {}
      const attempts = attemptsSince(mark)
      const logs: Json[] = []
      for (const id of subs) {
        const r = await call(who, 'GET', `/account/webhooks/${id}/deliveries`)
        assert.equal(r.status, 200)
        const [one] = r.json.deliveries as Json[]
        assert.ok(one, `a delivery of ${id}`)
        logs.push(one)
      }
      return { logs, attempts }
    }

    test('creation and update refuse every local range, in every form, as a 400 problem', async () => {
      const who = await user(plain)
      const kept = (
        await onPlain(who, 'POST', '/account/webhooks', { url: ACCEPTED[0], events: ['key.created'] })
      ).json.id as string
      for (const url of [...ALWAYS_REFUSED, ...LOOPBACK]) {
        for (const [method, path] of [
          ['POST', '/account/webhooks'],
          ['POST', `/account/webhooks/${kept}`],
        ] as const) {
          const body = path === '/account/webhooks' ? { url, events: ['key.created'] } : { url }
          const r = await onPlain(who, method, path, body)
          assert.equal(r.status, 400, `${path} ${url} → ${r.status} ${r.text}`)
          assert.match(String(r.headers['content-type']), /^application\/problem\+json/)
          assert.equal(r.json.code, 'INVALID_REQUEST')
          assert.equal(r.json.errors?.[0]?.field, 'url', r.text)
        }
      }
      const list = await onPlain(who, 'GET', '/account/webhooks')
      assert.deepEqual(
        list.json.subscriptions.map((s: Json) => s.url),
        [ACCEPTED[0]],
        'nothing was created or changed',
      )
      for (const url of ACCEPTED) {
        const r = await onPlain(who, 'POST', '/account/webhooks', { url, events: ['key.created'] })
        assert.equal(r.status, 201, `${url} → ${r.status} ${r.text}`)
      }
    })

    test('with the loopback opt-in: loopback accepted, every other local range still refused', async () => {
      const who = await user(dev)
      for (const url of LOOPBACK) {
        const r = await onDev(who, 'POST', '/account/webhooks', { url, events: ['key.created'] })
        assert.equal(r.status, 201, `${url} → ${r.status} ${r.text}`)
        await onDev(who, 'DELETE', `/account/webhooks/${r.json.id}`)
      }
      for (const url of ALWAYS_REFUSED) {
        const r = await onDev(who, 'POST', '/account/webhooks', { url, events: ['key.created'] })
        assert.equal(r.status, 400, `${url} → ${r.status} ${r.text}`)
      }
    })

    test('every refused target reads the same, names no address, and no connection is attempted', async () => {
      const rx = await startReceiver()
      try {
        const who = await user(plain)
        const dns = fakeDns({
          'internal.example.com': ['10.1.2.3'],
          'meta.example.com': ['169.254.169.254'],
          'mixed.example.com': [PUBLIC, '10.0.0.1'],
          'v6.example.com': ['fd00::1'],
          'mapped.example.com': ['::ffff:192.168.0.10'],
          'nat64.example.com': ['64:ff9b::a9fe:a9fe'],
          localhost: ['127.0.0.1', '::1'],
        })
        const urls = [
          rx.url, // loopback without the opt-in (a subscription made while it was set)
          'https://10.0.0.1/h',
          'https://169.254.169.254/latest/meta-data/',
          'https://[::ffff:a9fe:a9fe]/h',
          'https://[fd00::1]/h',
          `https://0.0.0.0:${new URL(rx.url).port}/h`,
          'https://metadata/h',
          'https://localhost/h',
          'https://internal.example.com/h',
          'https://meta.example.com/h',
          'https://mixed.example.com/h',
          'https://v6.example.com/h',
          'https://mapped.example.com/h',
          'https://nat64.example.com/h',
        ]
        const subs = []
        for (const url of urls) subs.push(await stored(plain, who.id, url))
        const { logs, attempts } = await deliver(plain, who, subs, dns.resolve)
        logs.forEach((d, i) => {
          assert.equal(d.error, REFUSED, urls[i])
          assert.equal(d.log[0]?.error, REFUSED, urls[i])
          assert.equal(d.response_code, null)
        })
        assert.deepEqual(attempts, [], 'no connection was attempted')
        assert.equal(rx.received.length, 0)
        // Each name was resolved once; literals and names local by definition not at all.
        assert.deepEqual(dns.calls.sort(), [
          'internal.example.com',
          'localhost',
          'mapped.example.com',
          'meta.example.com',
          'mixed.example.com',
          'nat64.example.com',
          'v6.example.com',
        ])
      } finally {
        await rx.close()
      }
    })

    test('a name accepted at creation and re-pointed to a private address is refused at delivery', async () => {
      const who = await user(plain)
      const r = await onPlain(who, 'POST', '/account/webhooks', {
        url: 'https://rebind.example.com/h',
        events: ['key.created'],
      })
      assert.equal(r.status, 201)
      const dns = fakeDns({ 'rebind.example.com': ['169.254.169.254'] })
      const { logs, attempts } = await deliver(plain, who, [r.json.id], dns.resolve)
      assert.equal(logs[0]?.error, REFUSED)
      assert.deepEqual(attempts, [])
      assert.deepEqual(dns.calls, ['rebind.example.com'])
    })

    test('resolved once: the connection goes to the checked address, never to a second answer', async () => {
      // A public first answer, a private one after: the socket must use the first, unresolved again.
      const who = await user(plain)
      const dns = fakeDns({ 'public.example.com': (call) => (call === 1 ? [PUBLIC] : ['10.0.0.1']) })
      const sub = await stored(plain, who.id, 'https://public.example.com:8443/h')
      const { logs, attempts } = await deliver(plain, who, [sub], dns.resolve)
      assert.deepEqual(dns.calls, ['public.example.com'], 'one lookup')
      assert.deepEqual(
        attempts.map((a) => [a.host, a.port, a.addresses, a.passed]),
        [['public.example.com', 8443, [PUBLIC], false]],
        'one connection, to the checked address (failed by the guard before it left)',
      )
      assert.equal(logs[0]?.error, NO_CONNECTION)
    })

    test('with the opt-in, a name answered with loopback then private is delivered to loopback', async () => {
      const rx = await startReceiver()
      try {
        const who = await user(dev)
        const port = new URL(rx.url).port
        const dns = fakeDns({ 'hooks.example.com': (call) => (call === 1 ? ['127.0.0.1'] : ['10.0.0.1']) })
        const sub = await stored(dev, who.id, `http://hooks.example.com:${port}/hook`)
        const { logs, attempts } = await deliver(dev, who, [sub], dns.resolve)
        assert.equal(logs[0]?.status, 'delivered', JSON.stringify(logs[0]))
        assert.deepEqual(dns.calls, ['hooks.example.com'])
        assert.deepEqual(
          attempts.map((a) => [a.addresses, a.passed]),
          [[['127.0.0.1'], true]],
        )
        assert.equal(rx.received.length, 1)
        assert.equal(rx.received[0]?.headers.host, `hooks.example.com:${port}`, 'the name is kept as Host')
      } finally {
        await rx.close()
      }
    })

    test('with the opt-in: private targets and http to a public address stay refused', async () => {
      const who = await user(dev)
      const dns = fakeDns({ 'internal.example.com': ['10.0.0.7'], 'public.example.com': [PUBLIC] })
      const urls = [
        'https://10.0.0.1/h',
        'http://169.254.169.254/latest/meta-data/',
        'http://0.0.0.0:9/h',
        'https://internal.example.com/h',
        'http://public.example.com/h',
        'http://internal.example.com/h',
      ]
      const subs = []
      for (const url of urls) subs.push(await stored(dev, who.id, url))
      const { logs, attempts } = await deliver(dev, who, subs, dns.resolve)
      for (const [i, d] of logs.entries()) assert.equal(d.error, REFUSED, urls[i])
      assert.deepEqual(attempts, [])
    })

    test('failures to connect read the same: a closed port, an unknown name, a resolver that never answers', async () => {
      const who = await user(dev)
      const closed = createServer()
      await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r))
      const port = (closed.address() as AddressInfo).port
      await new Promise((r) => closed.close(r))
      const dns = fakeDns({ 'slow.localhost': 'hang' })
      const silent = await startReceiver()
      silent.status = null // accepts the connection, never answers
      try {
        const subs = [
          await stored(dev, who.id, `http://127.0.0.1:${port}/h`),
          await stored(dev, who.id, 'https://nowhere.example.com/h'),
          await stored(dev, who.id, 'http://slow.localhost/h'),
          await stored(dev, who.id, silent.url),
        ]
        for (const id of subs) await dev.ctx.accounts.webhooks().enqueueTest(who.id, id, dev.ctx.now())
        const d = createDispatcher(dev.ctx, { resolve: dns.resolve, timeoutMs: 1500, baseDelayMs: 3600_000 })
        while ((await d.runOnce()) > 0) {}
        const errors = []
        for (const id of subs) {
          const r = await onDev(who, 'GET', `/account/webhooks/${id}/deliveries`)
          errors.push((r.json.deliveries as Json[])[0]?.error)
        }
        // Only a connection that was made and then left unanswered says so.
        assert.deepEqual(errors, [NO_CONNECTION, NO_CONNECTION, NO_CONNECTION, 'timed out after 1500 ms'])
      } finally {
        await silent.close()
      }
    })

    test('TLS: the checked address is dialled with the name kept for SNI; a bad certificate is named', {
      skip: certificate ? false : 'no openssl to make a certificate',
    }, async () => {
      const names: (string | false | null)[] = []
      const server = createTlsServer(certificate ?? {}, (_req, res) => res.writeHead(204).end())
      // The client refuses the self-signed certificate after the server has read the ClientHello.
      server.on('tlsClientError', (_e, s) => names.push(s.servername))
      server.on('secureConnection', (s) => names.push(s.servername))
      await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
      try {
        const who = await user(dev)
        const port = (server.address() as AddressInfo).port
        const dns = fakeDns({ 'hooks.example.com': ['127.0.0.1'] })
        const sub = await stored(dev, who.id, `https://hooks.example.com:${port}/h`)
        const { logs, attempts } = await deliver(dev, who, [sub], dns.resolve)
        assert.deepEqual(
          attempts.map((a) => [a.host, a.addresses]),
          [['hooks.example.com', ['127.0.0.1']]],
        )
        assert.equal(logs[0]?.error, 'TLS handshake failed (DEPTH_ZERO_SELF_SIGNED_CERT)')
        assert.deepEqual(names, ['hooks.example.com'])
      } finally {
        server.closeAllConnections()
        await new Promise((r) => server.close(r))
      }
    })

    test('a redirect is an answer, not followed', async () => {
      const rx = await startReceiver()
      const redirect = createServer((req, res) => {
        req.resume()
        res.writeHead(307, { location: rx.url }).end()
      })
      await new Promise<void>((r) => redirect.listen(0, '127.0.0.1', r))
      try {
        const who = await user(dev)
        const port = (redirect.address() as AddressInfo).port
        const sub = await stored(dev, who.id, `http://127.0.0.1:${port}/h`)
        const { logs, attempts } = await deliver(dev, who, [sub], fakeDns({}).resolve)
        assert.equal(logs[0]?.response_code, 307)
        assert.equal(logs[0]?.error, 'HTTP 307')
        assert.equal(rx.received.length, 0)
        assert.deepEqual(
          attempts.map((a) => a.port),
          [port],
        )
      } finally {
        redirect.closeAllConnections()
        await new Promise((r) => redirect.close(r))
        await rx.close()
      }
    })
  })
}

for (const b of BACKEND_PAIRS) targetSuite(b)
