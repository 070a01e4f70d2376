import { createHmac, timingSafeEqual } from 'node:crypto'
import type { OAuthClient } from '../../store/oauth/types.ts'
import type { ServiceContext } from '../context.ts'
import { recordAudit } from '../identity/audit.ts'
import type { Session } from '../identity/session.ts'
import {
  CODE_TTL_MS,
  isOwnResource,
  issuerOf,
  oauthStore,
  randomSecret,
  SCOPE,
  secretHash,
} from './common.ts'

/** The parameters of an authorization request (query of GET, form of POST /oauth/authorize). */
export interface AuthorizationParams {
  response_type?: string
  client_id?: string
  redirect_uri?: string
  scope?: string
  state?: string
  code_challenge?: string
  code_challenge_method?: string
  resource?: string
}

export interface ValidAuthorization {
  client: OAuthClient
  redirectUri: string
  state: string | null
  codeChallenge: string
  scope: string
}

export type AuthorizationCheck =
  /** The client or its redirect URI cannot be trusted: show the error, never redirect (RFC 6749 §4.1.2.1). */
  | { kind: 'page'; message: string }
  /** The redirect URI is trusted: the error goes back to the client. */
  | { kind: 'redirect'; location: string }
  | { kind: 'ok'; request: ValidAuthorization }

/** S256 challenges are BASE64URL of a SHA-256 digest: always 43 characters. */
const S256_CHALLENGE = /^[A-Za-z0-9_-]{43}$/

/** Adds the response parameters to the client's redirect URI (its own query kept), with `iss` (RFC 9207). */
function redirectWith(
  ctx: ServiceContext,
  redirectUri: string,
  state: string | null,
  params: Record<string, string>,
): string {
  const u = new URL(redirectUri)
  for (const [k, v] of Object.entries(params)) u.searchParams.set(k, v)
  if (state !== null) u.searchParams.set('state', state)
  u.searchParams.set('iss', issuerOf(ctx))
  return u.href
}

export async function checkAuthorization(
  ctx: ServiceContext,
  q: AuthorizationParams,
): Promise<AuthorizationCheck> {
  if (!q.client_id) return { kind: 'page', message: 'The request has no client_id.' }
  const client = await oauthStore(ctx).getClient(q.client_id)
  if (!client) return { kind: 'page', message: 'This application is not registered with erm3.' }
  if (!q.redirect_uri) return { kind: 'page', message: 'The request has no redirect_uri.' }
  // Exact string comparison: no normalisation, no prefix or port leniency (docs/decisions/oauth.md).
  if (!client.redirectUris.includes(q.redirect_uri))
    return { kind: 'page', message: 'The redirect_uri is not one this application registered.' }
  const redirectUri = q.redirect_uri
  const state = q.state ?? null
  const fail = (error: string, description: string): AuthorizationCheck => ({
    kind: 'redirect',
    location: redirectWith(ctx, redirectUri, state, { error, error_description: description }),
  })
  if (!q.response_type) return fail('invalid_request', 'response_type is required')
  if (q.response_type !== 'code')
    return fail('unsupported_response_type', 'Only response_type=code is supported')
  if (!q.code_challenge) return fail('invalid_request', 'PKCE is required: send code_challenge')
  if (q.code_challenge_method !== 'S256')
    return fail('invalid_request', 'PKCE code_challenge_method must be S256 (plain is not accepted)')
  if (!S256_CHALLENGE.test(q.code_challenge))
    return fail('invalid_request', 'code_challenge must be 43 base64url characters (S256)')
  if (q.resource !== undefined && !isOwnResource(ctx, q.resource))
    return fail('invalid_target', `resource must be this server (${issuerOf(ctx)}), not ${q.resource}`)
  // Scope is informational: whatever is asked, mcp:read is what is granted and recorded.
  return {
    kind: 'ok',
    request: { client, redirectUri, state, codeChallenge: q.code_challenge, scope: SCOPE },
  }
}

/**
 * The consent form's CSRF token: an HMAC (session secret) of the session token and every
 * parameter the decision acts on, so it cannot be forged nor replayed for another request or
 * another signed-in user.
 */
export function consentToken(ctx: ServiceContext, sessionToken: string, r: ValidAuthorization): string {
  return createHmac('sha256', ctx.secrets.sessionSecret)
    .update(
      JSON.stringify([
        'oauth-consent',
        sessionToken,
        r.client.clientId,
        r.redirectUri,
        r.codeChallenge,
        r.state,
        r.scope,
      ]),
    )
    .digest('base64url')
}

export function consentTokenValid(
  ctx: ServiceContext,
  sessionToken: string,
  r: ValidAuthorization,
  given: string | undefined,
): boolean {
  if (!given) return false
  const want = Buffer.from(consentToken(ctx, sessionToken, r))
  const got = Buffer.from(given)
  return want.length === got.length && timingSafeEqual(want, got)
}

/**
 * Approval: the grant recorded (and in the account's audit log, from `ip`), a single-use code
 * (stored hashed, 5 minutes), and where to send the browser.
 */
export async function approve(
  ctx: ServiceContext,
  session: Session,
  r: ValidAuthorization,
  ip: string | null,
): Promise<string> {
  const code = randomSecret()
  const now = ctx.now()
  const grant = { accountId: session.accountId, clientId: r.client.clientId }
  await oauthStore(ctx).recordApproval({ ...grant, redirectUri: r.redirectUri, scope: r.scope, at: now })
  await recordAudit(
    ctx,
    { accountId: session.accountId, type: 'session', id: session.email, ip },
    'oauth.approved',
    r.client.clientId,
    { client_name: r.client.clientName, redirect_uri: r.redirectUri, scope: r.scope },
  )
  await oauthStore(ctx).createCode({
    hash: secretHash(code),
    clientId: r.client.clientId,
    accountId: session.accountId,
    redirectUri: r.redirectUri,
    codeChallenge: r.codeChallenge,
    scope: r.scope,
    createdAt: now,
    expiresAt: now + CODE_TTL_MS,
  })
  ctx.log.info({ client_id: r.client.clientId, account_id: session.accountId }, 'oauth code issued')
  return redirectWith(ctx, r.redirectUri, r.state, { code })
}

export function deny(ctx: ServiceContext, r: ValidAuthorization): string {
  return redirectWith(ctx, r.redirectUri, r.state, {
    error: 'access_denied',
    error_description: 'The user denied the request',
  })
}
