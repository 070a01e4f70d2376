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

export function encryptSecret(webhookKey: string, subscriptionId: string, secret: string): string {
  const iv = randomBytes(12)
  const c = createCipheriv('aes-256-gcm', aesKey(webhookKey), iv)
  c.setAAD(Buffer.from(subscriptionId))
  const body = Buffer.concat([c.update(secret, 'utf8'), c.final()])
  return `${VERSION}:${Buffer.concat([iv, c.getAuthTag(), body]).toString('base64url')}`
}

export function decryptSecret(webhookKey: string, subscriptionId: string, stored: string): string {
  const [v, b64] = stored.split(':')
  if (v !== VERSION || !b64) throw new AppError('CONFIG_INVALID', 'unknown webhook secret encoding')
  const raw = Buffer.from(b64, 'base64url')
  const d = createDecipheriv('aes-256-gcm', aesKey(webhookKey), raw.subarray(0, 12))
  d.setAAD(Buffer.from(subscriptionId))
  d.setAuthTag(raw.subarray(12, 28))
  try {
    return Buffer.concat([d.update(raw.subarray(28)), d.final()]).toString('utf8')
  } catch {
    throw new AppError(
      'CONFIG_INVALID',
      'a webhook secret does not decrypt with ERM3_WEBHOOK_KEY (was the key changed? rotate the secret)',
    )
  }
}

/** The signature header value for `body` sent at `unixSeconds`. */
export function signatureHeader(secret: string, unixSeconds: number, body: string): string {
  const v1 = createHmac('sha256', secret).update(`${unixSeconds}.${body}`).digest('hex')
  return `t=${unixSeconds},v1=${v1}`
}
