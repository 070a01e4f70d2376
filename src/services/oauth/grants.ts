/**
 * The account's OAuth grants ("connected agents"): the list the dashboard shows and the user's
 * revocation. A grant is an (account, client) pair; see OAuthStore.listGrants for what is listed.
 */
import { AppError } from '../../platform/errors.ts'
import type { OAuthGrant } from '../../store/oauth/types.ts'
import type { ServiceContext } from '../context.ts'
import type { AuditActor } from '../identity/audit.ts'
import { flushKeyUsage } from '../identity/keys.ts'
import { type GrantRevocationReason, oauthStore, revokePair, SCOPE } from './common.ts'

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString())

function grantView(g: OAuthGrant) {
  return {
    client_id: g.clientId,
    client_name: g.clientName ?? g.clientId,
    redirect_uris: g.redirectUris,
    approved_redirect_uri: g.approvedRedirectUri,
    scope: g.scope ?? SCOPE,
    created_at: new Date(g.createdAt).toISOString(),
    approved_at: iso(g.approvedAt),
    last_used_at: iso(g.lastUsedAt),
    active: g.live.accessTokens + g.live.refreshTokens + g.live.codes > 0,
    active_access_tokens: g.live.accessTokens,
    active_refresh_tokens: g.live.refreshTokens,
  }
}

export async function listGrants(ctx: ServiceContext, accountId: string) {
  await flushKeyUsage(ctx)
  const grants = await oauthStore(ctx).listGrants(accountId, ctx.now())
  return { account_id: accountId, grants: grants.map(grantView) }
}

/**
 * Ends the account's grant to `clientId` (every token of the pair). A client the account has no
 * listed grant to is a 404 — whether it exists, is another account's, or was revoked already.
 */
export async function revokeGrant(
  ctx: ServiceContext,
  actor: AuditActor,
  clientId: string,
  reason: Extract<GrantRevocationReason, 'user' | 'key_deleted'> = 'user',
) {
  const now = ctx.now()
  const listed = await oauthStore(ctx).listGrants(actor.accountId, now)
  if (!listed.some((g) => g.clientId === clientId))
    throw new AppError('NOT_FOUND', `The account has no grant to OAuth client ${clientId}`)
  const r = await revokePair(ctx, actor.accountId, clientId, { actor, reason })
  return {
    client_id: clientId,
    revoked_at: new Date(now).toISOString(),
    access_tokens_revoked: r.accessTokens,
    refresh_tokens_revoked: r.refreshTokens,
  }
}
