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
import type { Environment } from '../../store/accounts/types.ts'
import type { ServiceContext } from '../context.ts'
import type { Principal } from '../identity/keys.ts'

const FLUSH_MS = 2000
const MAX_PENDING = 10_000
/** Counters kept across failed flushes (database down); past this, a failed batch is dropped (logged). */
const MAX_RETAINED = 100_000

/** Counters by day, then account, then capability: each level keyed by a string the caller already holds. */
type Pending = Map<number, Map<string, Map<string, { live?: UsageDelta; test?: UsageDelta }>>>

class UsageCounter {
  private pending: Pending = new Map()
  private size = 0
  private timer: NodeJS.Timeout | null = null
  private flushing: Promise<void> | null = null

  constructor(private readonly ctx: Pick<ServiceContext, 'accounts' | 'log'>) {}

  record(p: Principal, capabilityId: string, day: number, costMicros: number, cacheHit: boolean): void {
    const d = this.slot(day, p.accountId, capabilityId, p.environment)
    d.requests++
    if (cacheHit) d.cacheHits++
    d.costMicros += costMicros
  }

  /**
   * The counter of (day, account, capability, environment), created at zero when new. Nested maps
   * keyed by strings the caller already holds (the principal's account id, the capability id): no
   * key is built per call, and each lookup hashes a string whose hash V8 has cached.
   */
  private slot(day: number, accountId: string, capability: string, environment: Environment): UsageDelta {
    let byAccount = this.pending.get(day)
    if (!byAccount) {
      byAccount = new Map()
      this.pending.set(day, byAccount)
    }
    let byCap = byAccount.get(accountId)
    if (!byCap) {
      byCap = new Map()
      byAccount.set(accountId, byCap)
    }
    let envs = byCap.get(capability)
    if (!envs) {
      envs = {}
      byCap.set(capability, envs)
    }
    const d = envs[environment]
    if (d) return d
    const fresh = { accountId, day, capability, environment, requests: 0, cacheHits: 0, costMicros: 0 }
    envs[environment] = fresh
    if (++this.size >= MAX_PENDING) setImmediate(() => void this.flush())
    else if (!this.timer) {
      this.timer = setTimeout(() => void this.flush(), FLUSH_MS)
      this.timer.unref()
    }
    return fresh
  }

  private drain(): UsageDelta[] {
    const out: UsageDelta[] = []
    for (const byAccount of this.pending.values())
      for (const byCap of byAccount.values())
        for (const envs of byCap.values()) {
          if (envs.live) out.push(envs.live)
          if (envs.test) out.push(envs.test)
        }
    this.pending = new Map()
    this.size = 0
    return out
  }

  async flush(): Promise<void> {
    if (this.timer) clearTimeout(this.timer)
    this.timer = null
    // One write at a time; a flush asked for meanwhile writes what arrived after it.
    while (this.flushing) await this.flushing
    if (this.size === 0) return
    const batch = this.drain()
    this.flushing = this.ctx.accounts
      .selfService()
      .addUsage(batch)
      .catch((e: Error) => {
        this.ctx.log.warn({ err: e.message, counters: batch.length }, 'could not record usage counters')
        // Keep the counts for the next flush (bounded: a long outage drops what is over the bound).
        if (this.size < MAX_RETAINED)
          for (const d of batch) {
            const to = this.slot(d.day, d.accountId, d.capability, d.environment)
            to.requests += d.requests
            to.cacheHits += d.cacheHits
            to.costMicros += d.costMicros
          }
        if (!this.timer && this.size > 0) {
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
