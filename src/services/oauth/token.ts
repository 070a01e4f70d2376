import { parseApiKey } from '../../contract/api-key.ts'
import { newId } from '../../platform/ids.ts'
import type { ServiceContext } from '../context.ts'
import { clientActor, recordAudit } from '../identity/audit.ts'
import { forgetKey, hashKey, issueKey } from '../identity/keys.ts'
import {
  ACCESS_TTL_S,
  isOwnResource,
  issuerOf,
  oauthStore,
  pkceS256,
  REFRESH_PREFIX,
  REFRESH_TTL_MS,
  randomSecret,
  revokePair,
  secretHash,
} from './common.ts'
import { oauthError } from './errors.ts'

/** Form fields of POST /oauth/token (RFC 6749 §4.1.3, §6). */
export interface TokenRequest {
  grant_type?: string
  code?: string
  redirect_uri?: string
  code_verifier?: string
  refresh_token?: string
  client_id?: string
  resource?: string
}

export interface TokenResponse {
  access_token: string
  token_type: 'Bearer'
  expires_in: number
  refresh_token: string
  scope: string
}

/** RFC 7636 §4.1: 43–128 unreserved characters. */
const VERIFIER = /^[A-Za-z0-9._~-]{43,128}$/

function required<K extends keyof TokenRequest>(r: TokenRequest, names: K[]): void {
  const missing = names.filter((n) => !r[n])
  if (missing.length) throw oauthError('invalid_request', `Missing parameter: ${missing.join(', ')}`)
}

async function knownClient(ctx: ServiceContext, clientId: string): Promise<string> {
  const client = await oauthStore(ctx).getClient(clientId)
  if (!client) throw oauthError('invalid_client', 'Unknown client_id')
  return client.clientName
}

/** A new access token (an erm_user_live key bound to the client) and refresh token of one family. */
async function issueTokens(
  ctx: ServiceContext,
  grant: { accountId: string; clientId: string; clientName: string; scope: string },
  refreshToken: string,
): Promise<TokenResponse> {
  const now = ctx.now()
  const { apiKey } = await issueKey(ctx, {
    accountId: grant.accountId,
    kind: 'user',
    environment: 'live',
    expiresAt: now + ACCESS_TTL_S * 1000,
    clientId: grant.clientId,
    name: `OAuth: ${grant.clientName}`.slice(0, 100),
  })
  return {
    access_token: apiKey,
    token_type: 'Bearer',
    expires_in: ACCESS_TTL_S,
    refresh_token: refreshToken,
    scope: grant.scope,
  }
}

/** `ip`: the client's address, for the audit entry of a grant the request ends (a replay). */
export async function exchangeToken(
  ctx: ServiceContext,
  r: TokenRequest,
  ip: string | null,
): Promise<TokenResponse> {
  required(r, ['grant_type'])
  if (r.resource !== undefined && !isOwnResource(ctx, r.resource))
    throw oauthError('invalid_target', `resource must be this server (${issuerOf(ctx)}), not ${r.resource}`)
  if (r.grant_type === 'authorization_code') return exchangeCode(ctx, r, ip)
  if (r.grant_type === 'refresh_token') return refresh(ctx, r, ip)
  // client_credentials included: servers and CLI tools use API keys.
  throw oauthError('unsupported_grant_type', `grant_type ${r.grant_type} is not supported`)
}

