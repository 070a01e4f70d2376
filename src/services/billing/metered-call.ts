import { hash } from 'node:crypto'
import type { Capability } from '../../contract/pricing.ts'
import type { TabularFormat } from '../../contract/table.ts'
import type { PaidRequest } from '../../store/accounts/types.ts'
import type { AgentMeta, CacheStatus } from '../agent-meta.ts'
import type { ServiceContext } from '../context.ts'
import type { Principal } from '../identity/keys.ts'
import { beginMetered, releaseMetered, settleAmount, settleMetered } from './meter.ts'
import { recordUsage } from './usage.ts'

/** A response as served and cached: the body in its final encoding, without `_agent`. */
export interface Representation {
  etag: string
  format: TabularFormat
  /** The encoded body: JSON text (UTF-8) or the Parquet/CSV bytes. */
  data: Buffer
  filename: string | null
  dataAsOf: string
  lineage: Record<string, string>
  confidence: AgentMeta['confidence']
}

export type MeteredOutcome =
  | {
      kind: 'served'
      rep: Representation
      /** What the call costs (0 for a HIT): charged by `delivery.delivered`. */
      costMicros: number
      cacheStatus: CacheStatus
      delivery: Delivery
    }
  | { kind: 'not_modified'; etag: string; lineage: Record<string, string> }

/** Cached responses live until the data changes (the key holds data_as_of); a day bounds memory. */
export const CACHE_TTL_MS = 24 * 3600_000

/**
 * Cache entry framing: u32 length of a small JSON header (everything but the body), the header,
 * then the body bytes as they are — a megabyte body is neither escaped into JSON nor base64'd.
 */
function encodeRepresentation(rep: Representation): Buffer {
  const { data, ...head } = rep
  const h = Buffer.from(JSON.stringify(head), 'utf8')
  const out = Buffer.allocUnsafe(4 + h.length + data.length)
  out.writeUInt32BE(h.length, 0)
  h.copy(out, 4)
  data.copy(out, 4 + h.length)
  return out
}

function decodeRepresentation(buf: Buffer): Representation {
  const n = buf.readUInt32BE(0)
  const head = JSON.parse(buf.toString('utf8', 4, 4 + n)) as Omit<Representation, 'data'>
  return { ...head, data: buf.subarray(4 + n) }
}

/** Same account, environment, operation, canonical input, data_as_of and format → same entry. */
export function responseCacheKey(p: Principal, parts: readonly string[]): string {
  // One-shot `hash` (no Hash object): the same digest at less than half the cost per call.
  return `resp:${hash('sha256', [p.accountId, p.environment, ...parts].join('\n'), 'base64url')}`
}

export function etagOf(bytes: Buffer | string): string {
  return `W/"${hash('sha256', bytes, 'base64url').slice(0, 27)}"`
}

