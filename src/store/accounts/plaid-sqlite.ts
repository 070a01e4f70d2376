/** Linked Plaid Items on the SQLite account store's connection (plaid-types.ts). */
import type Database from 'better-sqlite3'
import { PLAID_ITEM_COLUMNS, type PlaidItemRow, plaidItemValues, toPlaidItem } from './plaid-schema.ts'
import type { PlaidStore } from './plaid-types.ts'

export function createSqlitePlaidStore(db: Database.Database): PlaidStore {
  const insert = db.prepare(
    `INSERT INTO plaid_items (${PLAID_ITEM_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
     ON CONFLICT (item_id) DO NOTHING`,
  )
  const list = db.prepare<[string], PlaidItemRow>(
    `SELECT ${PLAID_ITEM_COLUMNS} FROM plaid_items WHERE account_id = ? ORDER BY created_at, id`,
  )
  const get = db.prepare<[string, string], PlaidItemRow>(
    `SELECT ${PLAID_ITEM_COLUMNS} FROM plaid_items WHERE account_id = ? AND id = ?`,
  )
  const del = db.prepare<[string, string]>('DELETE FROM plaid_items WHERE account_id = ? AND id = ?')
  const rekey = db.prepare<[string, string, string, string]>(
    'UPDATE plaid_items SET token_ciphertext = ?, token_key_id = ? WHERE id = ? AND token_key_id = ?',
  )
  const notUnder = db.prepare<[string, number], PlaidItemRow>(
    `SELECT ${PLAID_ITEM_COLUMNS} FROM plaid_items WHERE token_key_id <> ? ORDER BY id LIMIT ?`,
  )
  const setError = db.prepare<[string | null, string]>('UPDATE plaid_items SET last_error = ? WHERE id = ?')
  return {
    async insertItem(item) {
      return insert.run(...plaidItemValues(item)).changes === 1
    },
    async listItems(accountId) {
      return list.all(accountId).map(toPlaidItem)
    },
    async getItem(accountId, id) {
      const r = get.get(accountId, id)
      return r ? toPlaidItem(r) : null
    },
    async deleteItem(accountId, id) {
      return del.run(accountId, id).changes === 1
    },
    async rekeyToken(id, fromKeyId, ciphertext, keyId) {
      return rekey.run(ciphertext, keyId, id, fromKeyId).changes === 1
    },
    async setLastError(id, lastError) {
      setError.run(lastError, id)
    },
    async itemsNotUnderKey(keyId, limit) {
      return notUnder.all(keyId, limit).map(toPlaidItem)
    },
  }
}