async function exchangeCode(ctx: ServiceContext, r: TokenRequest, ip: string | null): Promise<TokenResponse> {
  required(r, ['code', 'redirect_uri', 'client_id', 'code_verifier'])
  const { code, redirect_uri, client_id, code_verifier } = r as Required<TokenRequest>
  const clientName = await knownClient(ctx, client_id)
  const now = ctx.now()
  const used = await oauthStore(ctx).consumeCode(secretHash(code), now)
  if (used.status === 'reused') {
    // RFC 6749 §4.1.2: a code seen twice was stolen or replayed; revoke what it issued.
    const { accountId, clientId } = used.code
    await revokePair(ctx, accountId, clientId, {
      actor: clientActor(accountId, clientId, ip),
      reason: 'code_reused',
    })
    throw oauthError('invalid_grant', 'The authorization code was already used; its tokens are revoked')
  }
  if (used.status !== 'ok') throw oauthError('invalid_grant', 'The authorization code is invalid or expired')
  // The code is spent whatever follows: a failed verification must not leave it usable.
  const c = used.code
  if (c.clientId !== client_id) throw oauthError('invalid_grant', 'The code was issued to another client')
  if (c.redirectUri !== redirect_uri)
    throw oauthError('invalid_grant', 'redirect_uri differs from the authorization request')
  if (!VERIFIER.test(code_verifier) || pkceS256(code_verifier) !== c.codeChallenge)
    throw oauthError('invalid_grant', 'code_verifier does not match the code_challenge')
  const refreshToken = randomSecret(REFRESH_PREFIX)
  await oauthStore(ctx).createRefreshToken({
    hash: secretHash(refreshToken),
    familyId: newId('rtf'),
    clientId: c.clientId,
    accountId: c.accountId,
    scope: c.scope,
    createdAt: now,
    expiresAt: now + REFRESH_TTL_MS,
  })
  return issueTokens(
    ctx,
    { accountId: c.accountId, clientId: c.clientId, clientName, scope: c.scope },
    refreshToken,
  )
}

async function refresh(ctx: ServiceContext, r: TokenRequest, ip: string | null): Promise<TokenResponse> {
  required(r, ['refresh_token', 'client_id'])
  const { refresh_token, client_id } = r as Required<TokenRequest>
  const clientName = await knownClient(ctx, client_id)
  const now = ctx.now()
  const next = randomSecret(REFRESH_PREFIX)
  const rotated = await oauthStore(ctx).rotateRefreshToken(
    secretHash(refresh_token),
    client_id,
    { hash: secretHash(next), createdAt: now, expiresAt: now + REFRESH_TTL_MS },
    now,
  )
  if (rotated.status === 'replayed') {
    // A rotated token came back, so two parties hold the family: revoke the whole pair
    // (docs/decisions/oauth.md).
    const { accountId, clientId } = rotated.previous
    await revokePair(ctx, accountId, clientId, {
      actor: clientActor(accountId, clientId, ip),
      reason: 'refresh_token_replayed',
    })
    throw oauthError(
      'invalid_grant',
      'The refresh token was already used; every token of this grant is revoked',
    )
  }
  if (rotated.status !== 'ok')
    throw oauthError('invalid_grant', 'The refresh token is invalid, expired or revoked')
  const p = rotated.previous
  return issueTokens(ctx, { accountId: p.accountId, clientId: p.clientId, clientName, scope: p.scope }, next)
}

/**
 * RFC 7009. The token's format decides its kind (the hint is only a hint). Unknown tokens, and
 * keys not issued by OAuth (no client), are left alone and still answered 200. Each revocation
 * that ends something is in the account's audit log, the client as its actor (from `ip`).
 */
export async function revokeToken(
  ctx: ServiceContext,
  token: string | undefined,
  ip: string | null,
): Promise<void> {
  if (!token) throw oauthError('invalid_request', 'Missing parameter: token')
  const now = ctx.now()
  if (parseApiKey(token)) {
    const key = await ctx.accounts.findKeyByHash(hashKey(ctx.secrets.pepper, token))
    if (!key || key.clientId === null) return
    await ctx.accounts.revokeKey(key.id, now)
    forgetKey(ctx, key.id)
    if (key.revokedAt === null)
      await recordAudit(ctx, clientActor(key.accountId, key.clientId, ip), 'oauth.token_revoked', key.id, {
        client_id: key.clientId,
        prefix: key.prefix,
      })
    return
  }
  if (!token.startsWith(REFRESH_PREFIX)) return
  const revoked = await oauthStore(ctx).revokeRefreshToken(secretHash(token), now)
  // RFC 7009 §2.1: the access tokens of the grant go with its refresh token.
  if (revoked)
    await revokePair(ctx, revoked.accountId, revoked.clientId, {
      actor: clientActor(revoked.accountId, revoked.clientId, ip),
      reason: 'client_revoked',
    })
}
