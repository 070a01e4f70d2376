import { createHash } from 'node:crypto'
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { Capability } from '../contract/pricing.ts'
import { type AgentMeta, agentMeta } from '../services/agent-meta.ts'
import { beginMetered, releaseMetered, settleMetered } from '../services/billing/meter.ts'
import type { ServiceContext } from '../services/context.ts'
import type { Principal } from '../services/identity/keys.ts'
import type { RiskMetadata } from '../services/models.ts'
import { requirePrincipal } from './request-state.ts'

/** What a metered service call returns: the body without `_agent`, and what `_agent` needs. */
export interface MeteredResult {
  body: { _metadata?: RiskMetadata } & Record<string, unknown>
  store: { readonly dataAsOf: string }
  confidence: AgentMeta['confidence']
  /** Positions that succeeded (per-position pricing). */
  positions?: number
}

interface CachedEntry {
  etag: string
  data: string
  dataAsOf: string
  lineage: Record<string, string>
  confidence: AgentMeta['confidence']
}

/** Cached responses live until the data changes (the key holds data_as_of); a day bounds memory. */
const CACHE_TTL_MS = 24 * 3600_000

function canonicalJson(v: unknown): string {
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

/** Same account, environment, method, canonical path+query/body and data_as_of → same entry. */
function cacheKey(req: FastifyRequest, p: Principal, dataAsOf: string): string {
  const [path, query = ''] = req.url.split('?') as [string, string?]
  const q = new URLSearchParams(query)
  q.sort()
  const h = createHash('sha256')
    .update(
      [
        p.accountId,
        p.environment,
        req.method,
        path.toLowerCase(),
        q.toString(),
        canonicalJson(req.body ?? null),
        dataAsOf,
      ].join('\n'),
    )
    .digest('base64url')
  return `resp:${h}`
}

export function lineageHeaders(m: RiskMetadata): Record<string, string> {
  return {
    'X-Risk-Model-Version': m.model_version,
    'X-Data-As-Of': m.data_as_of,
    'X-Factor-Set-Id': m.factor_set_id,
    'X-Universe-Size': String(m.universe_size),
  }
}

function etagMatches(req: FastifyRequest, etag: string): boolean {
  const inm = req.headers['if-none-match']
  if (!inm) return false
  return inm === '*' || inm.split(',').some((t) => t.trim().replace(/^W\//, '') === etag.replace(/^W\//, ''))
}

function send(reply: FastifyReply, e: CachedEntry, agent: AgentMeta): FastifyReply {
  reply.headers(e.lineage)
  reply.header('ETag', e.etag)
  reply.header('X-API-Cost-USD', String(agent.cost_usd))
  reply.header('Content-Type', 'application/json; charset=utf-8')
  return reply.send(`${e.data.slice(0, -1)},"_agent":${JSON.stringify(agent)}}`)
}

/**
 * The metering path of every paid JSON operation: response cache (free HIT), reserve, run, 304
 * on a matching ETag (free), durable settle, then send. Failures release the reservation.
 */
export async function runMetered(
  ctx: ServiceContext,
  req: FastifyRequest,
  reply: FastifyReply,
  capability: Capability,
  run: () => Promise<MeteredResult>,
  requestedPositions = 1,
): Promise<FastifyReply> {
  const principal = requirePrincipal(req.principal)
  const env = principal.environment
  const dataAsOf = ctx.models.store(env).dataAsOf
  const key = cacheKey(req, principal, dataAsOf)
  const meta = (e: CachedEntry, cost: number, status: AgentMeta['cache_status']) =>
    agentMeta({
      costMicros: cost,
      startedAt: req.startedAt,
      now: performance.now(),
      requestId: String(req.id),
      confidence: e.confidence,
      dataAsOf: e.dataAsOf,
      billingCode: capability.billingCode,
      cacheStatus: status,
    })
  // `Cache-Control: no-cache` asks for a fresh computation: served and charged as BYPASS.
  const bypass = /no-cache|no-store/i.test(String(req.headers['cache-control'] ?? ''))
  const hit = bypass ? null : await ctx.limits.cache.get(key)
  if (hit) {
    const e = JSON.parse(hit.toString('utf8')) as CachedEntry
    if (etagMatches(req, e.etag))
      return reply
        .code(304)
        .headers({ ...e.lineage, ETag: e.etag, 'X-API-Cost-USD': '0' })
        .send()
    return send(reply, e, meta(e, 0, 'HIT'))
  }
  const ticket = await beginMetered(ctx, principal, capability, requestedPositions)
  let entry: CachedEntry
  try {
    const r = await run()
    const data = JSON.stringify(r.body)
    const etag = `W/"${createHash('sha256').update(data).digest('base64url').slice(0, 27)}"`
    const lineage = r.body._metadata ? lineageHeaders(r.body._metadata) : {}
    entry = { etag, data, dataAsOf: r.store.dataAsOf, lineage, confidence: r.confidence }
    if (etagMatches(req, etag)) {
      await releaseMetered(ctx, ticket)
      return reply
        .code(304)
        .headers({ ...lineage, ETag: etag, 'X-API-Cost-USD': '0' })
        .send()
    }
    const cost = await settleMetered(ctx, ticket, String(req.id), r.positions ?? 1)
    await ctx.limits.cache
      .set(key, Buffer.from(JSON.stringify(entry)), CACHE_TTL_MS)
      .catch((err: Error) => req.log.warn({ err: err.message }, 'response cache write failed'))
    return send(reply, entry, meta(entry, cost, bypass ? 'BYPASS' : 'MISS'))
  } catch (err) {
    await releaseMetered(ctx, ticket).catch(() => undefined)
    throw err
  }
}
