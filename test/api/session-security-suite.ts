import assert from 'node:assert/strict'
import { createHmac } from 'node:crypto'
import { after, before, describe, test } from 'node:test'
import { SignJWT } from 'jose'
import type { CallInput, CallResult } from '../../src/contract/client.ts'
import { OPS, type OperationId } from '../../src/contract/operations.ts'
import { signSession } from '../../src/services/identity/session.ts'
import { ADDRESS_BUCKET, addressRule } from '../../src/services/limits.ts'
import type { BackendPair, TestApp } from '../helpers/test-app.ts'
import { startTestApp } from '../helpers/test-app.ts'

/** The account a case acts on, for inputs that need something of it (a fresh key id). */
export interface SessionCaseScope {
  t: TestApp
  accountId: string
}

/** One session-authenticated operation (`auth: 'session'`) to put through the suite. */
export interface SessionSecurityCase<K extends OperationId = OperationId> {
  op: K
  /** A valid input, made afresh for every call (e.g. a new key to rename). */
  input: (s: SessionCaseScope) => Promise<CallInput<K>>
  /** An input that is invalid (an unauthenticated one must still be 401). */
  invalid?: (s: SessionCaseScope) => Promise<CallInput<K>>
}

/** Types a case by its operation, then widens it for the list. */
export function sessionCase<K extends OperationId>(c: SessionSecurityCase<K>): SessionSecurityCase {
  return c as unknown as SessionSecurityCase
}

function assertProblem(r: CallResult<OperationId>, status: number, code: string): Record<string, unknown> {
  assert.equal(r.status, status, `expected ${status} ${code}, got ${r.status}: ${r.text}`)
  assert.match(r.headers['content-type'] ?? '', /^application\/problem\+json/)
  const p = r.json as Record<string, unknown>
  assert.equal(p.code, code)
  assert.equal(p.status, status)
  for (const m of ['type', 'title', 'detail', 'instance', 'request_id'])
    assert.equal(typeof p[m], 'string', m)
  assert.equal(p.request_id, r.headers['x-request-id'])
  return p
}

let ipSeq = 0
/** A client address of its own (TRUST_PROXY is on), so one case's address bucket is not another's. */
const freshIp = () => `198.51.100.${(++ipSeq % 250) + 1}`

/**
 * The shared security suite for session operations (the account's changes): only a valid session
 * of the account passes; no credential, a forged, malformed, expired or signed-out session, and an
 * API key (keys may read, never change the account) each answer their documented 401; the address's rate
 * limit applies (429 with Retry-After); invalid input is a 4xx problem.
 */
/** Extra configuration of the suite's app (e.g. Plaid), and a name suffix to tell suites apart. */
export interface SessionSuiteOptions {
  env?: Record<string, string>
  name?: string
}

