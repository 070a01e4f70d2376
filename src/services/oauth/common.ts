import { createHash, randomBytes } from 'node:crypto'
import type { OAuthStore } from '../../store/oauth/types.ts'
import type { ServiceContext } from '../context.ts'
import { forgetKey } from '../identity/keys.ts'

/** Lifetimes of spec §5 / §8 and DECISIONS.md "OAuth". */
export const CODE_TTL_MS = 5 * 60_000
export const ACCESS_TTL_S = 3600
export const REFRESH_TTL_MS = 30 * 86_400_000
/** The only scope; recorded for telemetry, never used for authorisation (spec §5). */
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
 * Revokes every token of an (account, client) pair and drops that client's keys from this
 * process's key cache, so a revoked access token stops working at once here (other nodes: within
 * the cache TTL).
 */
export async function revokePair(ctx: ServiceContext, accountId: string, clientId: string): Promise<void> {
  const r = await oauthStore(ctx).revokeGrant(accountId, clientId, ctx.now())
  for (const k of await ctx.accounts.listKeys(accountId)) if (k.clientId === clientId) forgetKey(ctx, k.id)
  ctx.log.info(
    {
      account_id: accountId,
      client_id: clientId,
      refresh_tokens: r.refreshTokens,
      access_tokens: r.accessTokens,
    },
    'oauth grant revoked',
  )
}
