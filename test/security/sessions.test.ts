import assert from 'node:assert/strict'
import { createHash, randomBytes } from 'node:crypto'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { after, before, describe, test } from 'node:test'
import type { BrowserContext, Browser as ChromiumBrowser } from 'playwright-core'
import { createServerApp } from '../../src/main/app.ts'
import { safeNext } from '../../src/services/identity/login.ts'
import { chromiumSkip, launchChromium } from '../helpers/chromium.ts'
import * as fc from '../helpers/fc.ts'
import { encodeBody, freePort, hiddenFields } from '../helpers/oauth-browser.ts'
import { BACKEND_PAIRS, startTestApp, type TestApp } from '../helpers/test-app.ts'

/**
 * Sign-in and sessions, on both backend pairs:
 * - signing out ends the session on the server: the old cookie and the JWT answer 401, on this
 *   node and on another node of the same database; "sign out everywhere" ends every session of
 *   the account and no other account's;
 * - a sign-in link opened outside the browser that asked for it (the login-CSRF chain: an
 *   attacker's own link opened in the victim's browser) sets no session cookie and uses nothing:
 *   it shows a page naming the account, and only that page's same-origin form post signs in;
 * - `next` continues only to a same-origin path (the review's payloads, and any string at all);
 *   a control character in it is a 400 that leaves the link usable.
 */

const PUBLIC_URL = 'http://erm3.test'
const sha256 = (s: string) => createHash('sha256').update(s).digest('hex')
/** C0, DEL, C1, and the Unicode line and paragraph separators (written out here, not imported). */
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what it looks for
const CONTROL = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/

/** The payloads of the review and their relatives: each must land on this origin (here: /app). */
export const REDIRECT_PAYLOADS = [
  '/%09/evil',
  '/\\evil',
  '/%5Cevil',
  '/%5cevil',
  '//evil',
  '///evil',
  '/%2F%2Fevil',
  '/%2f/evil',
  'https://evil',
  'http:evil',
  '/.//evil',
  '/..//evil',
  '/a/..//evil',
  '/%2e%2e//evil',
  '/.%2e//evil',
  'evil',
  ' /evil',
]
/** Control characters: a `next` holding one is refused with a 400. */
export const CONTROL_PAYLOADS = [
  '/\t/evil',
  '/\n/evil',
  '/\r\n/evil',
  '/x\r\nSet-Cookie: a=b',
  '\t//evil',
  '/\u007f/evil',
  '/\u0085/evil',
  '/\u2028/evil',
  '/\u2029/evil',
  '/\u0000/evil',
]

interface Answer {
  status: number
  headers: Record<string, string | string[] | number | undefined>
  body: string
}

let browsers = 0

/** A browser over the in-process app: a cookie jar that honours Path and Max-Age=0, its own address. */
function browser(app: () => TestApp['app']) {
  const jar = new Map<string, { value: string; path: string }>()
  const n = browsers++
  const ip = `198.51.${100 + Math.floor(n / 250)}.${1 + (n % 250)}`
  const send = async (
    method: 'GET' | 'POST',
    url: string,
    o: { json?: unknown; form?: Record<string, string>; headers?: Record<string, string> } = {},
  ): Promise<Answer> => {
    const path = new URL(url, PUBLIC_URL).pathname
    const cookie = [...jar]
      .filter(([, c]) => path === c.path || path.startsWith(c.path.endsWith('/') ? c.path : `${c.path}/`))
      .map(([k, c]) => `${k}=${c.value}`)
      .join('; ')
    const headers: Record<string, string> = { 'x-forwarded-for': ip, ...(o.headers ?? {}) }
    if (cookie) headers.cookie = cookie
    const { contentType, payload } = encodeBody(o)
    if (contentType) headers['content-type'] = contentType
    const r = await app().fastify.inject({ method, url, headers, ...(payload ? { payload } : {}) })
    const set = r.headers['set-cookie']
    for (const line of set === undefined ? [] : [set].flat()) {
      const [pair = '', ...attrs] = line.split(';').map((x) => x.trim())
      const eq = pair.indexOf('=')
      const name = pair.slice(0, eq)
      const p = attrs.find((a) => /^path=/i.test(a))?.slice(5) ?? '/'
      if (attrs.some((a) => /^max-age=0$/i.test(a))) jar.delete(name)
      else jar.set(name, { value: pair.slice(eq + 1), path: p })
    }
    return { status: r.statusCode, headers: r.headers, body: r.body }
  }
  return {
    ip,
    jar,
    get: (url: string, headers?: Record<string, string>) => send('GET', url, { headers }),
    post: send.bind(null, 'POST'),
    cookie: (name: string) => jar.get(name)?.value ?? null,
  }
}
type Browser = ReturnType<typeof browser>

