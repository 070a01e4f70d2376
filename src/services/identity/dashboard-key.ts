import { createHmac } from 'node:crypto'
import { apiKeyFromBytes, keyDisplayPrefix } from '../../contract/api-key.ts'
import { AppError } from '../../platform/errors.ts'
import { newId } from '../../platform/ids.ts'
import type { ApiKeyRecord } from '../../store/accounts/types.ts'
import type { ServiceContext } from '../context.ts'
import { type AuditActor, recordAudit } from './audit.ts'
import { forgetKey, hashKey } from './keys.ts'
import { SESSION_TTL_S, type Session } from './session.ts'

/**
 * The dashboard's key for a sign-in session (docs/dashboard.md). Its plaintext is derived, not
 * stored: HMAC-SHA512(session secret of the server, session id, generation). Asked again for the
 * same session (a page reload, a second tab), the server derives the same key and finds its row by
 * hash: no new key per page or per sign-in view. A generation the user revoked by hand is skipped,
 * so the next ask derives the next one.
 */
const DASHBOARD_KEY_NAME = 'dashboard (this browser session)'
/** How many hand revocations one session survives before it must sign in again. */
const MAX_GENERATIONS = 10

function derive(ctx: Pick<ServiceContext, 'secrets'>, sessionId: string, generation: number): string {
  const bytes = createHmac('sha512', ctx.secrets.sessionSecret)
    .update(JSON.stringify(['dashboard-key-v1', sessionId, generation]))
    .digest()
  return apiKeyFromBytes('user', 'live', bytes)
}

/** The session's dashboard key: the existing one, or (first ask, or after a revocation) a new row. */
export async function dashboardKey(
  ctx: ServiceContext,
  session: Session,
  actor: AuditActor,
): Promise<{ apiKey: string; record: ApiKeyRecord }> {
  const now = ctx.now()
  for (let generation = 0; generation < MAX_GENERATIONS; generation++) {
    const apiKey = derive(ctx, session.sessionId, generation)
    const hash = hashKey(ctx.secrets.pepper, apiKey)
    const found = await ctx.accounts.findKeyByHash(hash)
    if (found) {
      if (found.revokedAt === null && (found.expiresAt === null || found.expiresAt > now))
        return { apiKey, record: found }
      continue
    }
    let record: ApiKeyRecord
    try {
      record = await ctx.accounts.insertKey({
        id: newId('key'),
        accountId: session.accountId,
        kind: 'user',
        environment: 'live',
        prefix: keyDisplayPrefix(apiKey),
        name: DASHBOARD_KEY_NAME,
        tier: 'default',
        hash,
        createdAt: now,
        expiresAt: session.expiresAt ?? now + SESSION_TTL_S * 1000,
        clientId: null,
      })
    } catch (e) {
      // Two tabs asked at once: the other inserted this very key (the hash is unique).
      const raced = await ctx.accounts.findKeyByHash(hash)
      if (raced?.revokedAt === null) return { apiKey, record: raced }
      throw e
    }
    await recordAudit(ctx, actor, 'key.created', record.id, {
      name: record.name,
      environment: record.environment,
      prefix: record.prefix,
      expires_at: record.expiresAt,
    })
    return { apiKey, record }
  }
  throw new AppError('CONFLICT', 'This session’s dashboard keys were all revoked: sign out and sign in again')
}

/** Revokes the session's dashboard key (signing out); a key already revoked or never made is skipped. */
export async function revokeDashboardKey(ctx: ServiceContext, sessionId: string): Promise<void> {
  for (let generation = 0; generation < MAX_GENERATIONS; generation++) {
    const found = await ctx.accounts.findKeyByHash(
      hashKey(ctx.secrets.pepper, derive(ctx, sessionId, generation)),
    )
    if (!found) return
    if (found.revokedAt !== null) continue
    await ctx.accounts.revokeKey(found.id, ctx.now())
    forgetKey(ctx, found.id)
  }
}

/** Revokes every dashboard key of the account (signing out everywhere). */
export async function revokeDashboardKeys(ctx: ServiceContext, accountId: string): Promise<number> {
  const now = ctx.now()
  const live = (await ctx.accounts.listKeys(accountId)).filter(
    (k) =>
      k.kind === 'user' &&
      k.clientId === null &&
      k.name === DASHBOARD_KEY_NAME &&
      k.revokedAt === null &&
      (k.expiresAt === null || k.expiresAt > now),
  )
  for (const k of live) {
    await ctx.accounts.revokeKey(k.id, now)
    forgetKey(ctx, k.id)
  }
  return live.length
}
