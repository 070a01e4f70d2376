/**
 * Shared request-limiting state: token buckets (GCRA), concurrency leases and the response
 * cache. One interface each, an in-process and a Redis implementation, one conformance suite
 * (test/store/limits-conformance.ts). Times are epoch milliseconds passed in by the caller, so the
 * suites can drive a clock; Redis scripts take `now` as an argument for the same reason.
 */

export interface RateRule {
  /** Sustained rate: `limit` requests per `periodMs`. */
  limit: number
  periodMs: number
  /** Bucket capacity (requests allowed at once from a full bucket). */
  burst: number
}

export interface RateDecision {
  allowed: boolean
  /** Whole requests left in the bucket after this decision (≥ 0). */
  remaining: number
  /** Epoch ms at which the bucket is full again. */
  resetAt: number
  /** When refused: ms until one request would be allowed; 0 when allowed. */
  retryAfterMs: number
}

export interface RateLimiter {
  /** Takes `cost` (default 1) tokens from bucket `key` under `rule` at time `now`. */
  take(key: string, rule: RateRule, now: number, cost?: number): Promise<RateDecision>
}

export interface ConcurrencyDecision {
  ok: boolean
  /** Lease to pass to `release` (present when ok). */
  leaseId: string | null
  /** Leases held after this decision. */
  active: number
}

export interface ConcurrencyLimiter {
  /**
   * Takes one of `max` slots for `key`. A lease not released within `ttlMs` expires (a crashed
   * node never pins a slot forever).
   */
  acquire(key: string, max: number, ttlMs: number, now: number): Promise<ConcurrencyDecision>
  release(key: string, leaseId: string): Promise<void>
  /**
   * Extends a lease still held to expire `ttlMs` after `now`, for a holder that outlives one TTL
   * (an open event stream). False, changing nothing, when the lease is no longer held (released,
   * or expired at or before `now`): the slot may have been given to another.
   */
  renew(key: string, leaseId: string, ttlMs: number, now: number): Promise<boolean>
}

export interface ResponseCache {
  get(key: string): Promise<Buffer | null>
  /** Stores `value` for `ttlMs`. Implementations may evict early under memory pressure. */
  set(key: string, value: Buffer, ttlMs: number): Promise<void>
}

export interface LimitsBackend {
  readonly backend: 'memory' | 'redis'
  readonly rate: RateLimiter
  readonly concurrency: ConcurrencyLimiter
  readonly cache: ResponseCache
  /** ok=false when the backend is unreachable; `degraded` when a fallback is serving instead. */
  health(): Promise<{ ok: boolean; degraded: boolean; detail: string }>
  close(): Promise<void>
}
