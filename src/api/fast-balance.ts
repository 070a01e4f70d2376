/**
 * `GET /balance` without Fastify's per-request machinery (figures: docs/performance.md).
 *
 * The free balance read is what agents poll. A bare Fastify route answering its body costs about
 * twice a `node:http` server sending the same bytes (bench/http.ts), so this one request shape is
 * answered on the listener itself, before Fastify sees it: the same authentication, rate token,
 * concurrency slot, balance view, headers and bytes, the same metrics and access line. Anything
 * else — another method or path, a query string, a body, an MCP-internal call, another form of
 * credentials, and every refusal — goes to Fastify untouched, which answers it as always. A
 * request handed over after its rate token was taken carries the token's figures (see
 * `PRE_TAKEN`), so no request takes two. test/api/fast-balance.test.ts compares both paths byte
 * for byte.
 *
 * Most such requests are answered within the one turn of the event loop that parsed them, with no
 * promise: a key verified here within the key cache's lifetime, in-process limits (the embedded
 * default; Redis has no synchronous half) and a balance snapshot fresh enough for this view. Such
 * a request needs a free concurrency slot but holds it for no time — no other request of this
 * process runs before it is answered — and it is over once its bytes are handed to the socket.
 * When any part is not at hand, the same steps run the asynchronous way (`serve`); there too a
 * request whose answer leaves in the turn its limits answered in takes no slot, only asks whether
 * one is free (with Redis, in the rate take's round trip), so it costs one round trip, not two.
 */
import type { IncomingMessage, ServerResponse } from 'node:http'
import { API_VERSION } from '../contract/openapi.ts'
import { getBalance } from '../contract/ops/account.ts'
import { balanceView, balanceViewNow } from '../services/billing/views.ts'
import type { ServiceContext } from '../services/context.ts'
import { authenticateKey, cachedPrincipal, type KeyUsage, type Principal } from '../services/identity/keys.ts'
import {
  acquireKeySlot,
  type KeySlot,
  keySlotFree,
  keySlotFreeNow,
  type RateHeaders,
  releaseKeySlot,
  takeKeyToken,
  takeKeyTokenNow,
} from '../services/limits.ts'
import { INTERNAL_HEADER, PRE_TAKEN, type PreTaken } from './auth-hook.ts'
import type { createPromMetrics } from './prom.ts'
import { responseSerializer } from './validation.ts'

/** The one bearer shape served here (an erm3 key); any other form goes to Fastify's parsing. */
const BEARER = /^Bearer (erm_[A-Za-z0-9_-]{1,200})$/

export interface FastBalanceDeps {
  ctx: ServiceContext
  usage: KeyUsage
  prom: ReturnType<typeof createPromMetrics>
  accessLog: boolean
  /** erm3's own id for the request, and the client's (echoed as X-Correlation-ID), as Fastify's hooks set them. */
  requestId(req: IncomingMessage): string
  correlationId(req: IncomingMessage): string | null
}

/**
 * The listener's request handler: serves `GET /balance` itself when it can, else calls `fastify`.
 */
export function withFastBalance(
  deps: FastBalanceDeps,
  fastify: (req: IncomingMessage, res: ServerResponse) => void,
): (req: IncomingMessage, res: ServerResponse) => void {
  const { ctx } = deps
  const fp: FastPath = { deps, fastify, serialize: responseSerializer(getBalance), answer: responder(deps) }
  return function handler(req, res) {
    const h = req.headers
    if (
      req.method !== 'GET' ||
      req.url !== '/balance' ||
      h['content-length'] !== undefined ||
      h['transfer-encoding'] !== undefined ||
      h[INTERNAL_HEADER] !== undefined
    )
      return fastify(req, res)
    const m = h.authorization === undefined ? null : BEARER.exec(h.authorization)
    if (!m) return fastify(req, res)
    if (serveNow(fp, req, res, m[1] as string)) return
    serve(fp, req, res, m[1] as string).catch((err: unknown) => {
      // Nothing above throws past its own fallback; should it, the connection must not hang.
      ctx.log.error({ err }, 'GET /balance fast path failed')
      if (!res.headersSent) fastify(req, res)
    })
  }
}

/** What both ways of serving share: the deps, the hand-over to Fastify, the body's serializer, the 200. */
interface FastPath {
  deps: FastBalanceDeps
  fastify: (req: IncomingMessage, res: ServerResponse) => void
  serialize: ReturnType<typeof responseSerializer>
  answer: ReturnType<typeof responder>
}