const setCookies = (a: Answer) => [a.headers['set-cookie'] ?? []].flat().map(String)
const problemCode = (a: Answer) => (JSON.parse(a.body) as { code?: string }).code

for (const backends of BACKEND_PAIRS) {
  describe(`sign-in and sessions: ${backends.name}`, { skip: backends.skip ?? undefined }, () => {
    let t: TestApp
    before(async () => {
      t = await startTestApp({ ...backends, env: { TRUST_PROXY: 'loopback' } })
    })
    after(() => t?.close())
    const newBrowser = () => browser(() => t.app)
    const newEmail = (who: string) => `${who}-${randomBytes(4).toString('hex')}@example.com`

    /** The token and `next` of the last link mailed to `email`. */
    const mailed = (email: string) => {
      const text =
        t
          .outbox()
          .filter((m) => m.to === email)
          .at(-1)?.text ?? ''
      const url = text.match(/https?:\/\/\S+/)?.[0]
      assert.ok(url, `no link mailed to ${email}`)
      return new URL(url)
    }
    const linkPath = (u: URL) => `${u.pathname}${u.search}`

    /** Asks for a link in `b` (which keeps the state cookie) and follows it there: signed in. */
    async function signIn(b: Browser, email: string, next?: string): Promise<Answer> {
      const sent = await b.post('/auth/login', { json: { email, ...(next ? { next } : {}) } })
      assert.equal(sent.status, 202, sent.body)
      const r = await b.get(linkPath(mailed(email)))
      assert.ok(r.status === 200 || r.status === 303, `${r.status} ${r.body}`)
      assert.ok(b.cookie('erm3_session'), 'signed in')
      return r
    }
    /** A dashboard call with the browser's session cookie (and its CSRF token on changes). */
    const dashboard = (b: Browser, method: 'GET' | 'POST', path: string) =>
      method === 'GET'
        ? b.get(path)
        : b.post(path, { headers: { 'x-csrf-token': decodeURIComponent(b.cookie('erm3_csrf') ?? '') } })

    describe('logout ends the session on the server', () => {
      test('the old cookie and the session JWT answer 401 REVOKED_KEY after logout', async () => {
        const b = newBrowser()
        const email = newEmail('out')
        const json = JSON.parse((await signIn(b, email)).body) as { session_jwt: string }
        const oldCookie = b.cookie('erm3_session') as string
        assert.equal(oldCookie, json.session_jwt)
        assert.equal((await dashboard(b, 'GET', '/auth/session')).status, 200)
        const out = await dashboard(b, 'POST', '/auth/logout')
        assert.equal(out.status, 204, out.body)
        assert.equal(b.cookie('erm3_session'), null, 'the browser forgot it')
        // Whoever kept a copy (the cookie before logout, the JWT it was) is refused now.
        const replay = await t.app.fastify.inject({
          method: 'GET',
          url: '/auth/session',
          headers: { cookie: `erm3_session=${oldCookie}` },
        })
        assert.equal(replay.statusCode, 401, replay.body)
        assert.equal(JSON.parse(replay.body).code, 'REVOKED_KEY')
        const bearer = await t.client.call('provision', {
          key: json.session_jwt,
          body: { environment: 'live' },
        })
        assert.equal(bearer.status, 401)
        assert.equal((bearer.json as { code: string }).code, 'REVOKED_KEY')
        // Signed in again: the sign-out is in the account's audit log, naming the session it ended.
        await signIn(b, email)
        const audit = await dashboard(b, 'GET', '/account/audit')
        const entries = (JSON.parse(audit.body) as { entries: { action: string; target: string | null }[] })
          .entries
        assert.deepEqual(
          entries.map((e) => e.action),
          ['session.signed_in', 'session.signed_out', 'session.signed_in'],
        )
        assert.equal(entries[1]?.target, entries[2]?.target)
        assert.match(entries[1]?.target ?? '', /^ses_/)
      })

      test('sign out everywhere: every session of the account is refused, another account’s still works; audited', async () => {
        const email = newEmail('everywhere')
        const [laptop, phone, other] = [newBrowser(), newBrowser(), newBrowser()]
        await signIn(laptop, email)
        await signIn(phone, email)
        // A program's session (the token posted as JSON).
        await laptop.post('/auth/login', { json: { email } })
        const token = mailed(email).searchParams.get('token') as string
        const program = (await t.client.call('confirmLogin', { body: { token } })).ok()
        const otherEmail = newEmail('bystander')
        await signIn(other, otherEmail)
        const r = await dashboard(laptop, 'POST', '/auth/logout-all')
        assert.equal(r.status, 200, r.body)
        assert.deepEqual(JSON.parse(r.body), { signed_out_sessions: 3 })
        assert.equal(laptop.cookie('erm3_session'), null)
        const phoneNow = await dashboard(phone, 'GET', '/auth/session')
        assert.equal(phoneNow.status, 401)
        assert.equal(problemCode(phoneNow), 'REVOKED_KEY')
        const programNow = await t.client.call('getSession', { key: program.session_jwt })
        assert.equal(programNow.status, 401)
        assert.equal(JSON.parse((await dashboard(other, 'GET', '/auth/session')).body).email, otherEmail)
        // Signed in again, the account's audit log tells the story.
        await signIn(laptop, email)
        const audit = await dashboard(laptop, 'GET', '/account/audit')
        const actions = (JSON.parse(audit.body) as { entries: { action: string; detail: unknown }[] }).entries
        assert.deepEqual(
          actions.map((e) => e.action),
          [
            'session.signed_in',
            'session.signed_out_everywhere',
            'session.signed_in',
            'session.signed_in',
            'session.signed_in',
          ],
        )
        assert.deepEqual(actions[1]?.detail, { sessions: 3 })
        assert.deepEqual(
          actions.map((e) => (e.detail as { via?: string } | null)?.via ?? null),
          ['link', null, 'api', 'link', 'link'],
        )
      })

      test('a session signed out on one node is refused by another node of the same database at once', async () => {
        // A second node: its own app and its own connection (pool) to the same database.
        const store = t.anotherStore()
        const nodeB = await createServerApp({ ...t.ctx, accounts: store }, { drainMs: 200 })
        try {
          const b = newBrowser()
          const json = JSON.parse((await signIn(b, newEmail('nodes'))).body) as { session_jwt: string }
          const onB = () =>
            nodeB.fastify.inject({
              method: 'GET',
              url: '/auth/session',
              headers: { authorization: `Bearer ${json.session_jwt}` },
            })
          assert.equal((await onB()).statusCode, 200, 'node B knows the session node A opened')
          assert.equal((await dashboard(b, 'POST', '/auth/logout')).status, 204)
          const refused = await onB()
          assert.equal(refused.statusCode, 401, refused.body)
          assert.equal(JSON.parse(refused.body).code, 'REVOKED_KEY')
        } finally {
          await nodeB.close()
          await store.close()
        }
      })
    })

    describe('login CSRF', () => {
      test('the attacker’s link opened in the victim’s browser sets no session and uses nothing: a page names the account', async () => {
        const attacker = newBrowser()
        const victim = newBrowser()
        const attackerEmail = newEmail('attacker')
        assert.equal((await attacker.post('/auth/login', { json: { email: attackerEmail } })).status, 202)
        assert.ok(attacker.cookie('erm3_login'), 'the asking browser holds its state')
        const link = linkPath(mailed(attackerEmail))
        const opened = await victim.get(link)
        assert.equal(opened.status, 200)
        assert.match(String(opened.headers['content-type']), /^text\/html/)
        assert.ok(
          setCookies(opened).every((c) => !/^erm3_session=|^erm3_csrf=/.test(c)),
          setCookies(opened).join(' | '),
        )
        assert.equal(victim.cookie('erm3_session'), null)
        assert.ok(opened.body.includes(`<h1>Sign in as ${attackerEmail}?</h1>`), opened.body)
        assert.ok(opened.body.includes(`in to erm3 as <strong>${attackerEmail}</strong>`), opened.body)
        // The page's security headers, as on every other HTML page.
        const csp = String(opened.headers['content-security-policy'])
        assert.match(csp, /frame-ancestors 'none'/)
        assert.match(csp, /form-action 'self'/)
        assert.doesNotMatch(csp, /unsafe-inline/)
        assert.equal(opened.headers['x-content-type-options'], 'nosniff')
        assert.equal(opened.headers['x-frame-options'], 'DENY')
        assert.equal(opened.headers['cache-control'], 'no-store')
        assert.equal(opened.headers['referrer-policy'], 'no-referrer')
        // The link was not used: in the browser that asked for it, it still signs in.
        const own = await attacker.get(link)
        assert.equal(own.status, 200, own.body)
        assert.equal(JSON.parse(own.body).email, attackerEmail)
      })

      test('the attacker’s page posting the confirmation form from the victim’s browser is refused', async () => {
        const email = newEmail('attacker')
        await newBrowser().post('/auth/login', { json: { email } })
        const link = linkPath(mailed(email))
        // The attacker's own copy of the confirmation page (his browser, his nonce).
        const fields = hiddenFields((await newBrowser().get(link)).body)
        assert.ok(fields.token && fields.csrf_token, 'the page carries the token and its CSRF token')
        const victim = newBrowser()
        const crossSite = await victim.post('/auth/callback', {
          form: fields,
          headers: { origin: 'http://evil.example', 'sec-fetch-site': 'cross-site' },
        })
        assert.equal(crossSite.status, 403, crossSite.body)
        assert.equal(problemCode(crossSite), 'FORBIDDEN')
        assert.equal(victim.cookie('erm3_session'), null)
        // Without any site header, and with the victim's own page nonce: another page's token is refused.
        await victim.get(link)
        assert.ok(victim.cookie('erm3_confirm'), 'the page set its nonce')
        const foreign = await victim.post('/auth/callback', { form: fields })
        assert.equal(foreign.status, 403, foreign.body)
        const none = await victim.post('/auth/callback', { form: { token: fields.token as string } })
        assert.equal(none.status, 403, none.body)
        assert.equal(victim.cookie('erm3_session'), null)
        // None of this used the link.
        const stillUsable = await t.client.call('confirmLogin', { body: { token: fields.token as string } })
        assert.equal(stillUsable.status, 200, stillUsable.text)
      })

      test('a sign-in request posted from another site binds nothing: its link asks for confirmation', async () => {
        const victim = newBrowser()
        const email = newEmail('planted')
        const sent = await victim.post('/auth/login', {
          form: { email },
          headers: { origin: 'http://evil.example', 'sec-fetch-site': 'cross-site' },
        })
        assert.equal(sent.status, 202, sent.body)
        assert.equal(victim.cookie('erm3_login'), null)
        const opened = await victim.get(linkPath(mailed(email)))
        assert.equal(opened.status, 200)
        assert.match(String(opened.headers['content-type']), /^text\/html/)
        assert.equal(victim.cookie('erm3_session'), null)
      })

      test('the confirmation page: scanners do not burn the link; its form signs in once and continues to next', async () => {
        const asker = newBrowser()
        const email = newEmail('phone')
        await asker.post('/auth/login', { json: { email, next: '/app#/keys' } })
        const link = linkPath(mailed(email))
        // A mail scanner fetches the link (GET and HEAD), twice.
        for (let i = 0; i < 2; i++) {
          assert.equal((await newBrowser().get(link)).status, 200)
          const head = await t.app.fastify.inject({ method: 'HEAD', url: link })
          assert.equal(head.statusCode, 200)
        }
        const phone = newBrowser()
        const page = await phone.get(link)
        assert.equal(page.status, 200)
        assert.ok(phone.cookie('erm3_confirm'), 'the page’s nonce')
        assert.match(
          setCookies(page).find((c) => c.startsWith('erm3_confirm=')) ?? '',
          /Path=\/auth\/callback;.*HttpOnly.*SameSite=Strict/i,
        )
        const fields = hiddenFields(page.body)
        assert.equal(fields.next, '/app#/keys')
        const done = await phone.post('/auth/callback', {
          form: fields,
          headers: { origin: PUBLIC_URL, 'sec-fetch-site': 'same-origin' },
        })
        assert.equal(done.status, 303, done.body)
        assert.equal(done.headers.location, '/app#/keys')
        assert.ok(phone.cookie('erm3_session'), 'signed in')
        assert.equal(phone.cookie('erm3_confirm'), null, 'the nonce is cleared')
        assert.equal(JSON.parse((await dashboard(phone, 'GET', '/auth/session')).body).email, email)
        // Used once: the link and its token now answer 401.
        assert.equal((await newBrowser().get(link)).status, 401)
        const again = await t.client.call('confirmLogin', { body: { token: fields.token as string } })
        assert.equal(again.status, 401)
      })

      test('programs: the token posted as JSON answers the session JWT and sets no cookie', async () => {
        const email = newEmail('agent')
        assert.equal((await t.client.call('login', { body: { email } })).status, 202)
        const token = mailed(email).searchParams.get('token') as string
        const r = await t.client.call('confirmLogin', { body: { token } })
        assert.equal(r.status, 200, r.text)
        assert.equal(r.headers['set-cookie'], undefined)
        const s = r.ok()
        assert.equal(s.email, email)
        assert.equal((await t.client.call('getSession', { key: s.session_jwt })).ok().email, email)
        // A browser posting JSON from another site is refused before the link is touched.
        await t.client.call('login', { body: { email } })
        const t2 = mailed(email).searchParams.get('token') as string
        const cross = await t.client.call('confirmLogin', {
          body: { token: t2 },
          headers: { origin: 'http://evil.example' },
        })
        assert.equal(cross.status, 403, cross.text)
        assert.equal((await t.client.call('confirmLogin', { body: { token: t2 } })).status, 200)
      })
    })

    describe('next continues only to a same-origin path', () => {
      /** A link for a fresh address, bound to browser `b` (asked for in it), with `next` in its query. */
      async function boundLink(b: Browser, next: string): Promise<{ path: string; token: string }> {
        const email = newEmail('next')
        assert.equal((await b.post('/auth/login', { json: { email } })).status, 202)
        const u = mailed(email)
        u.searchParams.set('next', next)
        return { path: linkPath(u), token: u.searchParams.get('token') as string }
      }

      test('the review’s payloads continue to /app, given at sign-in or in the link', async () => {
        for (const next of REDIRECT_PAYLOADS) {
          const b = newBrowser()
          const email = newEmail('payload')
          const sent = await b.post('/auth/login', { json: { email, next } })
          assert.equal(sent.status, 202, `${JSON.stringify(next)}: ${sent.body}`)
          assert.equal(mailed(email).searchParams.get('next'), '/app', JSON.stringify(next))
          const direct = await b.get((await boundLink(b, next)).path)
          assert.equal(direct.status, 303, `${JSON.stringify(next)}: ${direct.body}`)
          assert.equal(direct.headers.location, '/app', JSON.stringify(next))
        }
      })

      test('same-origin paths survive as they were given', async () => {
        for (const next of [
          '/app#/keys',
          '/oauth/authorize?client_id=x&redirect_uri=http%3A%2F%2F127.0.0.1%2Fcb',
          '/docs/api',
        ]) {
          const b = newBrowser()
          const r = await b.get((await boundLink(b, next)).path)
          assert.equal(r.headers.location, next)
        }
      })

      test('a control character in next is a 400 problem; the link is not used and works without it', async () => {
        for (const next of CONTROL_PAYLOADS) {
          const b = newBrowser()
          const refusedLogin = await b.post('/auth/login', { json: { email: newEmail('ctl'), next } })
          assert.equal(refusedLogin.status, 400, `${JSON.stringify(next)}: ${refusedLogin.body}`)
          assert.match(String(refusedLogin.headers['content-type']), /^application\/problem\+json/)
          assert.equal(problemCode(refusedLogin), 'INVALID_REQUEST')
          const link = await boundLink(b, next)
          const refused = await b.get(link.path)
          assert.equal(refused.status, 400, `${JSON.stringify(next)}: ${refused.body}`)
          assert.match(String(refused.headers['content-type']), /^application\/problem\+json/)
          assert.equal(problemCode(refused), 'INVALID_REQUEST')
          const posted = await t.client.call('confirmLogin', { body: { token: link.token, next } })
          assert.equal(posted.status, 400, posted.text)
          assert.equal(b.cookie('erm3_session'), null)
          // The same link without the bad next still signs in.
          const ok = await b.get(link.path.replace(/&next=.*$/, ''))
          assert.equal(ok.status, 200, ok.body)
          assert.ok(b.cookie('erm3_session'), 'signed in')
        }
      })

      test('property: whatever next a link carries, the answer is a 400 or a same-origin path', async () => {
        const b = newBrowser()
        // Links minted straight into the store (bound to this browser's state): no mail, no rate limit.
        const state = randomBytes(32).toString('base64url')
        await fc.assert(
          fc.asyncProperty(nextArbitrary, async (next) => {
            const token = randomBytes(32).toString('base64url')
            const now = t.ctx.now()
            await t.ctx.accounts.createLoginToken({
              hash: sha256(token),
              email: newEmail('prop'),
              expiresAt: now + 600_000,
              createdAt: now,
              stateHash: sha256(state),
            })
            b.jar.set('erm3_login', { value: state, path: '/auth' })
            const q = new URLSearchParams({ token, next })
            const r = await b.get(`/auth/callback?${q}`)
            if (r.status === 400) return assert.ok(CONTROL.test(next), next)
            // No next: the session JSON, no redirect.
            if (next === '') return assert.equal(r.status, 200, r.body)
            assert.equal(r.status, 303, `${JSON.stringify(next)} → ${r.status} ${r.body}`)
            assertSameOriginPath(String(r.headers.location))
          }),
          { numRuns: 150 },
        )
      })
    })
  })
}

