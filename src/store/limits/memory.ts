/**
 * In-process limits: the embedded default (docs/architecture.md §2) and the local fallback when Redis is
 * down. State is plain Maps with no timers: idle entries are swept lazily when a map has doubled
 * since the last sweep, so memory stays proportional to the keys actually busy (amortised O(1)).
 */
import { ByteLru } from '../../platform/byte-lru.ts'
import { ownBytes } from '../../platform/utf8.ts'
import { gcraDecision, gcraParams, gcraStep, rescaleTat } from './gcra.ts'
import { leaseIdGenerator } from './lease-id.ts'
import type {
  ConcurrencyDecision,
  ConcurrencyLimiter,
  LimitsBackend,
  RateDecision,
  RateLimiter,
  RateRule,
  ResponseCache,
} from './types.ts'

export interface MemoryLimitsOptions {
  /** Upper bound on cached bytes (values plus keys); least recently used entries go first. */
  cacheMaxBytes?: number
  /** Clock for cache TTLs (the limiters take `now` per call); tests may drive it. */
  clock?: () => number
}

const DEFAULT_CACHE_BYTES = 64 * 1024 * 1024
/** Below this many entries a sweep is not worth the pass over the map. */
const MIN_SWEEP = 1024

/** Lazily swept map: `sweep` runs a full pass only when the size has doubled since the last one. */
function sweeper<V>(map: Map<string, V>, idle: (v: V) => boolean): () => void {
  let sweepAt = MIN_SWEEP
  return () => {
    if (map.size < sweepAt) return
    for (const [k, v] of map) if (idle(v)) map.delete(k)
    sweepAt = Math.max(MIN_SWEEP, 2 * map.size)
  }
}

interface Bucket {
  /** Theoretical arrival time in ticks of `scale` (see gcra.ts). */
  tat: number
  scale: number
}

export function createMemoryRateLimiter(): RateLimiter & { readonly size: number } {
  const buckets = new Map<string, Bucket>()
  let sweepNow = 0
  // A bucket whose TAT has passed is full: identical to having no entry at all.
  const sweep = sweeper(buckets, (b) => b.tat <= sweepNow * b.scale)
  function take(key: string, rule: RateRule, now: number, cost = 1): RateDecision {
    const p = gcraParams(rule, now, cost)
    sweepNow = Math.floor(now)
    sweep()
    const b = buckets.get(key)
    const stored = b ? rescaleTat(b.tat, b.scale, p.scale) : null
    const { allowed, tat } = gcraStep(stored, p)
    if (b) {
      b.tat = tat
      b.scale = p.scale
    } else buckets.set(key, { tat, scale: p.scale })
    return gcraDecision(allowed, tat, p)
  }
  return {
    get size() {
      return buckets.size
    },
    async take(key: string, rule: RateRule, now: number, cost = 1): Promise<RateDecision> {
      return take(key, rule, now, cost)
    },
  }
}

export function createMemoryConcurrencyLimiter(): ConcurrencyLimiter & { readonly size: number } {
  /** key → (lease id → expiry, epoch ms). Small maps: at most `max` live leases each. */
  const leases = new Map<string, Map<string, number>>()
  const nextLeaseId = leaseIdGenerator()
  let sweepNow = 0
  const sweep = sweeper(leases, (held) => {
    for (const exp of held.values()) if (exp > sweepNow) return false
    return true
  })
  /** The key's lease set with its expired leases dropped (undefined for an unknown key). */
  function live(key: string, now: number): Map<string, number> | undefined {
    const held = leases.get(key)
    if (held && held.size > 0) for (const [id, exp] of held) if (exp <= now) held.delete(id)
    return held
  }
  function acquire(key: string, max: number, ttlMs: number, now: number): ConcurrencyDecision {
    sweepNow = now
    sweep()
    let held = live(key, now)
    if (!held) {
      held = new Map()
      leases.set(key, held)
    }
    const active = held.size
    if (active >= max) return { ok: false, leaseId: null, active }
    const leaseId = nextLeaseId()
    held.set(leaseId, now + ttlMs)
    return { ok: true, leaseId, active: active + 1 }
  }
  return {
    get size() {
      return leases.size
    },
    async acquire(key: string, max: number, ttlMs: number, now: number): Promise<ConcurrencyDecision> {
      return acquire(key, max, ttlMs, now)
    },
    async renew(key: string, leaseId: string, ttlMs: number, now: number): Promise<boolean> {
      const held = live(key, now)
      if (!held?.has(leaseId)) return false
      held.set(leaseId, now + ttlMs)
      return true
    },
    async release(key: string, leaseId: string): Promise<void> {
      // An emptied entry stays for the key's next request (a busy key would otherwise allocate one
      // per request); the sweep drops it once idle.
      leases.get(key)?.delete(leaseId)
    },
  }
}

interface CacheEntry {
  value: Buffer
  expiresAt: number
}

export function createMemoryCache(
  opts: MemoryLimitsOptions = {},
): ResponseCache & { readonly bytes: number } {
  const clock = opts.clock ?? Date.now
  const entries = new ByteLru<CacheEntry>(
    opts.cacheMaxBytes ?? DEFAULT_CACHE_BYTES,
    (key, e) => e.value.byteLength + key.length,
  )
  return {
    get bytes() {
      return entries.bytes
    },
    /** The stored Buffer itself, not a copy (a hit costs no allocation): callers must not mutate it. */
    async get(key: string): Promise<Buffer | null> {
      const e = entries.get(key)
      if (!e) return null
      if (e.expiresAt > clock()) return e.value
      entries.delete(key)
      return null
    },
    async set(key: string, value: Buffer, ttlMs: number): Promise<void> {
      if (ttlMs <= 0) entries.delete(key)
      else entries.set(key, { value: ownBytes(value), expiresAt: clock() + ttlMs })
    },
  }
}

export function createMemoryLimits(opts: MemoryLimitsOptions = {}): LimitsBackend {
  return {
    backend: 'memory',
    rate: createMemoryRateLimiter(),
    concurrency: createMemoryConcurrencyLimiter(),
    cache: createMemoryCache(opts),
    async health() {
      return { ok: true, degraded: false, detail: 'in-process limits' }
    },
    async close() {},
  }
}
