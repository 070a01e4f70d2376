import type { FastifyReply, FastifyRequest } from 'fastify'
import type { Capability } from '../contract/pricing.ts'
import { requestIdentity } from '../contract/request-identity.ts'
import { type FlatTable, TABULAR_MEDIA_TYPES, type TabularFormat } from '../contract/table.ts'
import { encodeTableCsv, encodeTableParquet } from '../engine/export/tabular.ts'
import { AppError } from '../platform/errors.ts'
import { utf8Bytes } from '../platform/utf8.ts'
import { type AgentMeta, agentMeta } from '../services/agent-meta.ts'
import {
  type Delivery,
  etagOf,
  meteredCall,
  type Representation,
  responseCacheKey,
} from '../services/billing/metered-call.ts'
import { SharedRepresentations, sharedRepresentations } from '../services/billing/shared-representations.ts'
import { BALANCE_VIEW_MAX_AGE_MS } from '../services/billing/views.ts'
import type { ServiceContext } from '../services/context.ts'
import type { Principal } from '../services/identity/keys.ts'
import type { NothingToAnswer, RiskMetadata } from '../services/models.ts'
import { negotiateFormat } from './negotiate.ts'
import { requirePrincipal } from './request-state.ts'

/** What a metered service call returns: the body without `_agent`, and what `_agent` needs. */
export interface MeteredResult {
  body: { _metadata?: RiskMetadata } & Record<string, unknown>
  store: { readonly dataAsOf: string }
  confidence: AgentMeta['confidence']
  /** Positions that succeeded (per-position pricing). */
  positions?: number
  /**
   * The tabular form (time-series operations): served instead of the JSON body when the request
   * asks for `format=parquet|csv` (or Accept), without `_metadata`, lineage in headers only.
   */
  table?: () => FlatTable
  /** Base of the attachment's filename, e.g. `ticker-returns_AAPL_5y`. */
  filename?: string
}

/** What the call that was answered cost and where the answer came from. */
interface ServedCall {
  costMicros: number
  cacheStatus: AgentMeta['cache_status']
  dataAsOf: string
}

function lineageHeaders(m: RiskMetadata): Record<string, string> {
  return {
    'X-Risk-Model-Version': m.model_version,
    'X-Data-As-Of': m.data_as_of,
    'X-Factor-Set-Id': m.factor_set_id,
    'X-Universe-Size': String(m.universe_size),
    // What the numbers are, on every format (CSV and Parquet carry no `_metadata`).
    'X-Dataset': datasetLabel(m),
    // An old ticker of a renamed security: said where CSV and Parquet can carry it.
    ...(m.ticker_note ? { 'X-Ticker-Note': m.ticker_note } : {}),
    // An answer served free for having nothing in it (docs/decisions/empty-answers.md).
    ...(m.nothing_to_answer ? { 'X-Nothing-To-Answer': m.nothing_to_answer.reason } : {}),
  }
}

/** `synthetic; seed=42` (erm3's generated market, never market data), `imported` or `vendor; sources=tiingo,sec`. */
function datasetLabel(m: RiskMetadata): string {
  const d = m.dataset
  if (d.kind === 'synthetic') return `synthetic; seed=${d.seed}`
  return d.kind === 'vendor' ? `vendor; sources=${d.sources.join(',')}` : 'imported'
}

/** The response in the negotiated format, ready to cache and send. */
function represent(r: MeteredResult, format: TabularFormat): Representation {
  const lineage = r.body._metadata ? lineageHeaders(r.body._metadata) : {}
  const base = {
    format,
    filename: r.filename ?? null,
    dataAsOf: r.store.dataAsOf,
    lineage,
    confidence: r.confidence,
  }
  if (format === 'json') {
    const data = utf8Bytes(JSON.stringify(r.body))
    return { ...base, etag: etagOf(data), data }
  }
  if (!r.table)
    throw new AppError('UNSUPPORTED_FORMAT', 'This operation has no tabular form: only JSON is available')
  const t = r.table()
  const bytes =
    format === 'parquet'
      ? Buffer.from(
          encodeTableParquet(t, {
            'erm3.model_version': r.body._metadata?.model_version ?? '',
            'erm3.dataset': r.body._metadata ? datasetLabel(r.body._metadata) : '',
          }),
        )
      : utf8Bytes(encodeTableCsv(t))
  return { ...base, etag: etagOf(bytes), data: bytes }
}

