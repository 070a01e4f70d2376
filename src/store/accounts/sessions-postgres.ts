/** Server-side sessions on the PostgreSQL account store's pool (sessions-types.ts). */
import type pg from 'pg'
import { SESSION_COLUMNS, type SessionRow, toSession } from './sessions-schema.ts'
import type { SessionStore } from './sessions-types.ts'

export function createPostgresSessionStore(pool: pg.Pool): SessionStore {
  return {
    async createSession(s) {
      await pool.query(
        `INSERT INTO sessions (id, hash, account_id, created_at, last_seen_at, expires_at)
         VALUES ($1, $2, $3, $4, $4, $5)`,
        [s.id, s.hash, s.accountId, s.createdAt, s.expiresAt],
      )
    },
    async findSessionByHash(hash) {
      // Every session request asks: a named statement, parsed once per connection.
      const r = await pool.query<SessionRow>({
        name: 'session_by_hash',
        text: `SELECT ${SESSION_COLUMNS} FROM sessions WHERE hash = $1`,
        values: [hash],
      })
      return r.rows[0] ? toSession(r.rows[0]) : null
    },
    async touchSession(id, at) {
      await pool.query('UPDATE sessions SET last_seen_at = $2 WHERE id = $1 AND last_seen_at < $2', [id, at])
    },
    async revokeSession(id, at) {
      const r = await pool.query('UPDATE sessions SET revoked_at = $2 WHERE id = $1 AND revoked_at IS NULL', [
        id,
        at,
      ])
      return r.rowCount === 1
    },
    async revokeAccountSessions(accountId, at) {
      const r = await pool.query(
        'UPDATE sessions SET revoked_at = $2 WHERE account_id = $1 AND revoked_at IS NULL AND expires_at > $2',
        [accountId, at],
      )
      return r.rowCount ?? 0
    },
    async purgeExpiredSessions(before) {
      return (await pool.query('DELETE FROM sessions WHERE expires_at < $1', [before])).rowCount ?? 0
    },
  }
}
