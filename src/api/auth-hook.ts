import type { FastifyReply, FastifyRequest } from 'fastify'
import { AppError } from '../platform/errors.ts'
import type { ServiceContext } from '../services/context.ts'
import { authenticateKey, type KeyUsage } from '../services/identity/keys.ts'
import { verifySession } from '../services/identity/session.ts'
import { acquireKeySlot, type RateHeaders, releaseKeySlot, takeKeyToken } from '../services/limits.ts'

export const SESSION_COOKIE = 'erm3_session'
/** Marks an in-process call made on behalf of an MCP tool (value: a per-process secret). */
export const INTERNAL_HEADER = 'x-erm3-internal'

export function bearerOf(req: FastifyRequest): string | null {
  const h = req.headers.authorization
  if (!h) return null
  const m = /^Bearer\s+(\S+)\s*$/i.exec(h)
  return m ? (m[1] as string) : h.trim() === '' ? null : h.trim()
}

export function setRateHeaders(reply: FastifyReply, h: RateHeaders): void {
  reply.header('X-RateLimit-Limit', String(h.limit))
  reply.header('X-RateLimit-Remaining', String(h.remaining))
  reply.header('X-RateLimit-Reset', String(h.resetEpochS))
}

/** Gives the request's concurrency slot back, once (the response is done or the connection dropped). */
function releaseSlotOf(ctx: ServiceContext, req: FastifyRequest): void {
  const slot = req.slot
  req.slot = null
  if (!slot) return
  releaseKeySlot(ctx, slot).catch((e: Error) =>
    ctx.log.warn({ err: e.message }, 'could not release a concurrency slot'),
  )
}

/**
 * onRequest: authentication, rate limit and concurrency slot — before the body is even parsed,
 * so an unauthenticated request with a bad body is a 401, not a 400.
 */
export function createAuthHook(ctx: ServiceContext, usage: KeyUsage, internalSecret: string) {
  return async function authHook(req: FastifyRequest, reply: FastifyReply): Promise<void> {
    const op = req.routeOptions.config.op
    if (!op || op.auth === 'none') return
    if (op.auth === 'key') {
      const principal = await authenticateKey(ctx, bearerOf(req))
      req.principal = principal
      reply.header('X-Environment', principal.environment)
      usage.touch(principal.keyId, ctx.now())
      // An MCP tool call already took its rate token as an MCP message: the inner REST call
      // (marked by this process's secret) takes only the concurrency slot.
      if (req.headers[INTERNAL_HEADER] !== internalSecret) {
        try {
          setRateHeaders(reply, await takeKeyToken(ctx, principal))
        } catch (e) {
          if (!op.rateLimitInBand || !(e instanceof AppError) || e.code !== 'RATE_LIMITED') throw e
          // Refused here all the same; the MCP handler delivers the refusal (mcp/http.ts).
          req.rateLimited = e
          const rate = (e.extra as { rate?: RateHeaders }).rate
          if (rate) setRateHeaders(reply, rate)
        }
      }
      if (op.streaming) return
      req.slot = await acquireKeySlot(ctx, principal)
      // 'close' follows 'finish' as well as a dropped connection: exactly one release either way.
      reply.raw.once('close', () => releaseSlotOf(ctx, req))
      return
    }
    req.session = await verifySession(ctx, bearerOf(req) ?? cookieOf(req, SESSION_COOKIE))
  }
}

/** One cookie of the request (parsed on demand: most requests carry none and need none). */
export function cookieOf(req: FastifyRequest, name: string): string | null {
  const header = req.headers.cookie
  if (!header) return null
  return req.server.parseCookie(header)[name] ?? null
}
