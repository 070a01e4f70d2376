/**
 * Schema of server-side sessions and of the sign-in link's browser binding, migration 7 of the
 * account store. `login_tokens.state_hash` is the SHA-256 of the nonce the browser that asked for
 * the link holds in a cookie (null for a link asked for outside a browser); `sessions` holds one
 * row per sign-in (sessions-types.ts), looked up by the hash of the secret in the session JWT.
 */
import type { SessionRecord } from './sessions-types.ts'

export function sessionTables(time: 'INTEGER' | 'BIGINT'): string[] {
  return [
    'ALTER TABLE login_tokens ADD COLUMN state_hash TEXT',
    `CREATE TABLE sessions (
      id TEXT PRIMARY KEY,
      hash TEXT NOT NULL UNIQUE,
      account_id TEXT NOT NULL REFERENCES accounts (id),
      created_at ${time} NOT NULL,
      last_seen_at ${time} NOT NULL,
      expires_at ${time} NOT NULL,
      revoked_at ${time}
    )`,
    // Sign out everywhere works on the account's sessions; the purge on expiry.
    'CREATE INDEX sessions_account ON sessions (account_id, expires_at)',
    'CREATE INDEX sessions_expires ON sessions (expires_at)',
  ]
}

/** The row as both dialects read it (BIGINT times arrive as strings from pg). */
export interface SessionRow {
  id: string
  account_id: string
  created_at: number | string
  last_seen_at: number | string
  expires_at: number | string
  revoked_at: number | string | null
}

export const SESSION_COLUMNS = 'id, account_id, created_at, last_seen_at, expires_at, revoked_at'

export const toSession = (r: SessionRow): SessionRecord => ({
  id: r.id,
  accountId: r.account_id,
  createdAt: Number(r.created_at),
  lastSeenAt: Number(r.last_seen_at),
  expiresAt: Number(r.expires_at),
  revokedAt: r.revoked_at === null ? null : Number(r.revoked_at),
})
