/**
 * Webhook secrets and signatures. A subscription's signing secret is shown once and stored only
 * encrypted: AES-256-GCM under a key derived from ERM3_WEBHOOK_KEY, with the subscription id as
 * associated data (a ciphertext copied onto another row does not decrypt). Deliveries carry
 * `X-Erm3-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, t + "." + body)>`.
 */
import { createCipheriv, createDecipheriv, createHash, createHmac, randomBytes } from 'node:crypto'
import { AppError } from '../../platform/errors.ts'
import { randomSecret } from '../oauth/common.ts'

const VERSION = 'v1'

export function generateSecret(): string {
  return randomSecret('whsec_')
}

function aesKey(webhookKey: string): Buffer {
  return createHash('sha256').update(`erm3 webhook secrets\0${webhookKey}`).digest()
}

/**
 * AES-256-GCM under a raw 32-byte key, with `aad` bound as associated data (a ciphertext copied
 * onto another row does not open). Layout: base64url(12-byte IV | 16-byte tag | ciphertext).
 * Shared by webhook secrets and Plaid access tokens (services/plaid/token-crypto.ts).
 */
export function aesGcmSeal(key: Buffer, aad: string, plaintext: string): string {
  const iv = randomBytes(12)
  const c = createCipheriv('aes-256-gcm', key, iv)
  c.setAAD(Buffer.from(aad))
  const body = Buffer.concat([c.update(plaintext, 'utf8'), c.final()])
  return Buffer.concat([iv, c.getAuthTag(), body]).toString('base64url')
}

/** The plaintext of an `aesGcmSeal` output, or null when key, aad or bytes do not match. */
export function aesGcmOpen(key: Buffer, aad: string, sealed: string): string | null {
  const raw = Buffer.from(sealed, 'base64url')
  if (raw.length < 28) return null
  try {
    const d = createDecipheriv('aes-256-gcm', key, raw.subarray(0, 12))
    d.setAAD(Buffer.from(aad))
    d.setAuthTag(raw.subarray(12, 28))
    return Buffer.concat([d.update(raw.subarray(28)), d.final()]).toString('utf8')
  } catch {
    return null
  }
}

export function encryptSecret(webhookKey: string, subscriptionId: string, secret: string): string {
  return `${VERSION}:${aesGcmSeal(aesKey(webhookKey), subscriptionId, secret)}`
}

export function decryptSecret(webhookKey: string, subscriptionId: string, stored: string): string {
  const [v, b64] = stored.split(':')
  if (v !== VERSION || !b64) throw new AppError('CONFIG_INVALID', 'unknown webhook secret encoding')
  const out = aesGcmOpen(aesKey(webhookKey), subscriptionId, b64)
  if (out === null)
    throw new AppError(
      'CONFIG_INVALID',
      'a webhook secret does not decrypt with ERM3_WEBHOOK_KEY (was the key changed? rotate the secret)',
    )
  return out
}

/** The signature header value for `body` sent at `unixSeconds`. */
export function signatureHeader(secret: string, unixSeconds: number, body: string): string {
  const v1 = createHmac('sha256', secret).update(`${unixSeconds}.${body}`).digest('hex')
  return `t=${unixSeconds},v1=${v1}`
}
