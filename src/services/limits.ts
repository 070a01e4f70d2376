import { limitSubject } from '../platform/client-address.ts'
import type { ServerConfig } from '../platform/config.ts'
import { AppError } from '../platform/errors.ts'
import type { ConcurrencyDecision, RateDecision, RateRule } from '../store/limits/types.ts'
import type { ServiceContext } from './context.ts'
import type { Principal } from './identity/keys.ts'

/** Per-key limits (docs/decisions/rate-limits.md); one place for REST and MCP. */
export const KEY_RULES: Record<Principal['tier'], RateRule> = {
  default: { limit: 60, periodMs: 60_000, burst: 100 },
  premium: { limit: 300, periodMs: 60_000, burst: 500 },
}
export const MAX_CONCURRENT = 10
/**
 * Open MCP event streams (GET /mcp, GET /mcp/sse) per key, a cap of their own: a stream stays open
 * for its session's life, so it cannot hold one of the ten slots of the key's requests, which the
 * session's tool calls take.
 */
export const MAX_MCP_STREAMS = 10
/** A lease outlives any request; a crashed node's slots come back after this. */
const LEASE_TTL_MS = 120_000
/** An open stream renews its lease this often, so it holds its slot for as long as it is open. */
const STREAM_RENEW_MS = LEASE_TTL_MS / 4

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

/**
 * The general per-IP limit: every request made without an API key (documents, discovery, OAuth,
 * sign-in, 404s, a key route refused for its credentials) takes a token from its address's
 * bucket; key-authenticated requests take only their key's. Built once per app from the config.
 */
export function addressRule(config: ServerConfig): RateRule {
  return { limit: config.ipRate.perMinute, periodMs: 60_000, burst: config.ipRate.burst }
}

/** What the X-RateLimit-* headers say about one limiter decision. */
export interface RateHeaders {
  limit: number
  remaining: number
  resetEpochS: number
}

function rateHeaders(rule: RateRule, d: RateDecision): RateHeaders {
  return {
    // Requests per minute (docs/decisions/rate-limits.md); a rule slower than one a minute
    // (provision-free 3/day, login 10/h) states its quota per its own period rather than a rounded 0.
    limit:
      rule.limit * 60_000 >= rule.periodMs ? Math.round((rule.limit * 60_000) / rule.periodMs) : rule.limit,
    remaining: d.remaining,
    resetEpochS: Math.ceil(d.resetAt / 1000),
  }
}

/** Of two limits a request passed, the one that refuses first: fewer left, else the later reset. */
export function tighter(a: RateHeaders, b: RateHeaders): RateHeaders {
  if (a.remaining !== b.remaining) return a.remaining < b.remaining ? a : b
  return a.resetEpochS >= b.resetEpochS ? a : b
}

function retryAfter(ms: number): number {
  return Math.max(1, Math.ceil(ms / 1000))
}

/** The detail of a RATE_LIMITED refusal (module-level functions: nothing allocated per request). */
type Refusal = (rule: RateRule, subject: string) => string
const keyRefusal: Refusal = (r) => `Rate limit of ${r.limit} requests per minute (burst ${r.burst}) exceeded`
const addressRefusal: Refusal = (r) =>
  `Rate limit of ${r.limit} requests per minute (burst ${r.burst}) per client address exceeded; requests with an API key have their own limit`
const operationRefusal: Refusal = (_r, subject) =>
  `Too many requests of this kind from ${subject}; try again later`

/** Takes a token from `bucket`; throws RATE_LIMITED (with the headers data attached) when empty. */
async function takeToken(
  ctx: ServiceContext,
  bucket: string,
  rule: RateRule,
  subject: string,
  refusal: Refusal,
  cost = 1,
): Promise<RateHeaders> {
  return decided(await ctx.limits.rate.take(bucket, rule, ctx.now(), cost), rule, subject, refusal)
}

/** A take's headers; throws RATE_LIMITED (with the headers data attached) when it was refused. */
function decided(d: RateDecision, rule: RateRule, subject: string, refusal: Refusal): RateHeaders {
  const headers = rateHeaders(rule, d)
  if (!d.allowed) {
    throw new AppError('RATE_LIMITED', refusal(rule, subject), {
      retryAfterSeconds: retryAfter(d.retryAfterMs),
      extra: { rate: headers },
    })
  }
  return headers
}

/**
 * Takes `cost` tokens (one per request, or per MCP tool call) for the key; throws RATE_LIMITED
 * (with headers data attached) when the bucket cannot give them.
 */
export function takeKeyToken(ctx: ServiceContext, p: Principal, cost = 1): Promise<RateHeaders> {
  return takeToken(ctx, `key:${p.keyId}`, KEY_RULES[p.tier], p.keyId, keyRefusal, cost)
}

