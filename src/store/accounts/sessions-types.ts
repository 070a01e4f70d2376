/**
 * Server-side sign-in sessions, migration 7 (sessions-schema.ts). A session JWT carries a random
 * secret (`sid`); only its SHA-256 is stored, beside the session's own id (`ses_…`, safe to show
 * in the audit log). A session is valid while its row exists, is not revoked and is unexpired, so
 * signing out takes effect at once on every node that reads the same database.
 *
 * Times are epoch milliseconds.
 */

export interface SessionRecord {
  id: string
  accountId: string
  createdAt: number
  /** Moved forward at most every few minutes by the requests that use the session. */
  lastSeenAt: number
  expiresAt: number
  revokedAt: number | null
}

export interface NewSession {
  id: string
  /** SHA-256 (hex) of the secret the session JWT carries; the secret itself is never stored. */
  hash: string
  accountId: string
  createdAt: number
  expiresAt: number
}

export interface SessionStore {
  createSession(s: NewSession): Promise<void>
  /** The session by the hash of its secret (revoked and expired ones too: the caller decides), or null. */
  findSessionByHash(hash: string): Promise<SessionRecord | null>
  /** Moves last_seen_at forward (never back). */
  touchSession(id: string, at: number): Promise<void>
  /** Revokes one session; true when this call revoked it (false: unknown or revoked already). */
  revokeSession(id: string, at: number): Promise<boolean>
  /** Revokes every session of the account not yet revoked or expired at `at`; how many it revoked. */
  revokeAccountSessions(accountId: string, at: number): Promise<number>
  /** Deletes sessions that expired before `before` (revoked ones included); how many. */
  purgeExpiredSessions(before: number): Promise<number>
}
