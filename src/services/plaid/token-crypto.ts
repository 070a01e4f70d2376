/**
 * Plaid access tokens at rest: AES-256-GCM (webhooks/crypto.ts) under the current key of
 * ERM3_PLAID_TOKEN_KEYS, with the item's erm3 id as associated data (a ciphertext copied onto
 * another row does not open). Each row records the id of the key that sealed it, so after a
 * rotation (a new key put first, the old one kept after it) old rows still open; they are
 * re-sealed under the current key the next time they are read (`openToken` says so).
 */
import type { PlaidTokenKey } from '../../platform/config.ts'
import { AppError } from '../../platform/errors.ts'
import { aesGcmOpen, aesGcmSeal } from '../webhooks/crypto.ts'

export interface SealedToken {
  ciphertext: string
  keyId: string
}

export function sealToken(keys: readonly PlaidTokenKey[], itemId: string, token: string): SealedToken {
  const current = keys[0]
  if (!current) throw new AppError('CONFIG_INVALID', 'ERM3_PLAID_TOKEN_KEYS holds no key')
  return { ciphertext: aesGcmSeal(current.key, itemId, token), keyId: current.id }
}

/** The plaintext token, and the re-sealed form when it was sealed under an older key. */
export function openToken(
  keys: readonly PlaidTokenKey[],
  itemId: string,
  sealed: SealedToken,
): { token: string; resealed: SealedToken | null } {
  const key = keys.find((k) => k.id === sealed.keyId)
  if (!key)
    throw new AppError(
      'UNAVAILABLE',
      `A linked brokerage token was encrypted with key id "${sealed.keyId}", which ERM3_PLAID_TOKEN_KEYS no longer lists: the operator must add it back (after the current key)`,
    )
  const token = aesGcmOpen(key.key, itemId, sealed.ciphertext)
  if (token === null)
    throw new AppError(
      'UNAVAILABLE',
      `A linked brokerage token does not decrypt with key id "${sealed.keyId}" of ERM3_PLAID_TOKEN_KEYS (was the key changed?)`,
    )
  const resealed = key === keys[0] ? null : sealToken(keys, itemId, token)
  return { token, resealed }
}
