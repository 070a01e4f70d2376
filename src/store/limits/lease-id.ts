import { newId } from '../../platform/ids.ts'

/**
 * Lease ids: unique across nodes and restarts (a random, time-stamped prefix per generator)
 * and cheap per lease (a counter) — a fresh crypto-random id per acquire was the limiter's
 * main cost in bench/limits.ts. Leases are internal handles, never shown to clients, so they
 * need uniqueness, not secrecy.
 */
export function leaseIdGenerator(): () => string {
  const prefix = newId('lse')
  let n = 0
  return () => `${prefix}.${(++n).toString(36)}`
}
