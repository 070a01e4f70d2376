/** Linked Plaid Items on the PostgreSQL account store's pool (plaid-types.ts). */
import type pg from 'pg'
import { PLAID_ITEM_COLUMNS, type PlaidItemRow, plaidItemValues, toPlaidItem } from './plaid-schema.ts'
import type { PlaidStore } from './plaid-types.ts'

export function createPostgresPlaidStore(pool: pg.Pool): PlaidStore {
  return {
    async insertItem(item) {
      const r = await pool.query(
        `INSERT INTO plaid_items (${PLAID_ITEM_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
         ON CONFLICT (item_id) DO NOTHING`,
        plaidItemValues(item),
      )
      return r.rowCount === 1
    },
    async listItems(accountId) {
      const r = await pool.query<PlaidItemRow>(
        `SELECT ${PLAID_ITEM_COLUMNS} FROM plaid_items WHERE account_id = $1 ORDER BY created_at, id`,
        [accountId],
      )
      return r.rows.map(toPlaidItem)
    },
    async getItem(accountId, id) {
      const r = await pool.query<PlaidItemRow>(
        `SELECT ${PLAID_ITEM_COLUMNS} FROM plaid_items WHERE account_id = $1 AND id = $2`,
        [accountId, id],
      )
      return r.rows[0] ? toPlaidItem(r.rows[0]) : null
    },
    async deleteItem(accountId, id) {
      const r = await pool.query('DELETE FROM plaid_items WHERE account_id = $1 AND id = $2', [accountId, id])
      return r.rowCount === 1
    },
    async rekeyToken(id, fromKeyId, ciphertext, keyId) {
      const r = await pool.query(
        'UPDATE plaid_items SET token_ciphertext = $1, token_key_id = $2 WHERE id = $3 AND token_key_id = $4',
        [ciphertext, keyId, id, fromKeyId],
      )
      return r.rowCount === 1
    },
    async setLastError(id, lastError) {
      await pool.query('UPDATE plaid_items SET last_error = $1 WHERE id = $2', [lastError, id])
    },
    async itemsNotUnderKey(keyId, limit) {
      const r = await pool.query<PlaidItemRow>(
        `SELECT ${PLAID_ITEM_COLUMNS} FROM plaid_items WHERE token_key_id <> $1 ORDER BY id LIMIT $2`,
        [keyId, limit],
      )
      return r.rows.map(toPlaidItem)
    },
  }
}
