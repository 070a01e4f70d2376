/**
 * Per-(account, UTC day, capability, environment) usage counters: requests, cache hits and cost of
 * every metered call, including the free ones (cache HITs, 304s) that write no ledger row.
 *
 * The hot path only adds to an in-memory map (one string key, a few additions); the map is written
 * as one upsert batch every FLUSH_MS (or when it holds MAX_PENDING counters) and when the app
 * closes. So the counters are at most FLUSH_MS behind, and a kill -9 loses at most that window of
 * counts — the money itself is in the ledger, durably, before every response (meter.ts).
 */
import type { Capability } from '../../contract/pricing.ts'
import { dayOf, type UsageDelta } from '../../store/accounts/self-service-types.ts'
import type { ServiceContext } from '../context.ts'
import type { Principal } from '../identity/keys.ts'

export const FLUSH_MS = 2000
const MAX_PENDING = 10_000
/** Counters kept across failed flushes (database down) before the oldest counts are dropped. */
const MAX_RETAINED = 100_000

class UsageCounter {
  private pending = new Map<string, UsageDelta>()
  private timer: NodeJS.Timeout | null = null
  private flushing: Promise<void> | null = null

  constructor(private readonly ctx: Pick<ServiceContext, 'accounts' | 'log'>) {}

  record(p: Principal, capabilityId: string, day: number, costMicros: number, cacheHit: boolean): void {
    const key = `${p.accountId}\n${day}\n${capabilityId}\n${p.environment}`
    const d = this.pending.get(key)
    if (d) {
      d.requests++
      if (cacheHit) d.cacheHits++
      d.costMicros += costMicros
    } else {
      this.pending.set(key, {
        accountId: p.accountId,
        day,
        capability: capabilityId,
        environment: p.environment,
        requests: 1,
        cacheHits: cacheHit ? 1 : 0,
        costMicros,
      })
      if (this.pending.size >= MAX_PENDING) void this.flush()
      else if (!this.timer) {
        this.timer = setTimeout(() => void this.flush(), FLUSH_MS)
        this.timer.unref()
      }
    }
  }

  async flush(): Promise<void> {
    if (this.timer) clearTimeout(this.timer)
    this.timer = null
    // One write at a time; a flush asked for meanwhile writes what arrived after it.
    while (this.flushing) await this.flushing
    if (this.pending.size === 0) return
    const batch = this.pending
    this.pending = new Map()
    this.flushing = this.ctx.accounts
      .selfService()
      .addUsage([...batch.values()])
      .catch((e: Error) => {
        this.ctx.log.warn({ err: e.message, counters: batch.size }, 'could not record usage counters')
        // Keep the counts for the next flush (bounded: a long outage drops the oldest).
        for (const [k, d] of batch) {
          if (this.pending.size >= MAX_RETAINED) break
          const now = this.pending.get(k)
          if (now) {
            now.requests += d.requests
            now.cacheHits += d.cacheHits
            now.costMicros += d.costMicros
          } else this.pending.set(k, d)
        }
        if (!this.timer) {
          this.timer = setTimeout(() => void this.flush(), FLUSH_MS)
          this.timer.unref()
        }
      })
      .finally(() => {
        this.flushing = null
      })
    await this.flushing
  }
}

const counters = new WeakMap<object, UsageCounter>()

function counterOf(ctx: Pick<ServiceContext, 'accounts' | 'log'>): UsageCounter {
  let c = counters.get(ctx.accounts)
  if (!c) {
    c = new UsageCounter(ctx)
    counters.set(ctx.accounts, c)
  }
  return c
}

/** Counts one metered call (served, HIT or 304) against its account's day and capability. */
export function recordUsage(
  ctx: ServiceContext,
  p: Principal,
  capability: Capability,
  costMicros: number,
  cacheHit: boolean,
): void {
  counterOf(ctx).record(p, capability.id, dayOf(ctx.now()), costMicros, cacheHit)
}

/** Writes the pending counters now (app close; tests and views that must see the latest). */
export function flushUsage(ctx: Pick<ServiceContext, 'accounts' | 'log'>): Promise<void> {
  return counters.get(ctx.accounts)?.flush() ?? Promise.resolve()
}
