/**
 * OAuth grants are visible and revocable: what a user approves for an agent
 * is listed (GET /account/oauth-grants) and revocable (DELETE /account/oauth-grants/{client_id})
 * by the account alone; a revocation ends every access and refresh token of the grant at once on
 * the node that made it, and on another node within the key cache's life; DELETE of an access
 * token's key id revokes its grant instead of answering 404 while the token works; approvals and
 * every revocation are in the audit log; the consent page says what the token can do. On both
 * backend pairs, in-process, through the real stack.
 */
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { after, before, describe, test } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { createServerApp } from '../../src/main/app.ts'
import type { ServiceContext } from '../../src/services/context.ts'
import { hashKey, KEY_CACHE_TTL_MS } from '../../src/services/identity/keys.ts'
import { signSession } from '../../src/services/identity/session.ts'
import { withBalanceSnapshots } from '../../src/store/accounts/balance-snapshot.ts'
import { approveWithSession, exchangeCode, hiddenFields, injectRequest } from '../helpers/oauth-browser.ts'
import { BACKEND_PAIRS, startTestApp, type TestApp } from '../helpers/test-app.ts'

const REDIRECT = 'http://127.0.0.1:7777/cb'
const OTHER_REDIRECT = 'https://agent.example/oauth/cb'

interface Answer {
  status: number
  headers: Record<string, string>
  body: string
  // biome-ignore lint/suspicious/noExplicitAny: tests read whatever fields the answer has
  json: any
}

interface User {
  accountId: string
  email: string
  /** The dashboard's credential (a session, sent as a bearer). */
  session: string
  /** The browser's session cookie (the consent page reads only the cookie). */
  cookie: string
}