function etagMatches(ifNoneMatch: string | null, etag: string): boolean {
  if (!ifNoneMatch) return false
  const bare = etag.replace(/^W\//, '')
  return (
    ifNoneMatch.trim() === '*' || ifNoneMatch.split(',').some((t) => t.trim().replace(/^W\//, '') === bare)
  )
}

/**
 * A BYPASS answer to what this process wrote moments ago for the same key has the same bytes:
 * rewriting them would only copy and send the body again (a Redis SET of the whole body, per
 * no-cache request). Such a rewrite is skipped for REWRITE_AFTER_MS; a MISS always writes (the
 * cache lacked the entry). Keys remembered: at most WRITTEN_MAX (then forgotten all at once).
 */
const REWRITE_AFTER_MS = 60_000
const WRITTEN_MAX = 10_000
const written = new WeakMap<ServiceContext['limits']['cache'], Map<string, { etag: string; at: number }>>()

function recentlyWritten(ctx: ServiceContext, key: string, rep: Representation): boolean {
  const w = written.get(ctx.limits.cache)?.get(key)
  return w !== undefined && w.etag === rep.etag && performance.now() - w.at < REWRITE_AFTER_MS
}

function rememberWritten(ctx: ServiceContext, key: string, rep: Representation): void {
  let w = written.get(ctx.limits.cache)
  if (!w) {
    w = new Map()
    written.set(ctx.limits.cache, w)
  }
  if (w.size >= WRITTEN_MAX) w.clear()
  w.set(key, { etag: rep.etag, at: performance.now() })
}

/** Representations produced in this turn whose cache write has not run yet, per cache. */
const unwritten = new WeakMap<ServiceContext['limits']['cache'], Map<string, Representation>>()

/**
 * Caches a served representation once the response has left: the framing copy (a fresh buffer as
 * large as the body) and the backend write are off the request's path. Until the write has run,
 * the same process answers the key from memory, so a request right after this one is a HIT all the
 * same; another node may miss it for that moment, which only costs that node a computation.
 */
function cacheAfterSend(ctx: ServiceContext, key: string, rep: Representation, bypass: boolean): void {
  if (bypass && recentlyWritten(ctx, key, rep)) return
  const cache = ctx.limits.cache
  let pending = unwritten.get(cache)
  if (!pending) {
    pending = new Map()
    unwritten.set(cache, pending)
  }
  pending.set(key, rep)
  setImmediate(() => {
    cache
      .set(key, encodeRepresentation(rep), CACHE_TTL_MS)
      .then(() => rememberWritten(ctx, key, rep))
      .catch((err: Error) => ctx.log.warn({ err: err.message }, 'response cache write failed'))
      .finally(() => {
        if (pending.get(key) === rep) pending.delete(key)
      })
  })
}

async function cachedRepresentation(ctx: ServiceContext, key: string): Promise<Representation | null> {
  const pending = unwritten.get(ctx.limits.cache)?.get(key)
  if (pending) return pending
  const hit = await ctx.limits.cache.get(key)
  return hit ? decodeRepresentation(hit) : null
}

/** How the answer left: `delivered` once its last byte was written, `undelivered` when it was not. */
export interface Delivery {
  delivered(): Promise<void>
  undelivered(): Promise<void>
}

const NOTHING_TO_SETTLE: Delivery = { delivered: async () => undefined, undelivered: async () => undefined }

/** The data_as_of this process last pruned paid-request records below, per account store. */
const prunedBelow = new WeakMap<ServiceContext['accounts'], string>()

/** Drops the paid-request records of older data, once per new data_as_of seen (off the request's path). */
function prunePaidRecords(ctx: ServiceContext, dataAsOf: string): void {
  const last = prunedBelow.get(ctx.accounts)
  if (last !== undefined && last >= dataAsOf) return
  prunedBelow.set(ctx.accounts, dataAsOf)
  ctx.accounts
    .prunePaid(dataAsOf)
    .catch((err: Error) => ctx.log.warn({ err: err.message }, 'paid-request prune failed'))
}

export interface MeteredCallInput {
  principal: Principal
  capability: Capability
  cacheKey: string
  /**
   * The request's meaning on its data_as_of, whatever the format (docs/decisions/money.md, "pay
   * once"): a settle records it, and a later call with the same key is answered free. Null for
   * answers that are never cached (`live` data).
   */
  paid: PaidRequest | null
  bypassCache: boolean
  /** Never write the response to the cache (live data such as brokerage holdings). */
  noStore?: boolean
  ifNoneMatch: string | null
  requestId: string
  positions: number
  /**
   * The operation has nothing to answer for this request (docs/decisions/empty-answers.md):
   * answered without reserving or charging anything, and never recorded as paid.
   */
  free?: boolean
}

/**
 * The one metering path of every paid call, REST or MCP: response cache (a free HIT), a request
 * this account already paid for on this data (free, HIT), reserve the most the call can cost (402
 * if the balance cannot cover it), produce, 304 on a matching ETag (free). A served answer is
 * settled by its `delivery`: durably charged (and cached) once the adapter has written its last
 * byte, released when the connection closed before. Failures release.
 */
export async function meteredCall(
  ctx: ServiceContext,
  call: MeteredCallInput,
  produce: () => Promise<{ rep: Representation; positions: number }>,
): Promise<MeteredOutcome> {
  const hit = call.bypassCache ? null : await cachedRepresentation(ctx, call.cacheKey)
  if (hit) {
    const rep = hit
    recordUsage(ctx, call.principal, call.capability, 0, true)
    if (etagMatches(call.ifNoneMatch, rep.etag))
      return { kind: 'not_modified', etag: rep.etag, lineage: rep.lineage }
    return { kind: 'served', rep, costMicros: 0, cacheStatus: 'HIT', delivery: NOTHING_TO_SETTLE }
  }
  if (call.free === true) return serveFree(ctx, call, produce)
  if (await alreadyPaid(ctx, call)) return servePaid(ctx, call, produce)
  const ticket = await beginMetered(ctx, call.principal, call.capability, call.positions)
  let produced: { rep: Representation; positions: number }
  try {
    produced = await produce()
  } catch (err) {
    await releaseMetered(ctx, ticket).catch(() => undefined)
    throw err
  }
  const { rep, positions } = produced
  if (etagMatches(call.ifNoneMatch, rep.etag)) {
    await releaseMetered(ctx, ticket)
    recordUsage(ctx, call.principal, call.capability, 0, false)
    return { kind: 'not_modified', etag: rep.etag, lineage: rep.lineage }
  }
  const delivery: Delivery = {
    delivered: async () => {
      try {
        const costMicros = await settleMetered(ctx, ticket, call.requestId, positions, call.paid)
        recordUsage(ctx, call.principal, call.capability, costMicros, false)
      } catch (err) {
        await releaseMetered(ctx, ticket).catch(() => undefined)
        throw err
      }
      if (call.paid) prunePaidRecords(ctx, call.paid.dataAsOf)
      if (call.noStore !== true) cacheAfterSend(ctx, call.cacheKey, rep, call.bypassCache)
    },
    undelivered: async () => {
      await releaseMetered(ctx, ticket)
      recordUsage(ctx, call.principal, call.capability, 0, false)
    },
  }
  return {
    kind: 'served',
    rep,
    costMicros: settleAmount(ticket, positions),
    cacheStatus: call.bypassCache ? 'BYPASS' : 'MISS',
    delivery,
  }
}

/** A live-key call whose request this account has paid for on this data (not for no-cache calls). */
async function alreadyPaid(ctx: ServiceContext, call: MeteredCallInput): Promise<boolean> {
  if (call.paid === null || call.bypassCache || call.principal.environment === 'test') return false
  return ctx.accounts.hasPaid(call.principal.accountId, call.paid.key)
}

/** Answers a request already paid for: produced again (another format, or after a restart), free, HIT. */
function servePaid(
  ctx: ServiceContext,
  call: MeteredCallInput,
  produce: () => Promise<{ rep: Representation; positions: number }>,
): Promise<MeteredOutcome> {
  return serveUncharged(ctx, call, produce, 'HIT')
}

/** Answers a request with nothing to answer: nothing reserved, nothing charged, cached as usual. */
function serveFree(
  ctx: ServiceContext,
  call: MeteredCallInput,
  produce: () => Promise<{ rep: Representation; positions: number }>,
): Promise<MeteredOutcome> {
  return serveUncharged(ctx, call, produce, call.bypassCache ? 'BYPASS' : 'MISS')
}

async function serveUncharged(
  ctx: ServiceContext,
  call: MeteredCallInput,
  produce: () => Promise<{ rep: Representation; positions: number }>,
  cacheStatus: CacheStatus,
): Promise<MeteredOutcome> {
  const { rep } = await produce()
  recordUsage(ctx, call.principal, call.capability, 0, cacheStatus === 'HIT')
  if (etagMatches(call.ifNoneMatch, rep.etag))
    return { kind: 'not_modified', etag: rep.etag, lineage: rep.lineage }
  const delivery: Delivery = {
    delivered: async () => {
      if (call.noStore !== true) cacheAfterSend(ctx, call.cacheKey, rep, call.bypassCache)
    },
    undelivered: async () => undefined,
  }
  return { kind: 'served', rep, costMicros: 0, cacheStatus, delivery }
}
