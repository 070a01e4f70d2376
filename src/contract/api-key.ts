import { crc32 } from 'node:zlib'
import { randomBase62, toBase62 } from '../platform/ids.ts'

/**
 * The public API key format (docs/decisions/keys-and-accounts.md):
 * `erm_{agent|user}_{live|test}_{32 base62}_{6 base62}`.
 * The last part is CRC32 of everything before its underscore, in base62, so clients and secret
 * scanners can validate a key offline and the server rejects typos before any database lookup.
 */
export type KeyKind = 'agent' | 'user'
export type KeyEnvironment = 'live' | 'test'

export interface ParsedKey {
  kind: KeyKind
  environment: KeyEnvironment
}

const KEY_RE = /^erm_(agent|user)_(live|test)_([0-9A-Za-z]{32})_([0-9A-Za-z]{6})$/

export function keyChecksum(body: string): string {
  return toBase62(crc32(body), 6)
}

export function generateApiKey(kind: KeyKind, environment: KeyEnvironment): string {
  const body = `erm_${kind}_${environment}_${randomBase62(32)}`
  return `${body}_${keyChecksum(body)}`
}

/**
 * A key whose random part is drawn from `bytes` (at least 48 uniformly random bytes, e.g. an
 * HMAC-SHA512): the same bytes give the same key, so a server can derive one instead of storing it.
 */
export function apiKeyFromBytes(kind: KeyKind, environment: KeyEnvironment, bytes: Uint8Array): string {
  let random = ''
  // Rejection sampling (as randomBase62): bytes ≥ 248 are skipped so every character is uniform.
  for (const b of bytes) {
    if (random.length === 32) break
    if (b < 248) random += BASE62_DIGITS[b % 62]
  }
  if (random.length < 32) throw new Error('apiKeyFromBytes: not enough bytes')
  const body = `erm_${kind}_${environment}_${random}`
  return `${body}_${keyChecksum(body)}`
}

const BASE62_DIGITS = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz'

/** Kind and environment of a well-formed key with a valid checksum, else null. */
export function parseApiKey(key: string): ParsedKey | null {
  const m = KEY_RE.exec(key)
  if (!m) return null
  const body = key.slice(0, key.length - 7)
  if (keyChecksum(body) !== m[4]) return null
  return { kind: m[1] as KeyKind, environment: m[2] as KeyEnvironment }
}

/** What may be shown of a key after creation: enough to recognise it, not to use it. */
export function keyDisplayPrefix(key: string): string {
  const parts = key.split('_')
  return `${parts.slice(0, 3).join('_')}_${(parts[3] ?? '').slice(0, 4)}…`
}