/** The headers and body of an answer, `_agent` spliced into JSON. */
function finalForm(reply: FastifyReply, e: Representation, agent: AgentMeta, startedAt: number): Buffer {
  reply.headers(e.lineage)
  // Server time up to the send (auth, limits, metering, computation, encoding): browsers' and
  // benches' view of the server's share of a request, for JSON and tabular answers alike.
  reply.header('Server-Timing', `app;dur=${(performance.now() - startedAt).toFixed(2)}`)
  reply.header('ETag', e.etag)
  reply.header('X-API-Cost-USD', String(agent.cost_usd))
  if (agent.balance_usd !== undefined) reply.header('X-Balance-USD', String(agent.balance_usd))
  reply.header('X-Cache-Status', agent.cache_status)
  if (e.format === 'json') {
    reply.header('Content-Type', 'application/json; charset=utf-8')
    // The cached JSON object's closing brace gives way to `_agent` (bytes spliced, not re-encoded).
    const tail = Buffer.from(`,"_agent":${JSON.stringify(agent)}}`, 'utf8')
    return Buffer.concat([e.data.subarray(0, e.data.length - 1), tail])
  }
  reply.header('Content-Type', TABULAR_MEDIA_TYPES[e.format])
  reply.header('Content-Disposition', `attachment; filename="${e.filename ?? 'erm3'}.${e.format}"`)
  return e.data
}

/** Writes `chunk`; true once it has been handed to the connection, false if the connection closed first. */
function written(res: FastifyReply['raw'], chunk: Buffer): Promise<boolean> {
  return new Promise((resolve) => {
    if (res.destroyed) return resolve(false)
    const gone = () => resolve(false)
    res.once('close', gone)
    res.write(chunk, (err) => {
      res.off('close', gone)
      // A connection destroyed under the write calls back without an error: ask the socket.
      resolve(!err && !res.destroyed && res.socket?.destroyed !== true)
    })
  })
}

/**
 * Bodies up to this size are settled, then sent whole. A chosen bound, not a measured one: such a
 * body is mostly taken by the kernel in one write (Linux starts a TCP send buffer at 16 KiB and
 * grows it to MBs), so holding back its last byte would rarely tell a client gone, and a settle
 * failure then stays a readable 503 instead of a truncated body.
 */
const WHOLE_BODY_BYTES = 64 * 1024

/**
 * Sends the answer and settles it by what reached the connection (docs/decisions/money.md): a
 * larger body but its last byte is written first; a connection closed before it was handed over
 * (client gone mid-body, or cut at its deadline for not reading) releases the reservation —
 * nothing charged. Otherwise the debit is made durable, and only then the last byte completes
 * the response: a client never holds a complete answer whose debit could still be lost, and a
 * settle that fails cuts the connection instead (the answer is withheld, as before).
 */
async function sendSettled(
  ctx: ServiceContext,
  req: FastifyRequest,
  reply: FastifyReply,
  body: Buffer,
  delivery: Delivery,
): Promise<void> {
  const res = reply.raw
  const release = () =>
    delivery.undelivered().catch((err: Error) => ctx.log.error({ err: err.message }, 'release failed'))
  if (body.length <= WHOLE_BODY_BYTES) {
    // A body this small is handed to the connection whole at once (socket buffers hold more), so
    // holding back its last byte would prove nothing, and a settle failure can still be the 503
    // every client understands (nothing sent yet). Only a connection already gone is detectable.
    if (res.destroyed || res.socket?.destroyed === true) {
      reply.hijack()
      await release()
      return
    }
    await delivery.delivered()
    reply.header('content-length', String(body.length))
    await reply.send(body)
    return
  }
  reply.hijack()
  const headers: Record<string, string> = {}
  for (const [k, v] of Object.entries(reply.getHeaders())) if (v !== undefined) headers[k] = String(v)
  res.writeHead(200, { ...headers, 'content-length': String(body.length) })
  const cut = Math.max(0, body.length - 1)
  const handed = cut === 0 ? !res.destroyed : await written(res, body.subarray(0, cut))
  if (!handed) {
    await release()
    return
  }
  try {
    await delivery.delivered()
  } catch (err) {
    ctx.log.error({ err: (err as Error).message, request_id: req.id }, 'settle failed: answer withheld')
    res.destroy()
    return
  }
  res.end(body.subarray(cut))
}

/**
 * The request's meaning (contract/request-identity.ts): the operation and its validated,
 * defaulted, normalised parameters, a missing `teo` as the data's last day.
 */
function requestParts(req: FastifyRequest, dataAsOf: string): string[] {
  const op = req.routeOptions.config.op
  if (!op) throw new Error('a metered route without its operation')
  return [requestIdentity(op, { params: req.params, query: req.query, body: req.body }, dataAsOf)]
}

/**
 * The account's settled balance as the call begins, read alongside the call (not after it): from
 * the store's per-process snapshot when one is fresh, else one read. The answer carries it minus
 * the call's own cost (`_agent.balance_usd`, `X-Balance-USD`), so an agent can budget without a
 * second call. Null when the read fails: the answer goes out without it.
 */
function balanceBefore(ctx: ServiceContext, principal: Principal): Promise<number | null> {
  return ctx.accounts
    .balance(principal.accountId, BALANCE_VIEW_MAX_AGE_MS)
    .then((b) => b.balanceMicros)
    .catch((err: Error) => {
      ctx.log.warn({ err: err.message }, 'balance read for _agent failed')
      return null
    })
}

