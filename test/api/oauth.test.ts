import assert from 'node:assert/strict'
import { createHash, randomBytes } from 'node:crypto'
import { after, before, describe, test } from 'node:test'
import { parseApiKey } from '../../src/contract/api-key.ts'
import { hashKey } from '../../src/services/identity/keys.ts'
import { injectRequest } from '../helpers/oauth-browser.ts'
import { backendsAvailable, type DbKind, startTestApp, type TestApp } from '../helpers/test-app.ts'

/**
 * The OAuth authorization server in-process: registration, the authorization endpoint's
 * pages and redirects, consent CSRF, the token endpoint's grants and every negative case of the
 * issue, revocation and the metadata documents. The stateful parts run on SQLite and, when
 * DATABASE_URL is set, on PostgreSQL.
 */
interface Res {
  status: number
  headers: Record<string, string>
  body: string
}

const REDIRECT = 'http://127.0.0.1:7777/cb'
const pkce = () => {
  const verifier = randomBytes(32).toString('base64url')
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') }
}
const unescapeHtml = (s: string) => s.replace(/&#(\d+);/g, (_, n) => String.fromCharCode(Number(n)))

function suite(db: DbKind) {
  describe(`OAuth authorization server (${db})`, {
    skip: db === 'postgres' ? (backendsAvailable.postgres ?? false) : false,
  }, () => {
    let t: TestApp
    let ipN = 0
    let userN = 0
    before(async () => {
      // The scale-out pair: PostgreSQL with Redis limits (the per-IP registration limit) when CI has both.
      t = await startTestApp({ db, limits: db === 'postgres' && process.env.REDIS_URL ? 'redis' : 'memory' })
    })
    after(() => t?.close())

    /** Each call from its own address unless told, so the per-IP limits of sign-in stay out of the way. */
    async function call(
      method: 'GET' | 'POST',
      url: string,
      o: {
        headers?: Record<string, string>
        json?: unknown
        form?: Record<string, string>
        ip?: string
      } = {},
    ): Promise<Res> {
      return injectRequest(t.app, method, url, {
        ...o,
        ip: o.ip ?? `10.0.${Math.floor(++ipN / 250)}.${ipN % 250}`,
      })
    }

    async function register(redirectUris = [REDIRECT], name = 'Test agent'): Promise<string> {
      const r = await call('POST', '/oauth/register', {
        json: { client_name: name, redirect_uris: redirectUris },
      })
      assert.equal(r.status, 201, r.body)
      return JSON.parse(r.body).client_id
    }

    function authorizePath(q: Record<string, string>): string {
      return `/oauth/authorize?${new URLSearchParams(q)}`
    }

    function fullQuery(clientId: string, challenge: string, extra: Record<string, string> = {}) {
      return {
        response_type: 'code',
        client_id: clientId,
        redirect_uri: REDIRECT,
        scope: 'mcp:read',
        state: `st-${randomBytes(4).toString('hex')}`,
        code_challenge: challenge,
        code_challenge_method: 'S256',
        ...extra,
      }
    }

    /** The sign-in page's form → mailed link → callback: the session cookie, and where it continues. */
    async function signIn(email: string, next: string): Promise<string> {
      const sent = await call('POST', '/auth/login', { json: { email, next } })
      assert.equal(sent.status, 202, sent.body)
      const mail = t.outbox().filter((m) => m.to === email)
      const link = new URL((mail[mail.length - 1]?.text ?? '').match(/https?:\/\/\S+/)?.[0] ?? '')
      // The same browser: it sends back the state cookie its sign-in request was given.
      const state = (sent.headers['set-cookie'] ?? '').split(';')[0] as string
      const cb = await call('GET', `${link.pathname}${link.search}`, { headers: { cookie: state } })
      assert.equal(cb.status, 303, cb.body)
      assert.equal(cb.headers.location, next)
      return (cb.headers['set-cookie'] ?? '').split(';')[0] as string
    }

    function hiddenInputs(html: string): Record<string, string> {
      const out: Record<string, string> = {}
      for (const m of html.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g))
        out[unescapeHtml(m[1] as string)] = unescapeHtml(m[2] as string)
      return out
    }

    /** A user (with a funded account) who signs in and reaches the consent page. */
    async function toConsent(q: Record<string, string>, balanceUsd = 5) {
      const email = `oauth-user${++userN}-${db}@example.com`
      const accountId = await t.account(balanceUsd, email)
      const path = authorizePath(q)
      const page = await call('GET', path)
      assert.equal(page.status, 200)
      assert.match(page.body, /action="\/auth\/login"/)
      assert.equal(hiddenInputs(page.body).next, path, 'the sign-in form continues to this request')
      const cookie = await signIn(email, path)
      const consent = await call('GET', path, { headers: { cookie } })
      assert.equal(consent.status, 200, consent.body)
      assert.match(consent.body, /Approve/)
      return { accountId, cookie, form: hiddenInputs(consent.body), consent }
    }

    async function approvedCode(clientId: string, challenge: string) {
      const q = fullQuery(clientId, challenge)
      const c = await toConsent(q)
      const r = await call('POST', '/oauth/authorize', {
        headers: { cookie: c.cookie },
        form: { ...c.form, decision: 'approve' },
      })
      assert.equal(r.status, 303, r.body)
      const loc = new URL(r.headers.location ?? '')
      assert.equal(`${loc.origin}${loc.pathname}`, REDIRECT)
      assert.equal(loc.searchParams.get('state'), q.state)
      assert.equal(loc.searchParams.get('iss'), 'http://erm3.test')
      return { code: loc.searchParams.get('code') ?? '', accountId: c.accountId, cookie: c.cookie }
    }

    const token = (form: Record<string, string>) => call('POST', '/oauth/token', { form })
    const oauthBody = (r: Res) => JSON.parse(r.body) as { error: string; error_description?: string }
    const codeGrant = (clientId: string, code: string, verifier: string, redirectUri = REDIRECT) =>
      token({
        grant_type: 'authorization_code',
        code,
        redirect_uri: redirectUri,
        client_id: clientId,
        code_verifier: verifier,
      })

    async function tokens(clientId: string) {
      const { verifier, challenge } = pkce()
      const a = await approvedCode(clientId, challenge)
      const r = await codeGrant(clientId, a.code, verifier)
      assert.equal(r.status, 200, r.body)
      return { ...a, ...(JSON.parse(r.body) as { access_token: string; refresh_token: string }) }
    }

    const balance = (key: string) => t.client.call('getBalance', { key })
    const assertOAuthError = (r: Res, status: number, error: string) => {
      assert.equal(r.status, status, r.body)
      assert.match(r.headers['content-type'] ?? '', /^application\/json/)
      assert.equal(oauthBody(r).error, error, r.body)
      assert.equal(r.headers['cache-control'], 'no-store')
    }

    test('metadata documents: RFC 8414 and RFC 9728, issuer from PUBLIC_URL whatever the Host header says', async () => {
      const as = await call('GET', '/.well-known/oauth-authorization-server', {
        headers: { host: 'evil.example' },
      })
      assert.equal(as.status, 200)
      const m = JSON.parse(as.body)
      assert.equal(m.issuer, 'http://erm3.test')
      assert.equal(m.authorization_endpoint, 'http://erm3.test/oauth/authorize')
      assert.equal(m.token_endpoint, 'http://erm3.test/oauth/token')
      assert.equal(m.registration_endpoint, 'http://erm3.test/oauth/register')
      assert.equal(m.revocation_endpoint, 'http://erm3.test/oauth/revoke')
      assert.deepEqual(m.code_challenge_methods_supported, ['S256'])
      assert.deepEqual(m.grant_types_supported, ['authorization_code', 'refresh_token'])
      assert.deepEqual(m.token_endpoint_auth_methods_supported, ['none'])
      assert.deepEqual(m.response_types_supported, ['code'])
      assert.deepEqual(m.scopes_supported, ['mcp:read'])
      const pr = await call('GET', '/.well-known/oauth-protected-resource', {
        headers: { host: 'evil.example', 'x-forwarded-host': 'evil.example' },
      })
      assert.equal(pr.status, 200)
      assert.deepEqual(JSON.parse(pr.body), {
        resource: 'http://erm3.test',
        authorization_servers: ['http://erm3.test'],
        bearer_methods_supported: ['header'],
        scopes_supported: ['mcp:read'],
        resource_name: 'erm3 equity risk API',
      })
      assert.equal(
        (await call('POST', '/auth/token', { form: { grant_type: 'client_credentials' } })).status,
        404,
      )
    })

    test('registration: public clients, https or loopback http only, RFC 7591 errors', async () => {
      const ok = await call('POST', '/oauth/register', {
        json: {
          client_name: 'Agent',
          redirect_uris: [
            'https://agent.example/cb',
            'http://127.0.0.1:9/cb',
            'http://[::1]:9/cb',
            'http://localhost/cb',
          ],
          token_endpoint_auth_method: 'client_secret_basic',
          grant_types: ['authorization_code'],
        },
      })
      assert.equal(ok.status, 201, ok.body)
      assert.equal(ok.headers['cache-control'], 'no-store')
      const c = JSON.parse(ok.body)
      assert.match(c.client_id, /^client_/)
      assert.equal(c.token_endpoint_auth_method, 'none', 'a secret is never issued')
      assert.equal(c.client_secret, undefined)
      assert.deepEqual(c.grant_types, ['authorization_code', 'refresh_token'])
      assert.deepEqual(c.response_types, ['code'])
      assert.equal(c.redirect_uris.length, 4)
      assert.ok(Math.abs(c.client_id_issued_at - Date.now() / 1000) < 60)
      for (const bad of [
        'http://agent.example/cb',
        'http://10.0.0.1/cb',
        'https://agent.example/cb#frag',
        '/cb',
        'ftp://x/cb',
        'https://u:p@agent.example/cb',
      ]) {
        const r = await call('POST', '/oauth/register', { json: { client_name: 'x', redirect_uris: [bad] } })
        assertOAuthError(r, 400, 'invalid_redirect_uri')
      }
      assertOAuthError(
        await call('POST', '/oauth/register', { json: { client_name: 'x' } }),
        400,
        'invalid_client_metadata',
      )
      assertOAuthError(
        await call('POST', '/oauth/register', { json: { client_name: 'x', redirect_uris: [] } }),
        400,
        'invalid_client_metadata',
      )
    })

    test('registration: private-use redirect URIs (RFC 8252 §7.1) accepted and matched exactly; dangerous schemes refused', async () => {
      const native = [
        'com.example.app:/oauth/cb',
        'cursor://anysphere.cursor-retrieval/oauth/user-erm3/callback',
        'vscode://vscode.github-authentication/did-authenticate',
      ]
      const clientId = await register(native, 'Native agent')
      for (const bad of [
        'javascript:alert(1)',
        'JavaScript://x/%0aalert(1)',
        'java\tscript:alert(1)',
        'data:text/html,<script>alert(1)</script>',
        'file:///etc/passwd',
        'vbscript:msgbox(1)',
        'blob:https://agent.example/0b1c',
        'about:blank',
        'ws://agent.example/cb',
        'com.example.app:/cb#frag',
        'cursor://user:pw@anysphere/cb',
      ]) {
        const r = await call('POST', '/oauth/register', { json: { client_name: 'x', redirect_uris: [bad] } })
        assertOAuthError(r, 400, 'invalid_redirect_uri')
      }
      const { verifier, challenge } = pkce()
      // Exactly as registered, character for character: a trailing slash or another case is unknown.
      for (const near of [
        `${native[1]}/`,
        native[1]?.replace('cursor:', 'CURSOR:'),
        'com.example.app:/oauth/cb2',
      ]) {
        const r = await call(
          'GET',
          authorizePath(fullQuery(clientId, challenge, { redirect_uri: near as string })),
        )
        assert.equal(r.status, 400, `${near}: ${r.body}`)
        assert.equal(r.headers.location, undefined)
      }
      for (const redirect of [native[1] as string, native[0] as string]) {
        const q = fullQuery(clientId, challenge, { redirect_uri: redirect })
        const c = await toConsent(q)
        assert.match(
          c.consent.body,
          redirect.startsWith('cursor') ? /anysphere\.cursor-retrieval/ : /com\.example\.app: application/,
        )
        const r = await call('POST', '/oauth/authorize', {
          headers: { cookie: c.cookie },
          form: { ...c.form, decision: 'approve' },
        })
        assert.equal(r.status, 303, r.body)
        const loc = r.headers.location ?? ''
        assert.ok(loc.startsWith(`${redirect}?`), loc)
        const code = new URL(loc).searchParams.get('code') ?? ''
        assert.equal(new URL(loc).searchParams.get('state'), q.state)
        if (redirect === native[1]) {
          const tk = await codeGrant(clientId, code, verifier, redirect)
          assert.equal(tk.status, 200, tk.body)
        }
      }
    })

    test('resource indicators (RFC 8707): this server or a URL under it is accepted; any other is invalid_target', async () => {
      const clientId = await register()
      const { verifier, challenge } = pkce()
      for (const foreign of [
        'https://evil.example/mcp',
        'http://erm3.test.evil.example/mcp',
        'https://erm3.test/mcp',
        'http://erm3.test:8080/mcp',
        'http://erm3.test/mcp#x',
        'not a url',
      ]) {
        const q = fullQuery(clientId, challenge, { resource: foreign })
        const r = await call('GET', authorizePath(q))
        assert.equal(r.status, 302, `${foreign}: ${r.body}`)
        const loc = new URL(r.headers.location ?? '')
        assert.equal(loc.searchParams.get('error'), 'invalid_target', foreign)
        assert.equal(loc.searchParams.get('state'), q.state)
        assert.equal(loc.searchParams.get('code'), null)
      }
      // Own resource: the request goes on to sign-in, consent and a code.
      const q = fullQuery(clientId, challenge, { resource: 'http://erm3.test/mcp' })
      const c = await toConsent(q)
      assert.equal(c.form.resource, 'http://erm3.test/mcp', 'the consent form carries the resource on')
      const r = await call('POST', '/oauth/authorize', {
        headers: { cookie: c.cookie },
        form: { ...c.form, decision: 'approve' },
      })
      const code = new URL(r.headers.location ?? '').searchParams.get('code') ?? ''
      const grant = (resource: string) =>
        token({
          grant_type: 'authorization_code',
          code,
          redirect_uri: REDIRECT,
          client_id: clientId,
          code_verifier: verifier,
          resource,
        })
      // A token for another resource is never issued (and the code is not spent by asking).
      assertOAuthError(await grant('https://other-mcp.example/mcp'), 400, 'invalid_target')
      const ok = await grant('http://erm3.test')
      assert.equal(ok.status, 200, ok.body)
      const refresh = JSON.parse(ok.body).refresh_token as string
      assertOAuthError(
        await token({
          grant_type: 'refresh_token',
          refresh_token: refresh,
          client_id: clientId,
          resource: 'https://other-mcp.example',
        }),
        400,
        'invalid_target',
      )
      const renewed = await token({
        grant_type: 'refresh_token',
        refresh_token: refresh,
        client_id: clientId,
        resource: 'http://erm3.test/mcp',
      })
      assert.equal(renewed.status, 200, renewed.body)
    })

    test('registration: 30 per IP per hour, the 31st is 429 with Retry-After; another IP is unaffected', async () => {
      const ip = '192.0.2.31'
      for (let i = 0; i < 30; i++) {
        const r = await call('POST', '/oauth/register', {
          ip,
          json: { client_name: `c${i}`, redirect_uris: [REDIRECT] },
        })
        assert.equal(r.status, 201, `registration ${i + 1}: ${r.body}`)
      }
      const r31 = await call('POST', '/oauth/register', {
        ip,
        json: { client_name: 'c31', redirect_uris: [REDIRECT] },
      })
      assertOAuthError(r31, 429, 'rate_limited')
      assert.ok(Number(r31.headers['retry-after']) > 0, 'Retry-After')
      const other = await call('POST', '/oauth/register', {
        ip: '192.0.2.32',
        json: { redirect_uris: [REDIRECT] },
      })
      assert.equal(other.status, 201)
    })

    test('token and revocation: 60 at once per IP (shared bucket), then 429 rate_limited with Retry-After; another IP is unaffected', async () => {
      const ip = '192.0.2.61'
      for (let i = 0; i < 59; i++) {
        const r = await call('POST', '/oauth/token', {
          ip,
          form: { grant_type: 'refresh_token', refresh_token: 'x' },
        })
        assert.equal(r.status, 400, `call ${i + 1}: ${r.body}`)
      }
      assert.equal((await call('POST', '/oauth/revoke', { ip, form: { token: 'unknown' } })).status, 200)
      const over = await call('POST', '/oauth/token', {
        ip,
        form: { grant_type: 'refresh_token', refresh_token: 'x' },
      })
      assertOAuthError(over, 429, 'rate_limited')
      assert.ok(Number(over.headers['retry-after']) > 0, 'Retry-After')
      assertOAuthError(
        await call('POST', '/oauth/revoke', { ip, form: { token: 'unknown' } }),
        429,
        'rate_limited',
      )
      const other = await call('POST', '/oauth/revoke', { ip: '192.0.2.62', form: { token: 'unknown' } })
      assert.equal(other.status, 200)
    })

    test('authorize: unknown client or unregistered redirect_uri → an error page, never a redirect', async () => {
      const clientId = await register()
      const { challenge } = pkce()
      for (const q of [
        fullQuery('client_unknown', challenge),
        fullQuery(clientId, challenge, { redirect_uri: 'http://127.0.0.1:7777/cb2' }),
        fullQuery(clientId, challenge, { redirect_uri: 'http://127.0.0.1:7778/cb' }),
        fullQuery(clientId, challenge, { redirect_uri: 'https://attacker.example/cb' }),
        { ...fullQuery(clientId, challenge), redirect_uri: '' },
      ]) {
        const r = await call('GET', authorizePath(q))
        assert.equal(r.status, 400, r.body)
        assert.equal(r.headers.location, undefined)
        assert.match(r.headers['content-type'] ?? '', /^text\/html/)
        assert.equal(r.headers['x-frame-options'], 'DENY')
        assert.match(r.headers['content-security-policy'] ?? '', /frame-ancestors 'none'/)
        assert.equal(r.headers['cache-control'], 'no-store')
        assert.doesNotMatch(r.body, /attacker/)
      }
    })

    test('authorize: missing PKCE, plain PKCE, bad response_type → redirected with error, state and iss', async () => {
      const clientId = await register()
      const { challenge } = pkce()
      const cases: [Record<string, string>, string][] = [
        [{ code_challenge: '', code_challenge_method: '' }, 'invalid_request'],
        [{ code_challenge_method: 'plain' }, 'invalid_request'],
        [{ code_challenge_method: '' }, 'invalid_request'],
        [{ code_challenge: 'short' }, 'invalid_request'],
        [{ response_type: 'token' }, 'unsupported_response_type'],
      ]
      for (const [extra, error] of cases) {
        const q = Object.fromEntries(
          Object.entries(fullQuery(clientId, challenge, extra)).filter(([, v]) => v !== ''),
        )
        const r = await call('GET', authorizePath(q))
        assert.equal(r.status, 302, `${JSON.stringify(extra)}: ${r.body}`)
        const loc = new URL(r.headers.location ?? '')
        assert.equal(`${loc.origin}${loc.pathname}`, REDIRECT)
        assert.equal(loc.searchParams.get('error'), error)
        assert.ok(loc.searchParams.get('error_description'))
        assert.equal(loc.searchParams.get('state'), q.state)
        assert.equal(loc.searchParams.get('iss'), 'http://erm3.test')
        assert.equal(loc.searchParams.get('code'), null)
      }
    })

    test('sign-in and consent pages: escaped client name, redirect host shown, anti-framing headers', async () => {
      const clientId = await register([REDIRECT], '<script>alert(1)</script> "Agent"')
      const { challenge } = pkce()
      const q = fullQuery(clientId, challenge, { state: '"><img src=x>' })
      const signInPage = await call('GET', authorizePath(q))
      assert.doesNotMatch(signInPage.body, /<script>alert|<img src=x>/)
      const { consent, form } = await toConsent(q)
      assert.doesNotMatch(consent.body, /<script>alert|<img src=x>/)
      assert.match(consent.body, /&#60;script&#62;alert\(1\)&#60;\/script&#62;/)
      assert.match(consent.body, /127\.0\.0\.1:7777/)
      assert.match(consent.body, /mcp:read/)
      assert.equal(consent.headers['x-frame-options'], 'DENY')
      assert.match(consent.headers['content-security-policy'] ?? '', /frame-ancestors 'none'/)
      assert.match(
        consent.headers['content-security-policy'] ?? '',
        /form-action 'self' http:\/\/127\.0\.0\.1:7777/,
      )
      assert.equal(consent.headers['cache-control'], 'no-store')
      assert.equal(form.state, q.state)
      assert.ok(form.csrf_token)
      // Every script and style on the page carries the CSP nonce (nothing else would run).
      const nonce = /'nonce-([^']+)'/.exec(consent.headers['content-security-policy'] ?? '')?.[1]
      for (const tag of consent.body.match(/<(script|style)\b[^>]*>/g) ?? [])
        assert.ok(tag.includes(`nonce="${nonce}"`), tag)
    })

    test("consent CSRF: a post without the token, with another session's, or with altered parameters is refused", async () => {
      const clientId = await register()
      const { challenge } = pkce()
      const q = fullQuery(clientId, challenge)
      const a = await toConsent(q)
      const b = await toConsent(q)
      const { csrf_token: _drop, ...withoutToken } = a.form
      const forged: [string, Record<string, string>][] = [
        ['no token', { ...withoutToken, decision: 'approve' }],
        ['other session token', { ...a.form, csrf_token: b.form.csrf_token ?? '', decision: 'approve' }],
        ['altered state', { ...a.form, state: 'other', decision: 'approve' }],
        ['altered challenge', { ...a.form, code_challenge: pkce().challenge, decision: 'approve' }],
      ]
      for (const [what, form] of forged) {
        const r = await call('POST', '/oauth/authorize', { headers: { cookie: a.cookie }, form })
        assert.equal(r.status, 403, `${what}: ${r.body}`)
        assert.equal(r.headers.location, undefined, what)
      }
      const noCookie = await call('POST', '/oauth/authorize', { form: { ...a.form, decision: 'approve' } })
      assert.equal(noCookie.status, 401)
      assert.equal(noCookie.headers.location, undefined)
      assert.match(noCookie.body, /action="\/auth\/login"/)
      // The genuine post still works; Deny answers access_denied.
      const deny = await call('POST', '/oauth/authorize', {
        headers: { cookie: b.cookie },
        form: { ...b.form, decision: 'deny' },
      })
      assert.equal(deny.status, 303)
      const loc = new URL(deny.headers.location ?? '')
      assert.equal(loc.searchParams.get('error'), 'access_denied')
      assert.equal(loc.searchParams.get('state'), q.state)
      assert.equal(loc.searchParams.get('code'), null)
    })

    test('code exchange: access token is a 1 h erm_user_live key that calls /balance and /metrics/AAPL, billed to the user', async () => {
      const clientId = await register()
      const { verifier, challenge } = pkce()
      const a = await approvedCode(clientId, challenge)
      const r = await codeGrant(clientId, a.code, verifier)
      assert.equal(r.status, 200, r.body)
      assert.equal(r.headers['cache-control'], 'no-store')
      assert.equal(r.headers.pragma, 'no-cache')
      const tk = JSON.parse(r.body)
      assert.deepEqual(Object.keys(tk).sort(), [
        'access_token',
        'expires_in',
        'refresh_token',
        'scope',
        'token_type',
      ])
      assert.equal(tk.token_type, 'Bearer')
      assert.equal(tk.expires_in, 3600)
      assert.equal(tk.scope, 'mcp:read')
      assert.deepEqual(parseApiKey(tk.access_token), { kind: 'user', environment: 'live' })
      const rec = await t.ctx.accounts.findKeyByHash(hashKey(t.ctx.secrets.pepper, tk.access_token))
      assert.equal(rec?.accountId, a.accountId)
      assert.equal(rec?.clientId, clientId)
      assert.ok(rec?.expiresAt && Math.abs(rec.expiresAt - (Date.now() + 3600_000)) < 60_000)
      const bal = (await balance(tk.access_token)).ok()
      assert.equal(bal.account_id, a.accountId)
      assert.equal(bal.balance_usd, 5)
      const m = await t.client.call('getMetrics', { key: tk.access_token, params: { ticker: 'AAPL' } })
      assert.equal(m.status, 200, m.text)
      assert.equal(m.headers['x-api-cost-usd'], '0.001')
      assert.equal((await balance(tk.access_token)).ok().balance_usd, 4.999)
      const ledger = await t.ctx.accounts.entries(a.accountId, { from: 0, to: Date.now() + 1000, limit: 10 })
      const debit = ledger.find((e) => e.kind === 'debit')
      assert.equal(debit?.amountMicros, -1000)
      assert.equal(debit?.keyId, rec?.id)
      // After its hour the access token is expired.
      t.clock.offsetMs = 3601_000
      try {
        assert.equal(((await balance(tk.access_token)).json as { code: string }).code, 'EXPIRED_KEY')
      } finally {
        t.clock.offsetMs = 0
      }
    })

    test('code exchange negatives: wrong verifier, redirect_uri mismatch, other client, expired code, missing parameters', async () => {
      const clientId = await register()
      const otherClient = await register()
      let p = pkce()
      let a = await approvedCode(clientId, p.challenge)
      assertOAuthError(await codeGrant(clientId, a.code, pkce().verifier), 400, 'invalid_grant')
      // The failed attempt spent the code.
      assertOAuthError(await codeGrant(clientId, a.code, p.verifier), 400, 'invalid_grant')
      p = pkce()
      a = await approvedCode(clientId, p.challenge)
      assertOAuthError(
        await codeGrant(clientId, a.code, p.verifier, 'http://127.0.0.1:7777/cb/'),
        400,
        'invalid_grant',
      )
      p = pkce()
      a = await approvedCode(clientId, p.challenge)
      assertOAuthError(await codeGrant(otherClient, a.code, p.verifier), 400, 'invalid_grant')
      p = pkce()
      a = await approvedCode(clientId, p.challenge)
      t.clock.offsetMs = 5 * 60_000 + 1000
      try {
        assertOAuthError(await codeGrant(clientId, a.code, p.verifier), 400, 'invalid_grant')
      } finally {
        t.clock.offsetMs = 0
      }
      assertOAuthError(await codeGrant(clientId, 'never-issued', p.verifier), 400, 'invalid_grant')
      assertOAuthError(await codeGrant('client_unknown', 'x', p.verifier), 401, 'invalid_client')
      assertOAuthError(
        await token({
          grant_type: 'authorization_code',
          code: 'x',
          redirect_uri: REDIRECT,
          client_id: clientId,
        }),
        400,
        'invalid_request',
      )
      assertOAuthError(await token({}), 400, 'invalid_request')
      assertOAuthError(
        await token({ grant_type: 'client_credentials', client_id: clientId }),
        400,
        'unsupported_grant_type',
      )
      assertOAuthError(
        await token({ grant_type: 'password', username: 'a', password: 'b' }),
        400,
        'unsupported_grant_type',
      )
      const asJson = await call('POST', '/oauth/token', { json: { grant_type: 'client_credentials' } })
      assertOAuthError(asJson, 400, 'invalid_request')
      assert.equal(asJson.headers.pragma, 'no-cache')
    })

    test('a reused code is refused and the grant it issued is revoked (access and refresh tokens)', async () => {
      const clientId = await register()
      const { verifier, challenge } = pkce()
      const a = await approvedCode(clientId, challenge)
      const first = await codeGrant(clientId, a.code, verifier)
      assert.equal(first.status, 200)
      const tk = JSON.parse(first.body)
      assert.equal((await balance(tk.access_token)).status, 200)
      assertOAuthError(await codeGrant(clientId, a.code, verifier), 400, 'invalid_grant')
      assert.equal(((await balance(tk.access_token)).json as { code: string }).code, 'REVOKED_KEY')
      assertOAuthError(
        await token({ grant_type: 'refresh_token', refresh_token: tk.refresh_token, client_id: clientId }),
        400,
        'invalid_grant',
      )
    })

    test('refresh rotates; replaying a rotated refresh token revokes every token of the user/client pair', async () => {
      const clientId = await register()
      const t1 = await tokens(clientId)
      const refresh = (rt: string, cid = clientId) =>
        token({ grant_type: 'refresh_token', refresh_token: rt, client_id: cid })
      assertOAuthError(
        await token({ grant_type: 'refresh_token', refresh_token: t1.refresh_token }),
        400,
        'invalid_request',
      )
      assertOAuthError(await refresh(t1.refresh_token, await register()), 400, 'invalid_grant')
      const r2 = await refresh(t1.refresh_token)
      assert.equal(r2.status, 200, r2.body)
      assert.equal(r2.headers['cache-control'], 'no-store')
      assert.equal(r2.headers.pragma, 'no-cache')
      const t2 = JSON.parse(r2.body)
      assert.notEqual(t2.refresh_token, t1.refresh_token)
      assert.notEqual(t2.access_token, t1.access_token)
      assert.equal(t2.expires_in, 3600)
      assert.equal((await balance(t2.access_token)).ok().account_id, t1.accountId)
      const t3 = JSON.parse((await refresh(t2.refresh_token)).body)
      assert.equal((await balance(t3.access_token)).status, 200)
      // Another client of the same user is a different pair: untouched by the replay below.
      const otherClient = await register()
      const { verifier, challenge } = pkce()
      const q = fullQuery(otherClient, challenge)
      const consent = await call('GET', authorizePath(q), { headers: { cookie: t1.cookie } })
      const form = hiddenInputs(consent.body)
      const ok = await call('POST', '/oauth/authorize', {
        headers: { cookie: t1.cookie },
        form: { ...form, decision: 'approve' },
      })
      const code = new URL(ok.headers.location ?? '').searchParams.get('code') ?? ''
      const other = JSON.parse((await codeGrant(otherClient, code, verifier)).body)
      // The replay.
      assertOAuthError(await refresh(t1.refresh_token), 400, 'invalid_grant')
      for (const k of [t1.access_token, t2.access_token, t3.access_token])
        assert.equal(((await balance(k)).json as { code: string }).code, 'REVOKED_KEY')
      assertOAuthError(await refresh(t3.refresh_token), 400, 'invalid_grant')
      assert.equal((await balance(other.access_token)).status, 200)
      assert.equal((await refresh(other.refresh_token, otherClient)).status, 200)
    })

    test('revocation (RFC 7009): access token, refresh token (with its grant), unknown tokens 200, other keys untouched', async () => {
      const clientId = await register()
      const revoke = (form: Record<string, string>) => call('POST', '/oauth/revoke', { form })
      const a = await tokens(clientId)
      const r = await revoke({ token: a.access_token, token_type_hint: 'access_token' })
      assert.equal(r.status, 200, r.body)
      assert.equal(r.headers['cache-control'], 'no-store')
      assert.equal(((await balance(a.access_token)).json as { code: string }).code, 'REVOKED_KEY')
      // The refresh token still works after the access token alone was revoked.
      const b = JSON.parse(
        (await token({ grant_type: 'refresh_token', refresh_token: a.refresh_token, client_id: clientId }))
          .body,
      )
      assert.equal((await balance(b.access_token)).status, 200)
      assert.equal((await revoke({ token: b.refresh_token })).status, 200)
      assertOAuthError(
        await token({ grant_type: 'refresh_token', refresh_token: b.refresh_token, client_id: clientId }),
        400,
        'invalid_grant',
      )
      assert.equal(((await balance(b.access_token)).json as { code: string }).code, 'REVOKED_KEY')
      for (const unknown of ['ermrt_nope', 'garbage', 'erm_user_live_x', 'x'.repeat(500)])
        assert.equal((await revoke({ token: unknown, token_type_hint: 'refresh_token' })).status, 200)
      // An ordinary API key is not an OAuth token: left alone.
      const agentKey = await t.key(await t.account(1))
      assert.equal((await revoke({ token: agentKey })).status, 200)
      assert.equal((await balance(agentKey)).status, 200)
      assertOAuthError(await revoke({}), 400, 'invalid_request')
    })
  })
}

suite('sqlite')
suite('postgres')