/** Strings built to look like redirects: slashes, backslashes, encodings, dots, controls, schemes. */
const nextArbitrary = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc
    .array(
      fc.constantFrom(
        '/',
        '//',
        '\\',
        '%2f',
        '%2F',
        '%5c',
        '%5C',
        '%09',
        '%0a',
        '%00',
        '%2e',
        '.',
        '..',
        '\t',
        '\n',
        '\r',
        '\u2028',
        '\u0085',
        ' ',
        '@',
        ':',
        '?',
        '#',
        'evil',
        'evil.example',
        'https:',
        'http:',
        'javascript:',
        '%',
        'app',
      ),
      { maxLength: 10 },
    )
    .map((parts) => parts.join('')),
)

/** What a browser does with a Location: resolve it against the page that answered. */
function assertSameOriginPath(location: string): void {
  assert.ok(location.startsWith('/') && !location.startsWith('//'), JSON.stringify(location))
  assert.ok(!location.includes('\\'), JSON.stringify(location))
  assert.ok(!CONTROL.test(location), JSON.stringify(location))
  assert.equal(new URL(location, `${PUBLIC_URL}/auth/callback`).origin, PUBLIC_URL, JSON.stringify(location))
}

describe('safeNext (property)', () => {
  test('any string: none given → null; else a same-origin path, the same for the browser', () => {
    fc.assert(
      fc.property(fc.oneof(nextArbitrary, fc.string({ unit: 'grapheme' })), (next) => {
        const r = safeNext(next, PUBLIC_URL)
        if (next === '') return assert.equal(r, null)
        assert.ok(r !== null, `${JSON.stringify(next)} → null`)
        assertSameOriginPath(r)
      }),
      { numRuns: 2000 },
    )
    assert.equal(safeNext(undefined, PUBLIC_URL), null)
    for (const p of [...REDIRECT_PAYLOADS, ...CONTROL_PAYLOADS])
      assert.equal(safeNext(p, PUBLIC_URL), '/app', p)
  })
})