/** `live`: data that must never be served from (or written to) the response cache: always BYPASS, always charged. */
interface MeteredOptions {
  positions?: number
  tabular?: boolean
  live?: boolean
  /** Called once an answer (200, cached or not) is settled, before it is sent (e.g. batch.completed). */
  onServed?: (served: ServedCall) => Promise<void>
  /**
   * Whether the operation has nothing to answer for this request (services/analytics/
   * nothing-to-answer.ts): such an answer is free and says why in `_metadata.nothing_to_answer`.
   */
  nothing?: () => Promise<NothingToAnswer | null>
}

/**
 * REST adapter of the metering path (services/billing/metered-call.ts): negotiates the format,
 * then sends JSON with `_agent`, a Parquet/CSV attachment, or a free 304.
 */
export async function runMetered(
  ctx: ServiceContext,
  req: FastifyRequest,
  reply: FastifyReply,
  capability: Capability,
  run: () => Promise<MeteredResult>,
  opts: MeteredOptions = {},
): Promise<FastifyReply> {
  const principal = requirePrincipal(req.principal)
  // One build for the whole request: the nothing-to-answer check, the keys and the answer.
  return ctx.models.pinned(principal.environment, () =>
    meteredOnBuild(ctx, req, reply, capability, run, opts),
  )
}

async function meteredOnBuild(
  ctx: ServiceContext,
  req: FastifyRequest,
  reply: FastifyReply,
  capability: Capability,
  run: () => Promise<MeteredResult>,
  opts: MeteredOptions,
): Promise<FastifyReply> {
  const principal = requirePrincipal(req.principal)
  const nothing = opts.nothing ? await opts.nothing() : null
  const format = negotiateFormat(req, opts.tabular === true)
  // The build, not only its date: a corrected rebuild with the same data_as_of is new data.
  const store = ctx.models.store(principal.environment)
  const build = `${store.dataAsOf}/${store.buildId ?? ''}`
  const inm = req.headers['if-none-match']
  const parts = requestParts(req, store.dataAsOf)
  const balance = balanceBefore(ctx, principal)
  // Every account's answer to this request on this build is the same bytes (not `live` data).
  const shared = opts.live === true ? null : sharedRepresentations(ctx)
  const outcome = await meteredCall(
    ctx,
    {
      principal,
      capability,
      cacheKey: responseCacheKey(principal, [...parts, build, format]),
      // Pay once per meaning and data_as_of, whatever the format (docs/decisions/money.md).
      paid:
        opts.live === true || principal.environment === 'test'
          ? null
          : {
              key: responseCacheKey(principal, ['paid', ...parts, store.dataAsOf]),
              dataAsOf: store.dataAsOf,
            },
      // `Cache-Control: no-cache` skips the response cache: the build's answer, charged, as BYPASS.
      bypassCache:
        opts.live === true || /no-cache|no-store/i.test(String(req.headers['cache-control'] ?? '')),
      noStore: opts.live === true,
      ifNoneMatch: typeof inm === 'string' ? inm : null,
      requestId: String(req.id),
      positions: opts.positions ?? 1,
      free: nothing !== null,
    },
    async () => {
      // Only a call that produces an answer (no response-cache HIT) needs the key.
      const sharedKey = SharedRepresentations.key(principal.environment, build, format, parts)
      const kept = shared?.get(sharedKey)
      if (kept) return kept
      const r = await run()
      if (nothing && r.body._metadata) r.body._metadata = { ...r.body._metadata, nothing_to_answer: nothing }
      const answer = { rep: represent(r, format), positions: r.positions ?? 1 }
      // Kept only if produced from the build its key names (a reload may have come in between).
      if (shared && r.store === store) shared.put(sharedKey, answer)
      return answer
    },
  )
  if (outcome.kind === 'not_modified') {
    return reply
      .code(304)
      .headers({ ...outcome.lineage, ETag: outcome.etag, 'X-API-Cost-USD': '0' })
      .send()
  }
  await opts.onServed?.({
    costMicros: outcome.costMicros,
    cacheStatus: outcome.cacheStatus,
    dataAsOf: outcome.rep.dataAsOf,
  })
  const agent = agentMeta({
    costMicros: outcome.costMicros,
    startedAt: req.startedAt,
    now: performance.now(),
    requestId: String(req.id),
    confidence: outcome.rep.confidence,
    dataAsOf: outcome.rep.dataAsOf,
    billingCode: capability.billingCode,
    cacheStatus: outcome.cacheStatus,
    balanceBeforeMicros: await balance,
  })
  await sendSettled(ctx, req, reply, finalForm(reply, outcome.rep, agent, req.startedAt), outcome.delivery)
  return reply
}
