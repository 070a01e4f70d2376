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
import { balanceView } from '../services/billing/views.ts'
import type { ServiceContext } from '../services/context.ts'
import { authenticateKey, type KeyUsage, type Principal } from '../services/identity/keys.ts'
import {
  acquireKeySlot,
  type KeySlot,
  type RateHeaders,
  releaseKeySlot,
  takeKeyToken,
} from '../services/limits.ts'
import { INTERNAL_HEADER, PRE_TAKEN, type PreTaken } from './auth-hook.ts'
import type { createPromMetrics } from './prom.ts'

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

  function finish(
    res: ServerResponse,
    req: IncomingMessage,
    id: string,
    p: Principal,
    slot: KeySlot,
    t0: number,
  ) {
    // 'close' follows 'finish' and a dropped connection alike: the slot goes back exactly once.
    res.once('close', () => {
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
    })
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
      body = JSON.stringify(await balanceView(ctx, principal))
    } catch {
      await releaseKeySlot(ctx, slot).catch(() => undefined)
      req[PRE_TAKEN] = rate
      return fastify(req, res)
    }
    const id = deps.requestId(req)
    finish(res, req, id, principal, slot, t0)
    res.writeHead(200, {
      'x-request-id': id,
      'x-api-version': API_VERSION,
      'x-environment': principal.environment,
      'x-ratelimit-limit': String(rate.limit),
      'x-ratelimit-remaining': String(rate.remaining),
      'x-ratelimit-reset': String(rate.resetEpochS),
      'content-type': 'application/json; charset=utf-8',
      'content-length': String(Buffer.byteLength(body)),
    })
    res.end(body)
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
    serve(req, res, m[1] as string).catch((err: unknown) => {
      // Nothing above throws past its own fallback; should it, the connection must not hang.
      ctx.log.error({ err }, 'GET /balance fast path failed')
      if (!res.headersSent) fastify(req, res)
    })
  }
}
