/**
 * The SQLite account store's statements, prepared once per connection. Preparing needs the
 * tables, so the store prepares them lazily, after migrate.
 */
import type Database from 'better-sqlite3'
import {
  ACCOUNT_COLUMNS,
  type AccountRow,
  KEY_COLUMNS,
  type KeyRow,
  LEDGER_COLUMNS,
  type LedgerRow,
  SUMMARY_SELECT,
  type SummaryRow,
} from './rows.ts'

export function prepareSqlite(db: Database.Database) {
  return {
    insertAccount: db.prepare('INSERT INTO accounts (id, email, kind, created_at) VALUES (?, ?, ?, ?)'),
    account: db.prepare<[string], AccountRow>(`SELECT ${ACCOUNT_COLUMNS} FROM accounts WHERE id = ?`),
    accountByEmail: db.prepare<[string], AccountRow>(
      `SELECT ${ACCOUNT_COLUMNS} FROM accounts WHERE lower(email) = lower(?)`,
    ),
    accounts: db.prepare<[string, number], AccountRow>(
      `SELECT ${ACCOUNT_COLUMNS} FROM accounts WHERE id > ? ORDER BY id LIMIT ?`,
    ),
    insertKey: db.prepare(
      `INSERT INTO api_keys (id, account_id, kind, environment, prefix, name, tier, hash, created_at, expires_at, client_id)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    ),
    keyByHash: db.prepare<[string], KeyRow>(`SELECT ${KEY_COLUMNS} FROM api_keys WHERE hash = ?`),
    key: db.prepare<[string], KeyRow>(`SELECT ${KEY_COLUMNS} FROM api_keys WHERE id = ?`),
    keys: db.prepare<[string], KeyRow>(
      `SELECT ${KEY_COLUMNS} FROM api_keys WHERE account_id = ? ORDER BY created_at, id`,
    ),
    revoke: db.prepare<[number, string], KeyRow>(
      `UPDATE api_keys SET revoked_at = COALESCE(revoked_at, ?) WHERE id = ? RETURNING ${KEY_COLUMNS}`,
    ),
    touch: db.prepare<[number, string, number]>(
      'UPDATE api_keys SET last_used_at = ? WHERE id = ? AND (last_used_at IS NULL OR last_used_at < ?)',
    ),
    balance: db.prepare<[string], { b: number }>('SELECT balance_micros AS b FROM accounts WHERE id = ?'),
    addBalance: db.prepare<[number, string]>(
      'UPDATE accounts SET balance_micros = balance_micros + ? WHERE id = ?',
    ),
    insertLedger: db.prepare(
      `INSERT INTO ledger (id, account_id, kind, amount_micros, request_id, capability, reference, key_id, note, created_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (account_id, reference) WHERE reference IS NOT NULL DO NOTHING`,
    ),
    insertPaid: db.prepare<[string, string, string, number]>(
      `INSERT INTO paid_requests (account_id, request_key, data_as_of, created_at) VALUES (?, ?, ?, ?)
       ON CONFLICT DO NOTHING`,
    ),
    hasPaid: db.prepare<[string, string], { one: number }>(
      'SELECT 1 AS one FROM paid_requests WHERE account_id = ? AND request_key = ?',
    ),
    prunePaid: db.prepare<[string]>('DELETE FROM paid_requests WHERE data_as_of < ?'),
    byReference: db.prepare<[string, string], LedgerRow>(
      `SELECT ${LEDGER_COLUMNS} FROM ledger WHERE account_id = ? AND reference = ?`,
    ),
    entries: db.prepare<[string, number, number, number], LedgerRow>(
      `SELECT ${LEDGER_COLUMNS} FROM ledger WHERE account_id = ? AND created_at >= ? AND created_at < ?
       ORDER BY created_at, id LIMIT ?`,
    ),
    summary: db.prepare<[string, number, number], SummaryRow>(
      `${SUMMARY_SELECT} WHERE account_id = ? AND created_at >= ? AND created_at < ?`,
    ),
    mismatched: db.prepare<[], { id: string; actual: number }>(
      `SELECT id, actual FROM (SELECT a.id, a.balance_micros AS cached,
         COALESCE((SELECT SUM(l.amount_micros) FROM ledger l WHERE l.account_id = a.id), 0) AS actual
       FROM accounts a) WHERE cached <> actual`,
    ),
    setBalance: db.prepare<[number, string]>('UPDATE accounts SET balance_micros = ? WHERE id = ?'),
    insertToken: db.prepare(
      'INSERT INTO login_tokens (hash, email, expires_at, created_at, state_hash) VALUES (?, ?, ?, ?, ?)',
    ),
    findToken: db.prepare<[string, number], { email: string; state_hash: string | null }>(
      'SELECT email, state_hash FROM login_tokens WHERE hash = ? AND used_at IS NULL AND expires_at > ?',
    ),
    consumeToken: db.prepare<[number, string, number], { email: string }>(
      `UPDATE login_tokens SET used_at = ? WHERE hash = ? AND used_at IS NULL AND expires_at > ? RETURNING email`,
    ),
  }
}
