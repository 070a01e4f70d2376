import assert from 'node:assert/strict'
import { connect } from 'node:net'
import { after, before, describe, test } from 'node:test'
import { parseApiKey } from '../../src/contract/api-key.ts'
import { startTestApp, type TestApp } from '../helpers/test-app.ts'

describe('passwordless sign-in and provisioning', () => {
  let t: TestApp
  before(async () => {
    t = await startTestApp()
  })
  after(() => t?.close())

  const linkFor = (email: string) => {
    const mail = t.outbox().filter((m) => m.to === email)
    const text = mail[mail.length - 1]?.text ?? ''
    const url = text.match(/https?:\/\/\S+/)?.[0]
    assert.ok(url, `no link mailed to ${email}`)
    return new URL(url)
  }

  /** The `erm3_login` cookie a sign-in request set (the asking browser's nonce). */
  const stateCookie = (headers: Record<string, string>) => {
    const m = /erm3_login=([^;]+)/.exec(headers['set-cookie'] ?? '')
    assert.ok(m, `no erm3_login cookie in ${headers['set-cookie']}`)
    return `erm3_login=${m[1]}`
  }

  /** A program without a cookie jar: the link's token posted as JSON answers the session. */
  const signInByToken = async (email: string) => {
    await t.client.call('login', { body: { email } })
    const token = linkFor(email).searchParams.get('token') as string
    return (await t.client.call('confirmLogin', { body: { token } })).ok()
  }

  test('login link → session cookie + JWT → provision a live and a test key → the key works', async () => {
    const sent = await t.client.call('login', { body: { email: 'Ada@Example.com' } })
    assert.equal(sent.status, 202, sent.text)
    assert.match(sent.headers['set-cookie'] ?? '', /erm3_login=[^;]+;.*Path=\/auth;.*HttpOnly.*SameSite=Lax/i)
    const link = linkFor('ada@example.com')
    assert.equal(link.origin, 'http://erm3.test')
    // A client that kept the cookie of its sign-in request follows the link directly.
    const cb = await t.transport({
      method: 'GET',
      url: `${link.pathname}${link.search}`,
      headers: { cookie: stateCookie(sent.headers) },
    })
    assert.equal(cb.status, 200, cb.body)
    assert.match(cb.headers['set-cookie'] ?? '', /erm3_session=.*HttpOnly.*SameSite=Lax/i)
    assert.equal(cb.headers['cache-control'], 'no-store')
    const session = JSON.parse(cb.body) as { session_jwt: string; account_id: string; email: string }
    assert.equal(session.email, 'ada@example.com')
    // The link works once.
    const replay = await t.transport({
      method: 'GET',
      url: `${link.pathname}${link.search}`,
      headers: { cookie: stateCookie(sent.headers) },
    })
    assert.equal(replay.status, 401)
    const token = link.searchParams.get('token') as string
    assert.equal((await t.client.call('confirmLogin', { body: { token } })).status, 401)
    const live = await t.client.call('provision', {
      key: session.session_jwt,
      body: { environment: 'live', name: 'agent' },
    })
    assert.equal(live.status, 201, live.text)
    const lk = live.ok()
    assert.deepEqual(parseApiKey(lk.api_key), { kind: 'agent', environment: 'live' })
    assert.equal(lk.account_id, session.account_id)
    const test = (
      await t.client.call('provision', { key: session.session_jwt, body: { environment: 'test' } })
    ).ok()
    assert.equal(test.environment, 'test')
    const bal = (await t.client.call('getBalance', { key: lk.api_key })).ok()
    assert.equal(bal.account_id, session.account_id)
    assert.equal(bal.balance_usd, 0)
    assert.equal(bal.status.can_make_requests, false)
    // Signing in again reaches the same account; the cookie alone also authorises provisioning.
    const again = await t.client.call('login', { body: { email: 'ada@example.com' } })
    const l2 = linkFor('ada@example.com')
    const cb2 = await t.transport({
      method: 'GET',
      url: `${l2.pathname}${l2.search}`,
      headers: { cookie: stateCookie(again.headers) },
    })
    assert.equal(JSON.parse(cb2.body).account_id, session.account_id)
    const setCookie = String(cb2.headers['set-cookie'] ?? '')
    const session2 = /erm3_session=([^;]+)/.exec(setCookie)?.[1] as string
    const csrf = /erm3_csrf=([^;]+)/.exec(setCookie)?.[1] as string
    assert.ok(session2 && csrf, setCookie)
    assert.match(setCookie, /erm3_csrf=[^;]+;.*SameSite=Strict/i)
    assert.doesNotMatch(/erm3_csrf=[^,]*/.exec(setCookie)?.[0] ?? '', /HttpOnly/i)
    const cookie = `erm3_session=${session2}; erm3_csrf=${csrf}`
    // A change made with the cookie alone is refused (CSRF); with the token echoed it is made.
    const forged = await t.client.call('provision', {
      key: null,
      headers: { cookie },
      body: { environment: 'live' },
    })
    assert.equal(forged.status, 403, forged.text)
    const wrong = await t.client.call('provision', {
      key: null,
      headers: { cookie, 'x-csrf-token': `${csrf.slice(0, -2)}xx` },
      body: { environment: 'live' },
    })
    assert.equal(wrong.status, 403, wrong.text)
    const viaCookie = await t.client.call('provision', {
      key: null,
      headers: { cookie, 'x-csrf-token': decodeURIComponent(csrf) },
      body: { environment: 'live' },
    })
    assert.equal(viaCookie.status, 201, viaCookie.text)
  })

  test('provision: no session → 401 (even with a bad body); an API key is not a session; bad environment → 400', async () => {
    const none = await t.client.call('provision', { key: null, body: { environment: 'prod' as 'live' } })
    assert.equal(none.status, 401)
    assert.equal((none.json as { code: string }).code, 'MISSING_CREDENTIALS')
    const acct = await t.account(0)
    const apiKey = await t.key(acct)
    const notSession = await t.client.call('provision', { key: apiKey, body: { environment: 'live' } })
    assert.equal(notSession.status, 401)
    assert.equal((notSession.json as { code: string }).code, 'INVALID_KEY')
    const s = await signInByToken('bob@example.com')
    const bad = await t.client.call('provision', {
      key: s.session_jwt,
      body: { environment: 'prod' as 'live' },
    })
    assert.equal(bad.status, 400)
    const tooShort = await t.client.call('provision', {
      key: s.session_jwt,
      body: { environment: 'live', expires_in_seconds: 59 },
    })
    assert.equal(tooShort.status, 400)
    // A key that expires with a browser session (the dashboard's explorer key).
    const before = Date.now()
    const short = await t.client.call('provision', {
      key: s.session_jwt,
      body: { environment: 'live', expires_in_seconds: 3600 },
    })
    assert.equal(short.status, 201, short.text)
    const k = short.ok()
    const expires = Date.parse(k.expires_at as string)
    assert.ok(expires >= before + 3600_000 && expires <= Date.now() + 3600_000, k.expires_at as string)
    assert.equal((await t.client.call('getBalance', { key: k.api_key })).status, 200)
    t.clock.offsetMs = 3601_000
    try {
      const late = await t.client.call('getBalance', { key: k.api_key })
      assert.equal(late.status, 401)
      assert.equal((late.json as { code: string }).code, 'EXPIRED_KEY')
    } finally {
      t.clock.offsetMs = 0
    }
  })

  test('an expired session or sign-in link is refused', async () => {
    await t.client.call('login', { body: { email: 'cy@example.com' } })
    const link = linkFor('cy@example.com')
    t.clock.offsetMs = 16 * 60_000
    try {
      const late = await t.transport({ method: 'GET', url: `${link.pathname}${link.search}`, headers: {} })
      assert.equal(late.status, 401)
      const token = link.searchParams.get('token') as string
      assert.equal((await t.client.call('confirmLogin', { body: { token } })).status, 401)
    } finally {
      t.clock.offsetMs = 0
    }
    const s = await signInByToken('cy@example.com')
    t.clock.offsetMs = 13 * 3600_000
    try {
      const r = await t.client.call('provision', { key: s.session_jwt, body: { environment: 'live' } })
      assert.equal(r.status, 401)
      assert.equal((r.json as { code: string }).code, 'EXPIRED_KEY')
    } finally {
      t.clock.offsetMs = 0
    }
  })

  test('login redirects only to same-site paths (anything else continues to /app)', async () => {
    await t.client.call('login', { body: { email: 'dee@example.com', next: '//evil.example/x' } })
    assert.equal(linkFor('dee@example.com').searchParams.get('next'), '/app')
    const sent = await t.client.call('login', {
      body: { email: 'dee@example.com', next: '/oauth/authorize?x=1' },
    })
    const link = linkFor('dee@example.com')
    const r = await t.transport({
      method: 'GET',
      url: `${link.pathname}${link.search}`,
      headers: { cookie: stateCookie(sent.headers) },
    })
    assert.equal(r.status, 303)
    assert.equal(r.headers.location, '/oauth/authorize?x=1')
  })

  test('provision-free: a live key with 0.50 USD that works, 3 per IP per day, the 4th is 429', async () => {
    const made = []
    for (let i = 0; i < 3; i++) {
      const r = await t.client.call('provisionFree', { key: null, body: {} })
      assert.equal(r.status, 201, r.text)
      made.push(r.ok())
    }
    const k = made[0]
    assert.ok(k)
    assert.equal(k.balance_usd, 0.5)
    assert.deepEqual(parseApiKey(k.api_key), { kind: 'agent', environment: 'live' })
    const m = await t.client.call('getMetrics', { key: k.api_key, params: { ticker: 'AAPL' } })
    assert.equal(m.status, 200)
    assert.equal((await t.client.call('getBalance', { key: k.api_key })).ok().balance_usd, 0.499)
    const fourth = await t.client.call('provisionFree', { key: null, body: {} })
    assert.equal(fourth.status, 429)
    assert.equal((fourth.json as { code: string }).code, 'RATE_LIMITED')
    assert.ok(Number(fourth.headers['retry-after']) > 3600)
  })

  /**
   * One request written byte for byte, as curl sends it, from a loopback address of its own (the
   * per-address limit of provision-free counts each apart). Answers the status and the JSON body.
   */
  const rawPost = (origin: string, path: string, from: string, head: string[], body = '') =>
    new Promise<{ status: number; json: Record<string, unknown> }>((resolve, reject) => {
      const u = new URL(origin)
      const chunks: Buffer[] = []
      const sock = connect({ host: u.hostname, port: Number(u.port), localAddress: from }, () =>
        sock.write(
          `POST ${path} HTTP/1.1\r\nHost: ${u.host}\r\nUser-Agent: curl/8.5.0\r\nAccept: */*\r\n` +
            `Connection: close\r\n${head.map((h) => `${h}\r\n`).join('')}\r\n${body}`,
        ),
      )
      sock.on('data', (c: Buffer) => chunks.push(c))
      sock.on('error', reject)
      sock.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8')
        const [headText = '', rest = ''] = text.split('\r\n\r\n', 2)
        resolve({ status: Number(headText.split(' ')[1]), json: JSON.parse(rest || '{}') })
      })
    })

  test('raw bodies: provision-free with no body at all; provision defaults environment to live', async () => {
    const origin = await t.listen()
    // `curl -X POST <url>/auth/provision-free`: no Content-Type, no Content-Length, no bytes.
    const bare = await rawPost(origin, '/auth/provision-free', '127.0.0.21', [])
    assert.equal(bare.status, 201, JSON.stringify(bare.json))
    assert.equal(bare.json.environment, 'live')
    assert.equal(bare.json.balance_usd, 0.5)
    assert.deepEqual(parseApiKey(String(bare.json.api_key)), { kind: 'agent', environment: 'live' })
    // A JSON Content-Type with an empty body is no body too; a named key and {} still work.
    const typed = ['Content-Type: application/json', 'Content-Length: 0']
    assert.equal((await rawPost(origin, '/auth/provision-free', '127.0.0.22', typed)).status, 201)
    // Zero bytes sent chunked (no length declared), with or without a JSON Content-Type: no body.
    const chunked = 'Transfer-Encoding: chunked'
    for (const [from, head] of [
      ['127.0.0.31', [chunked]],
      ['127.0.0.32', ['Content-Type: application/json', chunked]],
    ] as [string, string[]][]) {
      const r = await rawPost(origin, '/auth/provision-free', from, head, '0\r\n\r\n')
      assert.equal(r.status, 201, `${head}: ${JSON.stringify(r.json)}`)
    }
    // A chunked body with bytes is parsed as usual.
    const chunkedBody = ['Content-Type: application/json', chunked]
    const c = await rawPost(
      origin,
      '/auth/provision-free',
      '127.0.0.33',
      chunkedBody,
      'c\r\n{"name":"c"}\r\n0\r\n\r\n',
    )
    assert.equal(c.status, 201, JSON.stringify(c.json))
    const cBad = await rawPost(
      origin,
      '/auth/provision-free',
      '127.0.0.34',
      chunkedBody,
      '7\r\n{"x":1}\r\n0\r\n\r\n',
    )
    assert.equal(cBad.status, 400)
    const json = (b: string) => ['Content-Type: application/json', `Content-Length: ${Buffer.byteLength(b)}`]
    const named = await rawPost(
      origin,
      '/auth/provision-free',
      '127.0.0.23',
      json('{"name":"n"}'),
      '{"name":"n"}',
    )
    assert.equal(named.status, 201)
    // What the body may hold is unchanged: an unknown field is a 400 naming it.
    const bogus = await rawPost(origin, '/auth/provision-free', '127.0.0.24', json('{"x":1}'), '{"x":1}')
    assert.equal(bogus.status, 400)
    assert.equal(bogus.json.code, 'INVALID_REQUEST')
    assert.match(String(bogus.json.detail), /x|additional/)
    // /auth/provision: no body, an empty JSON body or {} give a live key; test only when asked.
    const s = await signInByToken('raw-bodies@example.com')
    const auth = `Authorization: Bearer ${s.session_jwt}`
    for (const [head, body] of [
      [[auth], ''],
      [[auth, 'Content-Type: application/json', 'Content-Length: 0'], ''],
      [[auth, ...json('{}')], '{}'],
      [[auth, ...json('{"name":"cli"}')], '{"name":"cli"}'],
    ] as [string[], string][]) {
      const r = await rawPost(origin, '/auth/provision', '127.0.0.25', head, body)
      assert.equal(r.status, 201, `${body}: ${JSON.stringify(r.json)}`)
      assert.equal(r.json.environment, 'live')
      assert.deepEqual(parseApiKey(String(r.json.api_key)), { kind: 'agent', environment: 'live' })
      assert.equal(r.json.account_id, s.account_id)
    }
    const testKey = await rawPost(
      origin,
      '/auth/provision',
      '127.0.0.25',
      [auth, ...json('{"environment":"test"}')],
      '{"environment":"test"}',
    )
    assert.equal(testKey.json.environment, 'test')
    const bad = await rawPost(
      origin,
      '/auth/provision',
      '127.0.0.25',
      [auth, ...json('{"environment":"prod"}')],
      '{"environment":"prod"}',
    )
    assert.equal(bad.status, 400)
    // Without a session, no body is still a 401, not a key.
    assert.equal((await rawPost(origin, '/auth/provision', '127.0.0.26', [])).status, 401)
  })
})
