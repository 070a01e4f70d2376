import type { PurgeCutoffs, PurgeReport } from '../../store/accounts/types.ts'
import type { ServiceContext } from '../context.ts'

const DAY_MS = 24 * 3600_000

/**
 * How long expired one-time secrets (all stored as hashes) stay before the server deletes them.
 * Sign-in tokens and authorization codes are useless once expired; a day leaves their use in
 * reach of an investigation. Refresh tokens stay 30 days past their own expiry, so the replay of
 * a rotated token is still recognised (and its family revoked) for as long as any descendant of
 * it could be alive.
 */
export const PURGE_AFTER_EXPIRY_MS = {
  loginTokens: DAY_MS,
  codes: DAY_MS,
  refreshTokens: 30 * DAY_MS,
  /** Sign-in sessions (expired or signed out): refused either way; a day keeps them for an investigation. */
  sessions: DAY_MS,
} as const

function purgeCutoffs(now: number): PurgeCutoffs {
  return {
    loginTokens: now - PURGE_AFTER_EXPIRY_MS.loginTokens,
    codes: now - PURGE_AFTER_EXPIRY_MS.codes,
    refreshTokens: now - PURGE_AFTER_EXPIRY_MS.refreshTokens,
  }
}

/**
 * Deletes the expired one-time secrets and sign-in sessions past their grace period (run by the
 * server's housekeeping).
 */
export async function purgeExpiredSecrets(
  ctx: Pick<ServiceContext, 'accounts' | 'now'>,
): Promise<PurgeReport & { sessions: number }> {
  const now = ctx.now()
  const report = await ctx.accounts.purgeExpired(purgeCutoffs(now))
  const sessions = await ctx.accounts.sessions().purgeExpiredSessions(now - PURGE_AFTER_EXPIRY_MS.sessions)
  return { ...report, sessions }
}