/**
 * The same in a real Chromium against the server on 127.0.0.1 (SameSite and Location handling are
 * the browser's): the review's redirect payloads stay on the origin, and the login-CSRF chain is
 * broken. The attacker's site is a second loopback server reached as `localhost` (another site).
 * Chromium resolves no other name, and every request to another origin is aborted and recorded
 * before it is sent, so a redirect that escaped would show here without leaving the machine.
 */
describe('sign-in in Chromium', { skip: chromiumSkip ?? false }, () => {
  let t: TestApp
  let origin: string
  let evil: Server
  let evilOrigin: string
  let evilPage = ''
  let chromium: ChromiumBrowser
  let context: BrowserContext
  const escaped: string[] = []

  before(async () => {
    const port = await freePort()
    origin = `http://127.0.0.1:${port}`
    t = await startTestApp({ env: { PUBLIC_URL: origin, PORT: String(port) } })
    await t.app.fastify.listen({ port, host: '127.0.0.1' })
    evil = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(evilPage)
    })
    await new Promise<void>((r) => evil.listen(0, '127.0.0.1', r))
    evilOrigin = `http://localhost:${(evil.address() as AddressInfo).port}`
    chromium = await launchChromium([
      '--host-resolver-rules=MAP localhost 127.0.0.1, MAP * ~NOTFOUND, EXCLUDE 127.0.0.1',
    ])
  })
  after(async () => {
    await chromium?.close()
    await new Promise((r) => evil?.close(r))
    await t?.close()
  })

  /** A fresh browser profile whose requests may reach only our origin and the attacker's page. */
  async function newContext(): Promise<BrowserContext> {
    const c = await chromium.newContext()
    await c.route('**/*', (route) => {
      const u = new URL(route.request().url())
      if (u.origin === origin || u.origin === evilOrigin) return route.continue()
      escaped.push(route.request().url())
      return route.abort()
    })
    return c
  }

  /** A link bound to state `state` (minted in the store), for `email`. */
  async function mint(email: string, state: string | null): Promise<string> {
    const token = randomBytes(32).toString('base64url')
    const now = t.ctx.now()
    await t.ctx.accounts.createLoginToken({
      hash: sha256(token),
      email,
      expiresAt: now + 600_000,
      createdAt: now,
      stateHash: state === null ? null : sha256(state),
    })
    return token
  }

  const cookieNames = async (c: BrowserContext) => (await c.cookies(origin)).map((x) => x.name)

  /**
   * A link for `email` asked for in another browser (bound to a state this one lacks), clicked on a
   * page of the other site (a webmail, or the attacker's) in a fresh browser.
   */
  async function openFromOtherSite(email: string, next: string) {
    const token = await mint(email, randomBytes(32).toString('base64url'))
    const link = `${origin}/auth/callback?${new URLSearchParams({ token, next })}`
    const context = await newContext()
    const page = await context.newPage()
    evilPage = `<!doctype html><p>Your link: <a id="go" href="${link}">open</a></p>`
    await page.goto(evilOrigin)
    await page.click('#go')
    return { link, context, page }
  }

  test('the review’s payloads: the browser stays on the origin', async () => {
    context = await newContext()
    const page = await context.newPage()
    const state = randomBytes(32).toString('base64url')
    for (const next of [...REDIRECT_PAYLOADS, ...CONTROL_PAYLOADS]) {
      await context.addCookies([{ name: 'erm3_login', value: state, url: `${origin}/auth` }])
      const token = await mint(`chromium-${randomBytes(4).toString('hex')}@example.com`, state)
      const res = await page.goto(`${origin}/auth/callback?${new URLSearchParams({ token, next })}`)
      await page.waitForLoadState('load')
      assert.equal(new URL(page.url()).origin, origin, `${JSON.stringify(next)} → ${page.url()}`)
      assert.deepEqual(escaped, [], JSON.stringify(next))
      if (CONTROL_PAYLOADS.includes(next)) assert.equal(res?.status(), 400, JSON.stringify(next))
      else assert.equal(new URL(page.url()).pathname, '/app', JSON.stringify(next))
    }
    await context.close()
  })

  test('login CSRF: the attacker’s link opened from his site signs nothing in; his form post is refused', async () => {
    const attackerEmail = `attacker-${randomBytes(4).toString('hex')}@example.com`
    const { link, context: victim, page } = await openFromOtherSite(attackerEmail, '/app#/brokerage')
    await page.waitForURL((u) => u.origin === origin)
    await page.getByRole('heading', { name: `Sign in as ${attackerEmail}?` }).waitFor()
    assert.ok(!(await cookieNames(victim)).includes('erm3_session'), 'no session was set')
    // The attacker's page auto-posts the form with the token from his own copy of the page.
    const own = await chromium.newContext()
    const ownPage = await own.newPage()
    await ownPage.goto(link)
    const fields = hiddenFields(await ownPage.content())
    await own.close()
    const inputs = Object.entries(fields)
      .map(([k, v]) => `<input type="hidden" name="${k}" value="${v}">`)
      .join('')
    evilPage = `<!doctype html><form id="f" method="post" action="${origin}/auth/callback">${inputs}</form><script>document.getElementById('f').submit()</script>`
    const refused = page.waitForResponse(
      (r) => r.url() === `${origin}/auth/callback` && r.request().method() === 'POST',
    )
    await page.goto(evilOrigin)
    assert.equal((await refused).status(), 403)
    assert.ok(!(await cookieNames(victim)).includes('erm3_session'), 'no session was set')
    assert.deepEqual(escaped, [])
    await victim.close()
  })

  test('a link opened from a mail page in another browser: confirm, then signed in where next says', async () => {
    const email = `phone-${randomBytes(4).toString('hex')}@example.com`
    const { context: phone, page } = await openFromOtherSite(email, '/app#/keys')
    await page.getByRole('button', { name: `Sign in as ${email}` }).click()
    await page.waitForURL(`${origin}/app#/keys`)
    assert.ok((await cookieNames(phone)).includes('erm3_session'), 'signed in')
    await page.locator('#who', { hasText: email }).waitFor()
    assert.deepEqual(escaped, [])
    await phone.close()
  })
})