export function sessionSecuritySuite(
  backends: BackendPair,
  cases: SessionSecurityCase[],
  opts: SessionSuiteOptions = {},
) {
  const name = `session security suite: ${backends.name}${opts.name ? ` (${opts.name})` : ''}`
  describe(name, { skip: backends.skip ?? undefined }, () => {
    let t: TestApp
    let accountId: string
    let email: string
    before(async () => {
      t = await startTestApp({ ...backends, env: { TRUST_PROXY: 'loopback', ...(opts.env ?? {}) } })
      email = `sec-${Date.now()}@example.com`
      accountId = await t.account(1, email)
    })
    after(() => t?.close())

    const session = () => signSession(t.ctx, { accountId, email })
    // The CSRF token, computed here independently: HMAC-SHA256 keyed by the session JWT.
    const csrfOf = (jwt: string) => createHmac('sha256', jwt).update('erm3-csrf-v1').digest('base64url')
    /** The headers of a dashboard request: the session cookie, its CSRF cookie and header. */
    const cookieOf = (jwt: string) => ({
      cookie: `erm3_session=${jwt}; erm3_csrf=${csrfOf(jwt)}`,
      'x-csrf-token': csrfOf(jwt),
    })
    const call = async (
      c: SessionSecurityCase,
      credential: string | null,
      input?: CallInput<OperationId>,
      headers: Record<string, string> = {},
    ) => {
      const i = input ?? (await c.input({ t, accountId }))
      return t.client.call(c.op, {
        ...i,
        key: credential,
        headers: { 'x-forwarded-for': freshIp(), ...headers, ...(i.headers ?? {}) },
      } as CallInput<OperationId>)
    }

    for (const c of cases) {
      describe(c.op, () => {
        test('no credential → 401 MISSING_CREDENTIALS; bad input without one is still 401', async () => {
          assertProblem(await call(c, null), 401, 'MISSING_CREDENTIALS')
          if (c.invalid)
            assertProblem(await call(c, null, await c.invalid({ t, accountId })), 401, 'MISSING_CREDENTIALS')
        })
        test('malformed and forged sessions → 401 INVALID_KEY', async () => {
          assertProblem(await call(c, 'not-a-jwt'), 401, 'INVALID_KEY')
          const forged = await new SignJWT({ email })
            .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
            .setSubject(accountId)
            .setIssuer(t.ctx.config.publicUrl)
            .setAudience('erm3-session')
            .setIssuedAt()
            .setExpirationTime('1h')
            .sign(new TextEncoder().encode('another-secret-another-secret-xx'))
          assertProblem(await call(c, forged), 401, 'INVALID_KEY')
        })
        test('an expired session → 401 EXPIRED_KEY', async () => {
          t.clock.offsetMs -= 13 * 3600_000
          let old: string
          try {
            old = await session()
          } finally {
            t.clock.offsetMs += 13 * 3600_000
          }
          assertProblem(await call(c, old), 401, 'EXPIRED_KEY')
        })
        test('an API key of the account cannot make changes → 401 INVALID_KEY', async () => {
          for (const env of ['live', 'test'] as const)
            assertProblem(await call(c, await t.key(accountId, { env })), 401, 'INVALID_KEY')
        })
        test('a valid session (bearer or cookie) passes, with rate headers of its address', async () => {
          const r = await call(c, await session())
          assert.ok(r.status < 300, r.text)
          assert.match(r.headers['x-ratelimit-limit'] ?? '', /^\d+$/)
          assert.match(r.headers['x-ratelimit-remaining'] ?? '', /^\d+$/)
          assert.ok(Number(r.headers['x-ratelimit-reset']) > Date.now() / 1000 - 1)
          const viaCookie = await call(c, null, undefined, cookieOf(await session()))
          assert.ok(viaCookie.status < 300, viaCookie.text)
          const method = OPS[c.op as keyof typeof OPS]?.method ?? 'GET'
          if (method !== 'GET') {
            // A session of its own: the call above may have signed its session out (logout).
            const jwt = await session()
            // The cookie alone (a cross-site form or fetch) cannot change anything.
            assertProblem(await call(c, null, undefined, { cookie: `erm3_session=${jwt}` }), 403, 'FORBIDDEN')
            // Nor can a token that belongs to another session (one an attacker could obtain).
            const other = await signSession(t.ctx, { accountId, email: `other-${email}` })
            assert.notEqual(other, jwt)
            const foreign = csrfOf(other)
            const r = await call(c, null, undefined, {
              cookie: `erm3_session=${jwt}; erm3_csrf=${foreign}`,
              'x-csrf-token': foreign,
            })
            assertProblem(r, 403, 'FORBIDDEN')
          }
        })
        test('a signed-out session → 401 REVOKED_KEY (bearer and cookie); after sign-out everywhere, every session', async () => {
          const headers = () => ({ 'x-forwarded-for': freshIp() })
          const jwt = await session()
          const out = await t.client.call('logout', { key: jwt, headers: headers() })
          assert.equal(out.status, 204, out.text)
          assertProblem(await call(c, jwt), 401, 'REVOKED_KEY')
          assertProblem(await call(c, null, undefined, cookieOf(jwt)), 401, 'REVOKED_KEY')
          const [a, b] = [await session(), await session()]
          const all = await t.client.call('logoutAll', { key: a, headers: headers() })
          assert.equal(all.status, 200, all.text)
          for (const gone of [a, b]) assertProblem(await call(c, gone), 401, 'REVOKED_KEY')
          assertProblem(await call(c, null, undefined, cookieOf(b)), 401, 'REVOKED_KEY')
          // A new sign-in works again.
          const r = await call(c, await session())
          assert.ok(r.status < 300, r.text)
        })
        test('over the address rate → 429 RATE_LIMITED with Retry-After (forged hops and /64 siblings too)', async () => {
          const ip = freshIp()
          const rule = addressRule(t.ctx.config)
          // Input and session first: made after the drain, they gave the bucket time to refill a
          // token (one per 100 ms) on a loaded machine, and the request passed.
          const input = await c.input({ t, accountId })
          const jwt = await session()
          await t.ctx.limits.rate.take(ADDRESS_BUCKET + ip, rule, Date.now(), rule.burst)
          const r = await call(c, jwt, input, { 'x-forwarded-for': ip })
          assertProblem(r, 429, 'RATE_LIMITED')
          assert.ok(Number(r.headers['retry-after']) >= 1)
          assert.equal(r.headers['x-ratelimit-remaining'], '0')
          // Neither a forged left-most X-Forwarded-For entry (the proxy appends the real client)…
          await t.ctx.limits.rate.take(ADDRESS_BUCKET + ip, rule, Date.now(), rule.burst)
          const forged = await call(c, jwt, input, { 'x-forwarded-for': `192.0.2.${ipSeq % 250}, ${ip}` })
          assertProblem(forged, 429, 'RATE_LIMITED')
          // …nor another address of the same IPv6 /64 escapes the limit.
          const net = `2001:db8:${(++ipSeq).toString(16)}:1::`
          await t.ctx.limits.rate.take(`${ADDRESS_BUCKET}${net}/64`, rule, Date.now(), rule.burst)
          const sibling = await call(c, jwt, input, { 'x-forwarded-for': `${net}${ipSeq.toString(16)}` })
          assertProblem(sibling, 429, 'RATE_LIMITED')
        })
        test('a valid session with invalid input → a 4xx problem', {
          skip: c.invalid ? undefined : 'no invalid input exists',
        }, async () => {
          const r = await call(c, await session(), await c.invalid?.({ t, accountId }))
          assert.ok(r.status >= 400 && r.status < 500, `${r.status} ${r.text}`)
          assert.match(r.headers['content-type'] ?? '', /^application\/problem\+json/)
        })
      })
    }
  })
}
