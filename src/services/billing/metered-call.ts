import { hash } from 'node:crypto'
import type { Capability } from '../../contract/pricing.ts'
import type { TabularFormat } from '../../contract/table.ts'
import type { AgentMeta, CacheStatus } from '../agent-meta.ts'
import type { ServiceContext } from '../context.ts'
import type { Principal } from '../identity/keys.ts'
import { beginMetered, releaseMetered, settleMetered } from './meter.ts'
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
  | { kind: 'served'; rep: Representation; costMicros: number; cacheStatus: CacheStatus }
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

export function canonicalJson(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonicalJson).join(',')}]`
  if (v && typeof v === 'object') {
    const o = v as Record<string, unknown>
    return `{${Object.keys(o)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonicalJson(o[k])}`)
      .join(',')}}`
  }
  return JSON.stringify(v) ?? 'null'
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

/**
 * The one metering path of every paid call, REST or MCP: response cache (a free HIT), reserve
 * the most the call can cost (402 if the balance cannot cover it), produce, 304 on a matching
 * ETag (free), durable settle for the positions that succeeded, cache (after the send). Failures
 * release.
 */
export async function meteredCall(
  ctx: ServiceContext,
  call: {
    principal: Principal
    capability: Capability
    cacheKey: string
    bypassCache: boolean
    /** Never write the response to the cache (live data such as brokerage holdings). */
    noStore?: boolean
    ifNoneMatch: string | null
    requestId: string
    positions: number
  },
  produce: () => Promise<{ rep: Representation; positions: number }>,
): Promise<MeteredOutcome> {
  const hit = call.bypassCache ? null : await cachedRepresentation(ctx, call.cacheKey)
  if (hit) {
    const rep = hit
    recordUsage(ctx, call.principal, call.capability, 0, true)
    if (etagMatches(call.ifNoneMatch, rep.etag))
      return { kind: 'not_modified', etag: rep.etag, lineage: rep.lineage }
    return { kind: 'served', rep, costMicros: 0, cacheStatus: 'HIT' }
  }
  const ticket = await beginMetered(ctx, call.principal, call.capability, call.positions)
  try {
    const { rep, positions } = await produce()
    if (etagMatches(call.ifNoneMatch, rep.etag)) {
      await releaseMetered(ctx, ticket)
      recordUsage(ctx, call.principal, call.capability, 0, false)
      return { kind: 'not_modified', etag: rep.etag, lineage: rep.lineage }
    }
    const costMicros = await settleMetered(ctx, ticket, call.requestId, positions)
    recordUsage(ctx, call.principal, call.capability, costMicros, false)
    if (call.noStore !== true) cacheAfterSend(ctx, call.cacheKey, rep, call.bypassCache)
    return { kind: 'served', rep, costMicros, cacheStatus: call.bypassCache ? 'BYPASS' : 'MISS' }
  } catch (err) {
    await releaseMetered(ctx, ticket).catch(() => undefined)
    throw err
  }
}
