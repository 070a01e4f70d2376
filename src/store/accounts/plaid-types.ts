/**
 * Linked brokerage connections (Plaid Items) of an account, migration 6 (plaid-schema.ts). The
 * Plaid access token is stored only as AES-256-GCM ciphertext, with the id of the key that sealed
 * it (services/plaid/token-crypto.ts); this store never sees a plaintext token.
 *
 * Every read and delete is scoped to the owning account: another account's item is "not found".
 * Times are epoch milliseconds.
 */

export interface PlaidItemRecord {
  /** erm3's id (`pli_…`), the one the API shows. */
  id: string
  accountId: string
  /** Plaid's `item_id`. */
  itemId: string
  institutionId: string | null
  institutionName: string | null
  tokenCiphertext: string
  tokenKeyId: string
  createdAt: number
  /** The last Plaid error code of this item (e.g. ITEM_LOGIN_REQUIRED), cleared by a success. */
  lastError: string | null
}

export interface PlaidStore {
  /** Stores a new item; false when that Plaid item is linked already (same item_id). */
  insertItem(item: PlaidItemRecord): Promise<boolean>
  /** The account's items, oldest first. */
  listItems(accountId: string): Promise<PlaidItemRecord[]>
  getItem(accountId: string, id: string): Promise<PlaidItemRecord | null>
  /** Deletes the item and its token; false when the account has no such item. */
  deleteItem(accountId: string, id: string): Promise<boolean>
  /**
   * Replaces the token ciphertext (re-encryption under the current key) only if the row still holds
   * `fromKeyId`, so two nodes re-encrypting at once write once; true when this call wrote.
   */
  rekeyToken(id: string, fromKeyId: string, ciphertext: string, keyId: string): Promise<boolean>
  setLastError(id: string, lastError: string | null): Promise<void>
  /** Items of every account whose token is sealed under another key than `keyId` (operator re-keying), at most `limit`. */
  itemsNotUnderKey(keyId: string, limit: number): Promise<PlaidItemRecord[]>
}
