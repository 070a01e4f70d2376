import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import * as client from 'openid-client'
import { browser, freePort, hiddenFields } from '../helpers/oauth-browser.ts'
import { startTestApp, type TestApp } from '../helpers/test-app.ts'

/**
 * Acceptance test: OAuth end to end with a real third-party client (openid-client 6) against a
 * real HTTP listener whose PUBLIC_URL is its own origin. openid-client does discovery, dynamic
 * registration, the PKCE authorization URL, the callback checks (state, iss), the code exchange,
 * refresh and revocation; the browser's part (sign-in link, cookie, consent) is plain fetch.
 */
const REDIRECT = 'http://127.0.0.1:53682/callback'
const insecure = { algorithm: 'oauth2' as const, execute: [client.allowInsecureRequests] }

describe('OAuth end to end with openid-client', () => {
  let t: TestApp
  let issuer: string
  before(async () => {
    const port = await freePort()
    issuer = `http://127.0.0.1:${port}`
    t = await startTestApp({ env: { PUBLIC_URL: issuer } })
    await t.app.fastify.listen({ port, host: '127.0.0.1' })
  })
  after(() => t?.close())

  test('discovery → registration → sign-in link → consent → PKCE code exchange → /balance → refresh → replay revokes the family', async () => {
    const email = 'agent-owner@example.com'
    const accountId = await t.account(3, email)

    // Registration (RFC 7591) through openid-client, which discovers the registration endpoint itself.
    const registered = await client.dynamicClientRegistration(
      new URL(issuer),
      { client_name: 'openid-client e2e', redirect_uris: [REDIRECT], token_endpoint_auth_method: 'none' },
      client.None(),
      insecure,
    )
    const clientId = registered.clientMetadata().client_id
    assert.match(clientId, /^client_/)

    // Discovery (RFC 8414) with that client_id: the issuer must equal PUBLIC_URL.
    const config = await client.discovery(new URL(issuer), clientId, undefined, client.None(), insecure)
    const meta = config.serverMetadata()
    assert.equal(meta.issuer, issuer)
    assert.equal(meta.token_endpoint, `${issuer}/oauth/token`)
    assert.ok(meta.supportsPKCE())

    const verifier = client.randomPKCECodeVerifier()
    const state = client.randomState()
    const authUrl = client.buildAuthorizationUrl(config, {
      redirect_uri: REDIRECT,
      scope: 'mcp:read',
      state,
      code_challenge: await client.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
    })
    assert.equal(authUrl.origin + authUrl.pathname, `${issuer}/oauth/authorize`)

    // The user's browser: sign-in page → e-mailed link → back to the authorization request, signed in.
    const b = browser(issuer)
    const signIn = await b.go(authUrl.href)
    assert.equal(signIn.status, 200)
    const next = hiddenFields(signIn.html).next as string
    assert.equal(next, `${authUrl.pathname}${authUrl.search}`)
    const sent = await b.go('/auth/login', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email, next }),
    })
    assert.equal(sent.status, 202)
    const link = t
      .outbox()
      .filter((m) => m.to === email)
      .at(-1)
      ?.text.match(/https?:\/\/\S+/)?.[0]
    assert.ok(link?.startsWith(`${issuer}/auth/callback?`), link)
    const cb = await b.go(link as string)
    assert.equal(cb.status, 303)
    assert.equal(cb.location, next)
    const consent = await b.go(cb.location as string)
    assert.equal(consent.status, 200)
    assert.match(consent.html, /openid-client e2e/)
    const approved = await b.go('/oauth/authorize', {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ ...hiddenFields(consent.html), decision: 'approve' }).toString(),
    })
    assert.equal(approved.status, 303)
    const callback = new URL(approved.location as string)
    assert.equal(callback.origin + callback.pathname, REDIRECT)

    // The client: state and iss checked, code exchanged with the verifier.
    const tokens = await client.authorizationCodeGrant(config, callback, {
      pkceCodeVerifier: verifier,
      expectedState: state,
    })
    assert.equal(tokens.token_type.toLowerCase(), 'bearer')
    assert.equal(tokens.expires_in, 3600)
    assert.equal(tokens.scope, 'mcp:read')
    assert.ok(tokens.refresh_token)

    const balanceWith = (key: string) =>
      fetch(`${issuer}/balance`, { headers: { authorization: `Bearer ${key}` } }).then(async (r) => ({
        status: r.status,
        body: (await r.json()) as { account_id?: string; balance_usd?: number; code?: string },
      }))
    const bal = await balanceWith(tokens.access_token)
    assert.equal(bal.status, 200)
    assert.equal(bal.body.account_id, accountId)
    assert.equal(bal.body.balance_usd, 3)

    // Refresh rotates: a new access token and a new refresh token.
    const refreshed = await client.refreshTokenGrant(config, tokens.refresh_token as string)
    assert.notEqual(refreshed.refresh_token, tokens.refresh_token)
    assert.notEqual(refreshed.access_token, tokens.access_token)
    assert.equal((await balanceWith(refreshed.access_token)).status, 200)

    // Replaying the rotated refresh token: invalid_grant, and the whole family goes.
    await assert.rejects(
      client.refreshTokenGrant(config, tokens.refresh_token as string),
      (e: unknown) =>
        e instanceof client.ResponseBodyError && e.error === 'invalid_grant' && e.status === 400,
    )
    const after = await balanceWith(refreshed.access_token)
    assert.equal(after.status, 401)
    assert.equal(after.body.code, 'REVOKED_KEY')
    await assert.rejects(
      client.refreshTokenGrant(config, refreshed.refresh_token as string),
      (e: unknown) => e instanceof client.ResponseBodyError && e.error === 'invalid_grant',
    )
    // Revocation through the client is accepted (RFC 7009: 200 even for a token already revoked).
    await client.tokenRevocation(config, refreshed.refresh_token as string)
  })

  test('openid-client surfaces the authorization error of a request without PKCE', async () => {
    const reg = await client.dynamicClientRegistration(
      new URL(issuer),
      { client_name: 'no pkce', redirect_uris: [REDIRECT], token_endpoint_auth_method: 'none' },
      client.None(),
      insecure,
    )
    const url = client.buildAuthorizationUrl(reg, { redirect_uri: REDIRECT, scope: 'mcp:read', state: 'abc' })
    const r = await fetch(url, { redirect: 'manual' })
    assert.equal(r.status, 302)
    const back = new URL(r.headers.get('location') as string)
    await assert.rejects(
      client.authorizationCodeGrant(reg, back, { expectedState: 'abc', pkceCodeVerifier: 'x'.repeat(43) }),
      (e: unknown) => e instanceof client.AuthorizationResponseError && e.error === 'invalid_request',
    )
  })
})