/** Bucket names of the general per-IP limit start with this (then the address's subject). */
export const ADDRESS_BUCKET = 'ip:any:'

/**
 * What every per-address limit counts a client address under (platform/client-address.ts): IPv4
 * as is, IPv6 by its ERM3_IPV6_PREFIX network. The one way from an address to a bucket.
 */
export function addressSubject(config: ServerConfig, address: string | undefined): string {
  return limitSubject(address, config.ipv6Prefix)
}

/** Takes a token of the general per-IP limit (`rule` from `addressRule`) for client `address`. */
export function takeAddressToken(
  ctx: ServiceContext,
  rule: RateRule,
  address: string | undefined,
): Promise<RateHeaders> {
  const subject = addressSubject(ctx.config, address)
  return takeToken(ctx, ADDRESS_BUCKET + subject, rule, subject, addressRefusal)
}

/** A concurrency slot held by a request: give it back with `releaseKeySlot`, once. */
export interface KeySlot {
  key: string
  lease: string
  /** A stream's lease renewal (stopped by `releaseKeySlot`). */
  renewal?: ReturnType<typeof setInterval>
}

/** Takes one of the key's concurrency slots. */
export async function acquireKeySlot(ctx: ServiceContext, p: Principal): Promise<KeySlot> {
  const key = `key:${p.keyId}`
  return slotOf(key, await ctx.limits.concurrency.acquire(key, MAX_CONCURRENT, LEASE_TTL_MS, ctx.now()))
}

function slotOf(
  key: string,
  d: ConcurrencyDecision,
  what = `${MAX_CONCURRENT} concurrent requests`,
): KeySlot {
  if (!d.ok || d.leaseId === null) {
    throw new AppError('CONCURRENCY_LIMITED', `At most ${what} per key`, { retryAfterSeconds: 1 })
  }
  return { key, lease: d.leaseId }
}

/**
 * Takes one of the key's MCP stream slots (MAX_MCP_STREAMS, counted on every node alike) for an
 * MCP event stream, held until `releaseKeySlot`: its lease is renewed while it is open, however long.
 * A lease lost meanwhile (the limits backend was away past its TTL) is acquired again when a slot
 * is free; otherwise the stream runs on uncounted until it ends, and the loss is logged.
 */
export async function acquireStreamSlot(ctx: ServiceContext, p: Principal): Promise<KeySlot> {
  const key = `mcp:${p.keyId}`
  const c = ctx.limits.concurrency
  const slot = slotOf(
    key,
    await c.acquire(key, MAX_MCP_STREAMS, LEASE_TTL_MS, ctx.now()),
    `${MAX_MCP_STREAMS} open MCP event streams (GET /mcp, GET /mcp/sse)`,
  )
  const renew = async () => {
    if (await c.renew(key, slot.lease, LEASE_TTL_MS, ctx.now())) return
    const d = await c.acquire(key, MAX_MCP_STREAMS, LEASE_TTL_MS, ctx.now())
    if (d.ok && d.leaseId !== null) slot.lease = d.leaseId
    else ctx.log.warn({ key_id: p.keyId }, 'an open MCP stream lost its slot; it is no longer counted')
  }
  slot.renewal = setInterval(() => {
    renew().catch((e: Error) => ctx.log.warn({ err: e.message }, 'could not renew an MCP stream slot'))
  }, STREAM_RENEW_MS)
  slot.renewal.unref()
  return slot
}

export function releaseKeySlot(ctx: ServiceContext, slot: KeySlot): Promise<void> {
  if (slot.renewal) clearInterval(slot.renewal)
  return ctx.limits.concurrency.release(slot.key, slot.lease)
}

/**
 * Per-address limit of one unauthenticated operation for client `address`, on top of the general
 * one; the route reports these headers (the operation's own, stricter limit) instead of the
 * general ones.
 */
export function takeIpToken(
  ctx: ServiceContext,
  rule: Exclude<keyof typeof IP_RULES, 'loginEmail'>,
  address: string | undefined,
): Promise<RateHeaders> {
  const subject = addressSubject(ctx.config, address)
  return takeToken(ctx, `ip:${rule}:${subject}`, IP_RULES[rule], subject, operationRefusal)
}

/** Sign-in mails per recipient (a normalised e-mail address), whatever address asks for them. */
export function takeRecipientToken(ctx: ServiceContext, email: string): Promise<RateHeaders> {
  return takeToken(ctx, `ip:loginEmail:${email}`, IP_RULES.loginEmail, email, operationRefusal)
}
