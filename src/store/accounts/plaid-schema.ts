/**
 * Schema of linked Plaid Items, migration 6 of the account store. One row per Item:
 * Plaid's item_id (unique: one Item is linked once), the institution, the access token as
 * AES-256-GCM ciphertext plus the id of the key that sealed it (rotation), and the last Plaid error.
 */
import type { PlaidItemRecord } from './plaid-types.ts'

export function plaidTables(time: 'INTEGER' | 'BIGINT'): string[] {
  return [
    `CREATE TABLE plaid_items (
      id TEXT PRIMARY KEY,
      account_id TEXT NOT NULL REFERENCES accounts (id),
      item_id TEXT NOT NULL UNIQUE,
      institution_id TEXT,
      institution_name TEXT,
      token_ciphertext TEXT NOT NULL,
      token_key_id TEXT NOT NULL,
      created_at ${time} NOT NULL,
      last_error TEXT
    )`,
    'CREATE INDEX plaid_items_account ON plaid_items (account_id, created_at)',
  ]
}

/** The row as both dialects read it (BIGINT times arrive as strings from pg). */
export interface PlaidItemRow {
  id: string
  account_id: string
  item_id: string
  institution_id: string | null
  institution_name: string | null
  token_ciphertext: string
  token_key_id: string
  created_at: number
  last_error: string | null
}

export const PLAID_ITEM_COLUMNS =
  'id, account_id, item_id, institution_id, institution_name, token_ciphertext, token_key_id, created_at, last_error'

export const toPlaidItem = (r: PlaidItemRow): PlaidItemRecord => ({
  id: r.id,
  accountId: r.account_id,
  itemId: r.item_id,
  institutionId: r.institution_id,
  institutionName: r.institution_name,
  tokenCiphertext: r.token_ciphertext,
  tokenKeyId: r.token_key_id,
  createdAt: Number(r.created_at),
  lastError: r.last_error,
})

export const plaidItemValues = (i: PlaidItemRecord) => [
  i.id,
  i.accountId,
  i.itemId,
  i.institutionId,
  i.institutionName,
  i.tokenCiphertext,
  i.tokenKeyId,
  i.createdAt,
  i.lastError,
]
