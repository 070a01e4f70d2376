/** Server-side sessions on the SQLite account store's connection (sessions-types.ts). */
import type Database from 'better-sqlite3'
import { SESSION_COLUMNS, type SessionRow, toSession } from './sessions-schema.ts'
import type { SessionStore } from './sessions-types.ts'

export function createSqliteSessionStore(db: Database.Database): SessionStore {
  const insert = db.prepare<[string, string, string, number, number, number]>(
    `INSERT INTO sessions (id, hash, account_id, created_at, last_seen_at, expires_at)
     VALUES (?, ?, ?, ?, ?, ?)`,
  )
  const byHash = db.prepare<[string], SessionRow>(`SELECT ${SESSION_COLUMNS} FROM sessions WHERE hash = ?`)
  const touch = db.prepare<[number, string, number]>(
    'UPDATE sessions SET last_seen_at = ? WHERE id = ? AND last_seen_at < ?',
  )
  const revoke = db.prepare<[number, string]>(
    'UPDATE sessions SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL',
  )
  const revokeAll = db.prepare<[number, string, number]>(
    'UPDATE sessions SET revoked_at = ? WHERE account_id = ? AND revoked_at IS NULL AND expires_at > ?',
  )
  const purge = db.prepare<[number]>('DELETE FROM sessions WHERE expires_at < ?')
  return {
    async createSession(s) {
      insert.run(s.id, s.hash, s.accountId, s.createdAt, s.createdAt, s.expiresAt)
    },
    async findSessionByHash(hash) {
      const r = byHash.get(hash)
      return r ? toSession(r) : null
    },
    async touchSession(id, at) {
      touch.run(at, id, at)
    },
    async revokeSession(id, at) {
      return revoke.run(at, id).changes === 1
    },
    async revokeAccountSessions(accountId, at) {
      return revokeAll.run(at, accountId, at).changes
    },
    async purgeExpiredSessions(before) {
      return purge.run(before).changes
    },
  }
}
