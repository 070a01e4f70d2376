/**
 * `GET /balance` without Fastify's per-request machinery (issue 20 §4).
 *
 * The free balance read is what agents poll. A bare Fastify route answering its body costs about
 * twice a `node:http` server sending the same bytes (bench/http.ts), so this one request shape is
 * answered on the listener itself, before Fastify sees it: the same authentication, rate token,
 * concurrency slot, balance view, headers and bytes, the same metrics and access line. Anything
 * else — another method or path, a query string, a body, an MCP-internal call, a key not already
 * verified in this process, and every refusal — goes to Fastify untouched, which answers it as
 * always. A request handed over after its rate token was taken carries the token's figures (see
 * `PRE_TAKEN`), so no request takes two. test/api/fast-balance.test.ts compares both paths byte
 * for byte.
 */
import type { IncomingMessage, ServerResponse } from 'node:http'
import { API_VERSION } from '../contract/openapi.ts'
import { getBalance } from '../contract/ops/account.ts'
import { balanceView, balanceViewNow } from '../services/billing/views.ts'
import type { ServiceContext } from '../services/context.ts'
import { authenticateKey, cachedPrincipal, type KeyUsage, type Principal } from '../services/identity/keys.ts'
import {
  acquireKeySlot,
  acquireKeySlotNow,
  type KeySlot,
  type RateHeaders,
  releaseKeySlot,
  releaseKeySlotNow,
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
  requestId(req: IncomingMessage): string
}

/**
 * The listener's request handler: serves `GET /balance` itself when it can, else calls `fastify`.
 */
export function withFastBalance(
  deps: FastBalanceDeps,
  fastify: (req: IncomingMessage, res: ServerResponse) => void,
): (req: IncomingMessage, res: ServerResponse) => void {
  const { ctx, usage, prom, accessLog } = deps
  const serialize = responseSerializer(getBalance)

  /** The request is over: its slot goes back, and its metrics and access line are recorded. */
  function done(
    req: IncomingMessage,
    res: ServerResponse,
    id: string,
    p: Principal,
    slot: KeySlot,
    t0: number,
  ) {
    if (!releaseKeySlotNow(ctx, slot))
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
   * Writes the 200. The request is over when its connection closes ('close' follows 'finish' and
   * a dropped connection alike, so the slot goes back exactly once) or, for an answer made in one
   * turn (`inTurn`), as soon as its bytes are handed to the socket: no other request of this
   * process ran while it was in flight, and it holds nothing once answered.
   */
  function answer(
    req: IncomingMessage,
    res: ServerResponse,
    p: Principal,
    rate: RateHeaders,
    slot: KeySlot,
    body: string,
    t0: number,
    inTurn: boolean,
  ): void {
    const id = deps.requestId(req)
    if (!inTurn) res.once('close', () => done(req, res, id, p, slot, t0))
    res.writeHead(200, [
      'x-request-id',
      id,
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
    if (inTurn) done(req, res, id, p, slot, t0)
  }

  /**
   * The whole answer in this turn, when every part of it is in this process: a key verified here
   * moments ago, in-process limits and a fresh balance snapshot. False, with nothing taken, when
   * one of them is not (then `serve`); a refusal goes to Fastify as in `serve`.
   */
  function serveNow(req: PreTaken, res: ServerResponse, bearer: string): boolean {
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
    let slot: KeySlot | undefined
    try {
      slot = acquireKeySlotNow(ctx, principal)
    } catch {
      slot = undefined
    }
    if (!slot) {
      // Refused (or a limiter without the synchronous half): Fastify answers, token already taken.
      req[PRE_TAKEN] = rate
      fastify(req, res)
      return true
    }
    answer(req, res, principal, rate, slot, serialize(view), t0, true)
    return true
  }

  async function serve(req: PreTaken, res: ServerResponse, bearer: string): Promise<void> {
    const t0 = performance.now()
    let principal: Principal
    try {
      principal = await authenticateKey(ctx, bearer)
    } catch {
      return fastify(req, res) // refused (or the store is away): Fastify answers, and limits, as always
    }
    let rate: RateHeaders
    try {
      rate = await takeKeyToken(ctx, principal)
    } catch {
      return fastify(req, res) // a refused take took nothing: Fastify takes again and answers the 429
    }
    usage.touch(principal.keyId, ctx.now())
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
    answer(req, res, principal, rate, slot, body, t0, false)
  }

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
    if (serveNow(req, res, m[1] as string)) return
    serve(req, res, m[1] as string).catch((err: unknown) => {
      // Nothing above throws past its own fallback; should it, the connection must not hang.
      ctx.log.error({ err }, 'GET /balance fast path failed')
      if (!res.headersSent) fastify(req, res)
    })
  }
}
