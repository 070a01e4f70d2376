/**
 * Operator re-keying (`erm3 plaid rekey`): after a new key was put first in ERM3_PLAID_TOKEN_KEYS,
 * re-encrypt every stored access token still sealed under an older key, so the old key can be
 * dropped without waiting for each item to be read. A token whose key is no longer listed stops
 * the run with the key id to add back.
 */
import type { ServiceContext } from '../context.ts'
import { plaidConfig } from './client.ts'
import { openToken } from './token-crypto.ts'

const BATCH = 200

export interface RekeyReport {
  currentKeyId: string
  rekeyed: number
}

export async function rekeyAllTokens(ctx: Pick<ServiceContext, 'accounts' | 'config'>): Promise<RekeyReport> {
  const keys = plaidConfig(ctx).tokenKeys
  const current = keys[0]?.id ?? ''
  const store = ctx.accounts.plaid()
  let rekeyed = 0
  for (;;) {
    const batch = await store.itemsNotUnderKey(current, BATCH)
    if (batch.length === 0) return { currentKeyId: current, rekeyed }
    for (const item of batch) {
      const sealed = { ciphertext: item.tokenCiphertext, keyId: item.tokenKeyId }
      const { resealed } = openToken(keys, item.id, sealed)
      // A concurrent reader may have re-keyed it first: either way it is now under the current key.
      if (resealed && (await store.rekeyToken(item.id, item.tokenKeyId, resealed.ciphertext, resealed.keyId)))
        rekeyed++
    }
  }
}
