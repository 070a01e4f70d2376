import { randomBytes } from 'node:crypto'

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz'

/**
 * Cryptographic bytes drawn in blocks: one `randomBytes` call per 4 KiB instead of one per id
 * (the draw dominated id generation on the metering path). Each byte is used once.
 */
const POOL_BYTES = 4096
let pool = Buffer.alloc(0)
let poolAt = 0

function randomByte(): number {
  if (poolAt >= pool.length) {
    pool = randomBytes(POOL_BYTES)
    poolAt = 0
  }
  return pool[poolAt++]
}

/** `n` characters of base62 from a cryptographic source (rejection sampling: no modulo bias). */
export function randomBase62(n: number): string {
  let out = ''
  while (out.length < n) {
    const b = randomByte()
    if (b < 248) out += BASE62[b % 62]
  }
  return out
}

/** Base62 of a non-negative integer, left-padded with '0' to `width`. */
export function toBase62(value: number, width: number): string {
  let s = ''
  let v = Math.floor(value)
  while (v > 0) {
    s = BASE62[v % 62] + s
    v = Math.floor(v / 62)
  }
  return s.padStart(width, '0')
}

/**
 * Prefixed, time-sortable id: `<prefix>_` + 8 base62 chars of epoch milliseconds (sorts by time
 * until the year 8000) + 14 random base62 chars (≈83 bits).
 */
export function newId(prefix: string, now: number = Date.now()): string {
  return `${prefix}_${toBase62(now, 8)}${randomBase62(14)}`
}

const processTag = randomBase62(6)
let sequence = 0

/**
 * Request ids on the hot path: `req_` + time (8) + a per-process random tag (6) + a counter, so
 * ids stay unique across nodes and sortable by time without a random draw per request.
 */
let prefixAt = -1
let prefix = ''

export function newRequestId(now: number = Date.now()): string {
  sequence = (sequence + 1) % 62 ** 6
  if (now !== prefixAt) {
    prefixAt = now
    prefix = `req_${toBase62(now, 8)}${processTag}`
  }
  return prefix + toBase62(sequence, 6)
}
