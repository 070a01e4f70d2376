import { AppError } from '../platform/errors.ts'
import type { RateDecision, RateRule } from '../store/limits/types.ts'
import type { ServiceContext } from './context.ts'
import type { Principal } from './identity/keys.ts'

/** Per-key limits (DECISIONS.md "Rate limits"); one place for REST and MCP. */
export const KEY_RULES: Record<Principal['tier'], RateRule> = {
  default: { limit: 60, periodMs: 60_000, burst: 100 },
  premium: { limit: 300, periodMs: 60_000, burst: 500 },
}
export const MAX_CONCURRENT = 10
/** A lease outlives any request; a crashed node's slots come back after this. */
const LEASE_TTL_MS = 120_000

/** Per-IP rules for unauthenticated operations that create things or send mail. */
export const IP_RULES = {
  provisionFree: { limit: 3, periodMs: 86_400_000, burst: 3 },
  login: { limit: 10, periodMs: 3_600_000, burst: 10 },
  loginEmail: { limit: 5, periodMs: 3_600_000, burst: 5 },
  oauthRegister: { limit: 30, periodMs: 3_600_000, burst: 30 },
  // Token exchange, refresh and revocation (public clients, no key to limit by): generous for
  // agents behind one address (an hourly refresh each), a wall for a flood.
  oauthToken: { limit: 600, periodMs: 3_600_000, burst: 60 },
} as const satisfies Record<string, RateRule>

export interface RateHeaders {
  limit: number
  remaining: number
  resetEpochS: number
}

export function rateHeaders(rule: RateRule, d: RateDecision): RateHeaders {
  return {
    limit: Math.round((rule.limit * 60_000) / rule.periodMs),
    remaining: d.remaining,
    resetEpochS: Math.ceil(d.resetAt / 1000),
  }
}

function retryAfter(ms: number): number {
  return Math.max(1, Math.ceil(ms / 1000))
}

/** Takes a token for the key; throws RATE_LIMITED (with headers data attached) when empty. */
export async function takeKeyToken(ctx: ServiceContext, p: Principal): Promise<RateHeaders> {
  const rule = KEY_RULES[p.tier]
  const d = await ctx.limits.rate.take(`key:${p.keyId}`, rule, ctx.now())
  const headers = rateHeaders(rule, d)
  if (!d.allowed) {
    throw new AppError(
      'RATE_LIMITED',
      `Rate limit of ${rule.limit} requests per minute (burst ${rule.burst}) exceeded`,
      {
        retryAfterSeconds: retryAfter(d.retryAfterMs),
        extra: { rate: headers },
      },
    )
  }
  return headers
}

/** A concurrency slot held by a request: give it back with `releaseKeySlot`, once. */
export interface KeySlot {
  key: string
  lease: string
}

/** Takes one of the key's concurrency slots. */
export async function acquireKeySlot(ctx: ServiceContext, p: Principal): Promise<KeySlot> {
  const key = `key:${p.keyId}`
  const d = await ctx.limits.concurrency.acquire(key, MAX_CONCURRENT, LEASE_TTL_MS, ctx.now())
  if (!d.ok || d.leaseId === null) {
    throw new AppError('CONCURRENCY_LIMITED', `At most ${MAX_CONCURRENT} concurrent requests per key`, {
      retryAfterSeconds: 1,
    })
  }
  return { key, lease: d.leaseId }
}

export function releaseKeySlot(ctx: ServiceContext, slot: KeySlot): Promise<void> {
  return ctx.limits.concurrency.release(slot.key, slot.lease)
}

/** Per-IP (or per-address) limit of an unauthenticated operation. */
export async function takeIpToken(
  ctx: ServiceContext,
  rule: keyof typeof IP_RULES,
  subject: string,
): Promise<void> {
  const r = IP_RULES[rule]
  const d = await ctx.limits.rate.take(`ip:${rule}:${subject}`, r, ctx.now())
  if (!d.allowed) {
    throw new AppError('RATE_LIMITED', `Too many requests of this kind from ${subject}; try again later`, {
      retryAfterSeconds: retryAfter(d.retryAfterMs),
      extra: { rate: rateHeaders(r, d) },
    })
  }
}
