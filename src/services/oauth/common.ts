import { createHash, randomBytes } from 'node:crypto'
import type { GrantRevocation, OAuthStore } from '../../store/oauth/types.ts'
import type { ServiceContext } from '../context.ts'
import { type AuditActor, recordAudit } from '../identity/audit.ts'
import { forgetKey } from '../identity/keys.ts'

/** Lifetimes of docs/decisions/oauth.md. */
export const CODE_TTL_MS = 5 * 60_000
export const ACCESS_TTL_S = 3600
export const REFRESH_TTL_MS = 30 * 86_400_000
/** The only scope; recorded for telemetry, never used for authorisation. */
export const SCOPE = 'mcp:read'
/** Refresh tokens carry a prefix so secret scanners and the revocation endpoint can tell them from keys. */
export const REFRESH_PREFIX = 'ermrt_'

export function oauthStore(ctx: Pick<ServiceContext, 'accounts'>): OAuthStore {
  return ctx.accounts.oauth()
}

/** 256 bits of randomness, URL-safe. */
export function randomSecret(prefix = ''): string {
  return `${prefix}${randomBytes(32).toString('base64url')}`
}

/** Codes and refresh tokens are stored only as this hash. */
export function secretHash(secret: string): string {
  return createHash('sha256').update(secret).digest('hex')
}

/** RFC 7636 §4.2: BASE64URL(SHA256(ASCII(code_verifier))). */
export function pkceS256(verifier: string): string {
  return createHash('sha256').update(verifier, 'ascii').digest('base64url')
}

/** The issuer is configuration (PUBLIC_URL), never derived from the request's Host header. */
export function issuerOf(ctx: Pick<ServiceContext, 'config'>): string {
  return ctx.config.publicUrl
}

/**
 * RFC 8707: whether a `resource` indicator names this server — PUBLIC_URL itself or a URL under
 * it (PUBLIC_URL/mcp, as MCP clients send), without a fragment. Tokens are only ever for this
 * server, so a request for another resource is refused (invalid_target), never issued.
 */
export function isOwnResource(ctx: Pick<ServiceContext, 'config'>, resource: string): boolean {
  let r: URL
  let own: URL
  try {
    r = new URL(resource)
    own = new URL(ctx.config.publicUrl)
  } catch {
    return false
  }
  if (resource.includes('#') || r.origin !== own.origin || r.username || r.password) return false
  const base = own.pathname.replace(/\/+$/, '')
  return r.pathname === base || r.pathname === `${base}/` || r.pathname.startsWith(`${base}/`)
}

/** Why a grant ended, as its audit entry says. */
export type GrantRevocationReason =
  /** The user, from the dashboard (DELETE /account/oauth-grants/{client_id}). */
  | 'user'
  /** The user revoked one of its access tokens as a key (DELETE /account/keys/{id}). */
  | 'key_deleted'
  /** The client revoked its refresh token (POST /oauth/revoke). */
  | 'client_revoked'
  /** An authorization code came back a second time: it was stolen or replayed. */
  | 'code_reused'
  /** A rotated refresh token came back: two parties hold the family. */
  | 'refresh_token_replayed'

/**
 * Revokes every token of an (account, client) pair (refresh tokens, access tokens, codes not yet
 * exchanged, the grant record) and drops that client's keys from this process's key cache: a
 * revoked access token is refused at once here and within KEY_CACHE_TTL_MS on every other node,
 * as any revoked key. Whatever it ended goes to the account's audit log as `oauth.grant_revoked`.
 */
export async function revokePair(
  ctx: ServiceContext,
  accountId: string,
  clientId: string,
  by: { actor: AuditActor; reason: GrantRevocationReason },
): Promise<GrantRevocation> {
  const r = await oauthStore(ctx).revokeGrant(accountId, clientId, ctx.now())
  for (const k of await ctx.accounts.listKeys(accountId)) if (k.clientId === clientId) forgetKey(ctx, k.id)
  const counts = {
    access_tokens: r.accessTokens,
    refresh_tokens: r.refreshTokens,
    pending_codes: r.codes,
  }
  ctx.log.info(
    { account_id: accountId, client_id: clientId, reason: by.reason, ...counts },
    'oauth grant revoked',
  )
  // A second revocation of the same grant changed nothing: one audit entry per grant ended.
  if (r.grant || r.accessTokens + r.refreshTokens + r.codes > 0) {
    const client = await oauthStore(ctx).getClient(clientId)
    await recordAudit(ctx, by.actor, 'oauth.grant_revoked', clientId, {
      client_name: client?.clientName ?? null,
      reason: by.reason,
      ...counts,
    })
  }
  return r
}