for (const pair of BACKEND_PAIRS) {
  describe(`OAuth grants: ${pair.name}`, { skip: pair.skip ?? undefined }, () => {
    let t: TestApp
    let ipN = 0
    before(async () => {
      t = await startTestApp({ db: pair.db, limits: pair.limits })
    })
    after(() => t?.close())

    type App = TestApp['app']
    /** Each request from its own address: per-IP limits stay out of the way. */
    const nextIp = () => {
      ipN++
      return `10.32.${Math.floor(ipN / 250)}.${(ipN % 250) + 1}`
    }
    /** One request in-process. */
    async function call(
      method: 'GET' | 'POST' | 'PATCH' | 'DELETE',
      url: string,
      o: { bearer?: string; cookie?: string; json?: unknown; form?: Record<string, string>; app?: App } = {},
    ): Promise<Answer> {
      const headers: Record<string, string> = {}
      if (o.bearer) headers.authorization = `Bearer ${o.bearer}`
      if (o.cookie) headers.cookie = o.cookie
      const r = await injectRequest(o.app ?? t.app, method, url, {
        headers,
        json: o.json,
        form: o.form,
        ip: nextIp(),
      })
      let json: unknown = null
      try {
        json = JSON.parse(r.body)
      } catch {}
      return { ...r, json }
    }

    async function user(balanceUsd = 5): Promise<User> {
      const email = `grant-${randomBytes(4).toString('hex')}@example.com`
      const accountId = await t.account(balanceUsd, email)
      const session = await signSession(t.ctx, { accountId, email })
      return { accountId, email, session, cookie: `erm3_session=${session}` }
    }

    async function register(name = 'Research agent', uris = [REDIRECT, OTHER_REDIRECT]): Promise<string> {
      const r = await call('POST', '/oauth/register', { json: { client_name: name, redirect_uris: uris } })
      assert.equal(r.status, 201, r.body)
      return r.json.client_id
    }

    function authorizeQuery(clientId: string, challenge: string, redirectUri = REDIRECT) {
      return new URLSearchParams({
        response_type: 'code',
        client_id: clientId,
        redirect_uri: redirectUri,
        scope: 'mcp:read',
        state: randomBytes(4).toString('hex'),
        code_challenge: challenge,
        code_challenge_method: 'S256',
      })
    }

    /** The consent page as the signed-in user's browser gets it. */
    async function consent(u: User, clientId: string, challenge: string, redirectUri = REDIRECT) {
      const page = await call('GET', `/oauth/authorize?${authorizeQuery(clientId, challenge, redirectUri)}`, {
        cookie: u.cookie,
      })
      assert.equal(page.status, 200, page.body)
      assert.match(page.body, /Approve/)
      return page
    }

    /** Approve on the consent page: the authorization code (and its PKCE verifier). */
    const approve = (u: User, clientId: string, redirectUri = REDIRECT) =>
      approveWithSession(t.app, u.cookie, clientId, redirectUri, nextIp)

    const exchange = async (clientId: string, a: { code: string; verifier: string; redirectUri: string }) => {
      const r = await exchangeCode(t.app, clientId, a, nextIp())
      return { ...r, json: JSON.parse(r.body) }
    }

    async function tokens(u: User, clientId: string) {
      const r = await exchange(clientId, await approve(u, clientId))
      assert.equal(r.status, 200, r.body)
      return r.json as { access_token: string; refresh_token: string }
    }

    const refresh = (clientId: string, refreshToken: string, app?: App) =>
      call('POST', '/oauth/token', {
        form: { grant_type: 'refresh_token', refresh_token: refreshToken, client_id: clientId },
        app,
      })
    const balance = (key: string, app?: App) => call('GET', '/balance', { bearer: key, app })
    const grants = async (u: User) => {
      const r = await call('GET', '/account/oauth-grants', { bearer: u.session })
      assert.equal(r.status, 200, r.body)
      assert.equal(r.json.account_id, u.accountId)
      return r.json.grants as Record<string, unknown>[]
    }
    const revoke = (u: User, clientId: string) =>
      call('DELETE', `/account/oauth-grants/${clientId}`, { bearer: u.session })
    const audit = async (u: User) => {
      const r = await call('GET', '/account/audit', { bearer: u.session })
      assert.equal(r.status, 200, r.body)
      return r.json.entries as {
        action: string
        target: string | null
        actor: { type: string; id: string }
        detail: Record<string, unknown> | null
      }[]
    }
    const keyIdOf = async (accessToken: string) =>
      (await t.ctx.accounts.findKeyByHash(hashKey(t.ctx.secrets.pepper, accessToken)))?.id as string
    const assertProblem = (r: Answer, status: number, code: string) => {
      assert.equal(r.status, status, r.body)
      assert.match(r.headers['content-type'] ?? '', /^application\/problem\+json/)
      assert.equal(r.json.code, code, r.body)
    }

    test('the consent page says what the token can do (money, account data, brokerage holdings), what not, how long, and where to revoke it', async () => {
      const u = await user()
      const clientId = await register()
      const page = await consent(u, clientId, 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM')
      const text = page.body.replace(/<[^>]+>/g, '').replace(/\s+/g, ' ')
      assert.match(text, /spend your prepaid balance/)
      assert.match(text, /analytics endpoint/)
      assert.match(text, /read your account data: balance, invoices, usage, ledger/)
      assert.match(text, /read your brokerage holdings/)
      assert.match(text, /It cannot create, change or revoke API keys, change your settings/)
      assert.match(text, /Each access token lasts 1 hour/)
      assert.match(text, /30 days/)
      assert.match(text, /Connected agents/)
      assert.match(page.body, /href="\/app#\/keys"/)
      // Still the page's protections: anti-framing, no caching, nonce CSP, the consent CSRF token.
      assert.equal(page.headers['x-frame-options'], 'DENY')
      assert.equal(page.headers['cache-control'], 'no-store')
      assert.match(page.headers['content-security-policy'] ?? '', /frame-ancestors 'none'/)
      assert.ok(hiddenFields(page.body).csrf_token)
    })

    test('an approved grant is listed with its client, redirect URIs, scope and dates; last_used_at moves with a call', async () => {
      const u = await user()
      const clientId = await register('Listed agent')
      assert.deepEqual(await grants(u), [])
      const before = Date.now()
      const approved = await approve(u, clientId, OTHER_REDIRECT)
      // Approved, not yet exchanged: listed already (its code works).
      let [g] = await grants(u)
      assert.equal(g?.client_id, clientId)
      assert.equal(g?.active, true)
      const tk = (await exchange(clientId, approved)).json as { access_token: string }
      ;[g] = await grants(u)
      assert.ok(g)
      assert.equal(g.client_name, 'Listed agent')
      assert.deepEqual(g.redirect_uris, [REDIRECT, OTHER_REDIRECT])
      assert.equal(g.approved_redirect_uri, OTHER_REDIRECT)
      assert.equal(g.scope, 'mcp:read')
      assert.ok(Date.parse(g.created_at as string) >= before - 1000)
      assert.equal(g.approved_at, g.created_at)
      assert.equal(g.last_used_at, null)
      assert.equal(g.active, true)
      assert.equal(g.active_access_tokens, 1)
      assert.equal(g.active_refresh_tokens, 1)
      const called = Date.now()
      assert.equal((await balance(tk.access_token)).status, 200)
      ;[g] = await grants(u)
      assert.ok(Date.parse(g?.last_used_at as string) >= called - 1000, String(g?.last_used_at))
      // A second approval keeps the grant's first date.
      await approve(u, clientId)
      const [again] = await grants(u)
      assert.equal(again?.created_at, g?.created_at)
      assert.equal(again?.approved_redirect_uri, REDIRECT)
      assert.ok(Date.parse(again?.approved_at as string) >= Date.parse(g?.created_at as string))
    })

    test('revoking from the dashboard API refuses its access and refresh tokens at once, audited; the grant leaves the list', async () => {
      const u = await user()
      const clientId = await register('Revoked agent')
      const other = await register('Kept agent')
      const t1 = await tokens(u, clientId)
      const t2 = (await refresh(clientId, t1.refresh_token)).json as typeof t1
      const kept = await tokens(u, other)
      for (const k of [t1.access_token, t2.access_token]) assert.equal((await balance(k)).status, 200)
      const r = await revoke(u, clientId)
      assert.equal(r.status, 200, r.body)
      assert.equal(r.json.client_id, clientId)
      assert.equal(r.json.access_tokens_revoked, 2)
      assert.ok(r.json.refresh_tokens_revoked >= 1)
      for (const k of [t1.access_token, t2.access_token]) assertProblem(await balance(k), 401, 'REVOKED_KEY')
      const rr = await refresh(clientId, t2.refresh_token)
      assert.equal(rr.status, 400)
      assert.equal(rr.json.error, 'invalid_grant')
      // The grant is gone from the list; the other client's is untouched.
      assert.deepEqual(
        (await grants(u)).map((g) => g.client_id),
        [other],
      )
      assert.equal((await balance(kept.access_token)).status, 200)
      assertProblem(await revoke(u, clientId), 404, 'NOT_FOUND')
      const log = await audit(u)
      const approved = log.find((e) => e.action === 'oauth.approved' && e.target === clientId)
      assert.deepEqual(approved?.actor, { type: 'session', id: u.email })
      assert.deepEqual(approved?.detail, {
        client_name: 'Revoked agent',
        redirect_uri: REDIRECT,
        scope: 'mcp:read',
      })
      const revoked = log.filter((e) => e.action === 'oauth.grant_revoked' && e.target === clientId)
      assert.equal(revoked.length, 1, 'one entry for the one revocation')
      assert.deepEqual(revoked[0]?.actor, { type: 'session', id: u.email })
      assert.equal(revoked[0]?.detail?.reason, 'user')
      assert.equal(revoked[0]?.detail?.client_name, 'Revoked agent')
      assert.equal(revoked[0]?.detail?.access_tokens, 2)
    })

    test('a code approved but not yet exchanged dies with its grant', async () => {
      const u = await user()
      const clientId = await register()
      const approved = await approve(u, clientId)
      assert.equal((await revoke(u, clientId)).status, 200)
      const r = await exchange(clientId, approved)
      assert.equal(r.status, 400, r.body)
      assert.equal(r.json.error, 'invalid_grant')
      assert.deepEqual(await grants(u), [])
    })

    test('on a second node (same database, its own key cache) the refresh token is refused at once, the access token within the cache life', async () => {
      const u = await user()
      const clientId = await register()
      const tk = await tokens(u, clientId)
      const store = t.anotherStore()
      const ctxB: ServiceContext = { ...t.ctx, accounts: withBalanceSnapshots(store) }
      const nodeB = await createServerApp(ctxB, { drainMs: 200 })
      try {
        // Node B has the access token in its own cache.
        assert.equal((await balance(tk.access_token, nodeB)).status, 200)
        const revokedAt = Date.now()
        assert.equal((await revoke(u, clientId)).status, 200)
        const rr = await refresh(clientId, tk.refresh_token, nodeB)
        assert.equal(rr.status, 400, rr.body)
        assert.equal(rr.json.error, 'invalid_grant')
        // Used all along, as a polling agent would: refused within the cache's life, never after.
        const deadline = revokedAt + KEY_CACHE_TTL_MS
        for (;;) {
          const asked = Date.now()
          const r = await balance(tk.access_token, nodeB)
          if (r.status !== 200) {
            assertProblem(r, 401, 'REVOKED_KEY')
            break
          }
          assert.ok(asked < deadline, 'node B served a revoked token past KEY_CACHE_TTL_MS')
          await sleep(50)
        }
      } finally {
        await nodeB.close()
        await store.close()
      }
    })

    test('another account can neither see nor revoke the grant (404), by the grant or by the key id', async () => {
      const alice = await user()
      const bob = await user()
      const clientId = await register()
      const tk = await tokens(alice, clientId)
      assert.deepEqual(await grants(bob), [])
      assertProblem(await revoke(bob, clientId), 404, 'NOT_FOUND')
      assertProblem(await revoke(bob, 'client_doesnotexist'), 404, 'NOT_FOUND')
      const keyId = await keyIdOf(tk.access_token)
      assertProblem(await call('DELETE', `/account/keys/${keyId}`, { bearer: bob.session }), 404, 'NOT_FOUND')
      assert.equal((await balance(tk.access_token)).status, 200)
      assert.equal((await refresh(clientId, tk.refresh_token)).status, 200)
      assert.equal((await grants(alice)).length, 1)
    })

    test('DELETE /account/keys/{id} of an access token revokes its grant (never a 404 while it works); rename and rotate are 409s naming the grant', async () => {
      const u = await user()
      const clientId = await register('Key-deleted agent')
      const tk = await tokens(u, clientId)
      const keyId = await keyIdOf(tk.access_token)
      for (const [method, path, json] of [
        ['PATCH', `/account/keys/${keyId}`, { name: 'x' }],
        ['POST', `/account/keys/${keyId}/rotate`, {}],
      ] as const) {
        const r = await call(method, path, { bearer: u.session, json })
        assertProblem(r, 409, 'CONFLICT')
        assert.match(r.json.detail, new RegExp(`/account/oauth-grants/${clientId}`))
      }
      const r = await call('DELETE', `/account/keys/${keyId}`, { bearer: u.session })
      assert.equal(r.status, 200, r.body)
      assert.equal(r.json.id, keyId)
      assert.equal(r.json.status, 'revoked')
      assertProblem(await balance(tk.access_token), 401, 'REVOKED_KEY')
      assert.equal((await refresh(clientId, tk.refresh_token)).json.error, 'invalid_grant')
      assert.deepEqual(await grants(u), [])
      // Idempotent, as for any key.
      assert.equal((await call('DELETE', `/account/keys/${keyId}`, { bearer: u.session })).status, 200)
      const revoked = (await audit(u)).filter((e) => e.action === 'oauth.grant_revoked')
      assert.equal(revoked.length, 1)
      assert.equal(revoked[0]?.detail?.reason, 'key_deleted')
    })

    test('revocations by the client (RFC 7009) and of token families (code reuse, refresh replay) are audited with the client as actor', async () => {
      const u = await user()
      const clientId = await register('Audited agent')
      const revokeEndpoint = (token: string) => call('POST', '/oauth/revoke', { form: { token } })
      // The access token alone.
      const a = await tokens(u, clientId)
      assert.equal((await revokeEndpoint(a.access_token)).status, 200)
      // The refresh token: its grant.
      assert.equal((await revokeEndpoint(a.refresh_token)).status, 200)
      // A rotated refresh token replayed.
      const b = await tokens(u, clientId)
      assert.equal((await refresh(clientId, b.refresh_token)).status, 200)
      assert.equal((await refresh(clientId, b.refresh_token)).status, 400)
      // A code used twice.
      const approved = await approve(u, clientId)
      assert.equal((await exchange(clientId, approved)).status, 200)
      assert.equal((await exchange(clientId, approved)).status, 400)
      const log = await audit(u)
      const byClient = log.filter((e) => e.actor.type === 'client')
      for (const e of byClient) assert.equal(e.actor.id, clientId)
      const tokenRevoked = byClient.filter((e) => e.action === 'oauth.token_revoked')
      assert.deepEqual(
        tokenRevoked.map((e) => e.target),
        [await keyIdOf(a.access_token)],
      )
      assert.deepEqual(
        byClient
          .filter((e) => e.action === 'oauth.grant_revoked')
          .map((e) => e.detail?.reason)
          .sort(),
        ['client_revoked', 'code_reused', 'refresh_token_replayed'],
      )
      assert.equal(log.filter((e) => e.action === 'oauth.approved').length, 3)
      // Repeating a revocation that ends nothing adds nothing.
      assert.equal((await revokeEndpoint(a.refresh_token)).status, 200)
      assert.equal((await audit(u)).length, log.length)
    })
  })
}
