/**
 * Shared limits with a local safety net. docs/decisions/rate-limits.md: backends never fail open
 * silently — when the primary (Redis) fails, each operation is served by the local in-process backend, the
 * node says so in /health, and the primary is probed again after a short, growing back-off.
 * While degraded each node limits on its own, so a key may get up to N× its rate across N
 * nodes; that is the price of staying up, and /health makes it visible.
 */
import type { ConcurrencyDecision, LimitsBackend, RateDecision, RateRule } from './types.ts'

const MIN_BACKOFF_MS = 500
const MAX_BACKOFF_MS = 10_000
/** Marks lease ids handed out by the local backend, so a release goes back to the right place. */
const LOCAL_LEASE = 'local:'
const DEGRADED = { ok: true, degraded: true, detail: 'redis unreachable: using local limits' } as const

export interface FallbackLimits extends LimitsBackend {
  /** True while the local backend is serving. */
  readonly degraded: boolean
}

export function createFallbackLimits(
  primary: LimitsBackend,
  local: LimitsBackend,
  log: (msg: string) => void = () => {},
): FallbackLimits {
  const sw = failover(primary, local, log)
  const { run, waiting } = sw
  return {
    get backend() {
      return primary.backend
    },
    get degraded() {
      return sw.state.degraded
    },
    rate: {
      take: (key: string, rule: RateRule, now: number, cost?: number): Promise<RateDecision> =>
        run((b) => b.rate.take(key, rule, now, cost)),
    },
    concurrency: fallbackConcurrency(primary, local, sw),
    cache: {
      get: (key: string) => run((b) => b.cache.get(key)),
      set: (key: string, value: Buffer, ttlMs: number) => run((b) => b.cache.set(key, value, ttlMs)),
    },
    async health() {
      if (waiting()) return DEGRADED
      const probe = sw.state.degraded
      const h = await primary
        .health()
        .catch((e: unknown) => ({ ok: false, degraded: false, detail: String(e) }))
      if (h.ok) {
        if (sw.state.degraded) sw.recover()
        return h
      }
      sw.fail(new Error(h.detail), probe)
      return DEGRADED
    },
    async close() {
      await Promise.all([primary.close(), local.close()])
    },
  }
}

type Failover = ReturnType<typeof failover>

/**
 * The switch between the primary and the local backend: `run` serves an operation from the
 * primary unless it is known down (then local, until the back-off ends and one call probes it).
 */
function failover(primary: LimitsBackend, local: LimitsBackend, log: (msg: string) => void) {
  const state = {
    degraded: false,
    retryAt: 0,
    backoff: MIN_BACKOFF_MS,
    /** One probe at a time: while it is in flight everyone else stays local. */
    probing: false,
  }

  /** `probe`: the failed call was the one probe after a back-off (only those grow the back-off). */
  const fail = (e: unknown, probe: boolean) => {
    const msg = e instanceof Error ? e.message : String(e)
    if (!state.degraded) log(`limits: primary failed (${msg}); using local limits`)
    // Calls already in flight when the outage began fail too: same outage, same back-off window.
    else if (!probe) return
    else state.backoff = Math.min(2 * state.backoff, MAX_BACKOFF_MS)
    state.degraded = true
    state.retryAt = Date.now() + state.backoff
  }
  const recover = () => {
    state.degraded = false
    state.backoff = MIN_BACKOFF_MS
    log('limits: primary reachable again; using shared limits')
  }
  const waiting = () => state.degraded && (state.probing || Date.now() < state.retryAt)

  async function run<T>(op: (b: LimitsBackend) => Promise<T>): Promise<T> {
    if (waiting()) return op(local)
    const probe = state.degraded
    if (probe) state.probing = true
    try {
      const r = await op(primary)
      if (probe) recover()
      return r
    } catch (e) {
      // A malformed rule is the caller's bug, not an outage: the local backend would refuse it too.
      if (e instanceof RangeError) throw e
      fail(e, probe)
      return op(local)
    } finally {
      if (probe) state.probing = false
    }
  }
  return { state, fail, recover, waiting, run }
}

/**
 * Concurrency leases: a lease handed out by the local backend is marked (LOCAL_LEASE) so that its
 * renew and release go back to the local backend; a shared lease is not renewed while the primary
 * is away (the holder acquires again) and, if it cannot be released, expires on its TTL.
 */
function fallbackConcurrency(
  primary: LimitsBackend,
  local: LimitsBackend,
  { run, waiting, fail }: Failover,
): LimitsBackend['concurrency'] {
  return {
    async acquire(key: string, max: number, ttlMs: number, now: number): Promise<ConcurrencyDecision> {
      let usedLocal = false
      const d = await run((b) => {
        usedLocal = b === local
        return b.concurrency.acquire(key, max, ttlMs, now)
      })
      return usedLocal && d.leaseId ? { ...d, leaseId: LOCAL_LEASE + d.leaseId } : d
    },
    async renew(key: string, leaseId: string, ttlMs: number, now: number): Promise<boolean> {
      if (leaseId.startsWith(LOCAL_LEASE))
        return local.concurrency.renew(key, leaseId.slice(LOCAL_LEASE.length), ttlMs, now)
      // A shared lease cannot be renewed while the primary is away: the holder acquires again.
      if (waiting()) return false
      try {
        return await primary.concurrency.renew(key, leaseId, ttlMs, now)
      } catch (e) {
        fail(e, false)
        return false
      }
    },
    async release(key: string, leaseId: string): Promise<void> {
      if (leaseId.startsWith(LOCAL_LEASE))
        return local.concurrency.release(key, leaseId.slice(LOCAL_LEASE.length))
      // A shared lease we cannot return now expires on its TTL; don't stall on a primary known down.
      if (waiting()) return
      try {
        await primary.concurrency.release(key, leaseId)
      } catch (e) {
        fail(e, false)
      }
    },
  }
}