/** The 200 and the end of the request (its slot back, its metrics and access line). */
function responder(deps: FastBalanceDeps) {
  const { ctx, prom, accessLog } = deps
  /** The request is over: its slot goes back, and its metrics and access line are recorded. */
  function done(
    req: IncomingMessage,
    res: ServerResponse,
    id: string,
    p: Principal,
    slot: KeySlot | null,
    t0: number,
  ) {
    if (slot)
      releaseKeySlot(ctx, slot).catch((e: Error) =>
        ctx.log.warn({ err: e.message }, 'could not release a concurrency slot'),
      )
    const ms = performance.now() - t0
    prom.observe('getBalance', res.statusCode, ms / 1000)
    prom.fastBalance()
    if (accessLog)
      ctx.log.info(
        {
          request_id: id,
          correlation_id: deps.correlationId(req) ?? undefined,
          op: 'getBalance',
          method: req.method,
          status: res.statusCode,
          ms: Math.round(ms * 10) / 10,
          key_id: p.keyId,
        },
        'request',
      )
  }
  /**
   * Writes the 200. A request holding a concurrency slot is over when its connection closes
   * ('close' follows 'finish' and a dropped connection alike, so the slot goes back exactly once);
   * one answered in a single turn (`slot` null) holds none and is over once its bytes are handed to
   * the socket.
   */
  function answer(
    req: IncomingMessage,
    res: ServerResponse,
    p: Principal,
    rate: RateHeaders,
    slot: KeySlot | null,
    body: string,
    t0: number,
  ): void {
    const id = deps.requestId(req)
    const correlation = deps.correlationId(req)
    if (slot) res.once('close', () => done(req, res, id, p, slot, t0))
    res.writeHead(200, [
      'x-request-id',
      id,
      ...(correlation === null ? [] : ['x-correlation-id', correlation]),
      'x-api-version',
      API_VERSION,
      'x-environment',
      p.environment,
      'x-ratelimit-limit',
      String(rate.limit),
      'x-ratelimit-remaining',
      String(rate.remaining),
      'x-ratelimit-reset',
      String(rate.resetEpochS),
      'content-type',
      'application/json; charset=utf-8',
      'content-length',
      String(Buffer.byteLength(body)),
    ])
    res.end(body)
    if (!slot) done(req, res, id, p, null, t0)
  }
  return answer
}

/**
 * The whole answer in this turn, when every part of it is in this process: a key verified here
 * moments ago, in-process limits and a fresh balance snapshot. False, with nothing taken, when
 * one of them is not (then `serve`); a refusal goes to Fastify as in `serve`.
 */
function serveNow(fp: FastPath, req: PreTaken, res: ServerResponse, bearer: string): boolean {
  const { deps, fastify, serialize, answer } = fp
  const { ctx, usage } = deps
  const t0 = performance.now()
  const principal = cachedPrincipal(ctx, bearer)
  if (!principal) return false
  const view = balanceViewNow(ctx, principal)
  if (!view) return false
  let rate: RateHeaders | undefined
  try {
    rate = takeKeyTokenNow(ctx, principal)
  } catch {
    fastify(req, res) // refused, and a refused take took nothing: Fastify takes again and answers
    return true
  }
  if (!rate) return false
  usage.touch(principal.keyId, ctx.now())
  // No other request runs before this one is answered, so a free slot is all it needs: it
  // holds one for no time (and Fastify answers a key at its cap, with the token already taken).
  if (keySlotFreeNow(ctx, principal) !== true) {
    req[PRE_TAKEN] = rate
    fastify(req, res)
    return true
  }
  answer(req, res, principal, rate, null, serialize(view), t0)
  return true
}

async function serve(fp: FastPath, req: PreTaken, res: ServerResponse, bearer: string): Promise<void> {
  const { deps, fastify, serialize, answer } = fp
  const { ctx, usage } = deps
  const t0 = performance.now()
  let principal: Principal
  try {
    principal = await authenticateKey(ctx, bearer)
  } catch {
    return fastify(req, res) // refused (or the store is away): Fastify answers, and limits, as always
  }
  // The rate token and whether a slot is free are asked for together: with Redis, one round
  // trip (ioredis pipelines the commands of one turn).
  const [token, free] = await Promise.allSettled([takeKeyToken(ctx, principal), keySlotFree(ctx, principal)])
  // A refused take took nothing: Fastify takes again and answers the 429.
  if (token.status === 'rejected') return fastify(req, res)
  const rate = token.value
  usage.touch(principal.keyId, ctx.now())
  if (free.status === 'rejected' || !free.value) {
    // At its cap (or the limits are away): Fastify acquires, with the token already taken.
    req[PRE_TAKEN] = rate
    return fastify(req, res)
  }
  // With a fresh snapshot the answer leaves in the turn the limits answered in: like `serveNow`,
  // the request holds its free slot for no time, so it takes none and gives none back.
  const view = balanceViewNow(ctx, principal)
  if (view) return answer(req, res, principal, rate, null, serialize(view), t0)
  // The balance must be read: the request holds a slot while it waits.
  let slot: KeySlot
  try {
    slot = await acquireKeySlot(ctx, principal)
  } catch {
    req[PRE_TAKEN] = rate
    return fastify(req, res)
  }
  let body: string
  try {
    body = serialize(await balanceView(ctx, principal))
  } catch {
    await releaseKeySlot(ctx, slot).catch(() => undefined)
    req[PRE_TAKEN] = rate
    return fastify(req, res)
  }
  answer(req, res, principal, rate, slot, body, t0)
}
