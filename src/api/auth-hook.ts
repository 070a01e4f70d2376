import { createHmac, timingSafeEqual } from 'node:crypto'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { AppError } from '../platform/errors.ts'
import type { ServiceContext } from '../services/context.ts'
import { authenticateKey, type KeyUsage, type Principal } from '../services/identity/keys.ts'
import { verifySession } from '../services/identity/session.ts'
import {
  acquireKeySlot,
  acquireStreamSlot,
  addressRule,
  type RateHeaders,
  releaseKeySlot,
  takeAddressToken,
  takeKeyToken,
} from '../services/limits.ts'
import { setRateHeaders } from './problem.ts'

export const SESSION_COOKIE = 'erm3_session'
/** The 401s of a key route: the request did not authenticate, so its address is what is limited. */
const CREDENTIAL_ERRORS: ReadonlySet<string> = new Set([
  'MISSING_CREDENTIALS',
  'INVALID_KEY',
  'REVOKED_KEY',
  'EXPIRED_KEY',
])
/** Marks an in-process call made on behalf of an MCP tool (value: a per-process secret). */
export const INTERNAL_HEADER = 'x-erm3-internal'

export function bearerOf(req: FastifyRequest): string | null {
  const h = req.headers.authorization
  if (!h) return null
  const m = /^Bearer\s+(\S+)\s*$/i.exec(h)
  return m ? (m[1] as string) : h.trim() === '' ? null : h.trim()
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
 *
 * Every response carries X-RateLimit-* (docs/decisions/rate-limits.md): a request with a valid
 * key takes a token of its key only; any other request (no key needed, a session, an unknown
 * path, or a key route refused for its credentials) takes one of its client address (`req.ip`,
 * X-Forwarded-For behind TRUST_PROXY). An operation with its own per-IP limit reports that one (routes/).
 */
export function createAuthHook(ctx: ServiceContext, usage: KeyUsage, internalSecret: string) {
  const perAddress = addressRule(ctx.config)
  const addressToken = async (req: FastifyRequest, reply: FastifyReply) =>
    setRateHeaders(reply, await takeAddressToken(ctx, perAddress, req.ip))
  return async function authHook(req: FastifyRequest, reply: FastifyReply): Promise<void> {
    const op = req.routeOptions.config.op
    if (op?.auth !== 'key' && !(op?.auth === 'key_or_session' && presentsKey(req))) {
      // A document read by an MCP tool or resource: the MCP message already took the key's token.
      if (req.headers[INTERNAL_HEADER] !== internalSecret) await addressToken(req, reply)
      if (op?.auth === 'session' || op?.auth === 'key_or_session') {
        const bearer = bearerOf(req)
        const cookie = bearer === null ? cookieOf(req, SESSION_COOKIE) : null
        req.session = await verifySession(ctx, bearer ?? cookie)
        // A session that rides on the cookie changes state only with the CSRF token (a bearer is
        // never sent by a browser on its own, so it needs none).
        if (cookie !== null && !SAFE_METHODS.has(req.method)) checkCsrf(req, cookie)
      }
      return
    }
    let principal: Principal
    try {
      principal = await authenticateKey(ctx, bearerOf(req))
    } catch (e) {
      // Refused for its credentials, the request counts as one without a key.
      if (e instanceof AppError && CREDENTIAL_ERRORS.has(e.code)) await addressToken(req, reply)
      throw e
    }
    req.principal = principal
    reply.header('X-Environment', principal.environment)
    usage.touch(principal.keyId, ctx.now())
    // An MCP tool call already took its rate token (toolCallHook): the inner REST call (marked by
    // this process's secret) takes only the concurrency slot. The MCP endpoints themselves take
    // none here: their protocol messages are free, their tool calls are counted after parsing.
    const takes = !op.streaming && req.headers[INTERNAL_HEADER] !== internalSecret
    // The rate token and the concurrency slot are asked for together: with Redis, one round trip
    // (ioredis pipelines the commands of one turn) instead of two in a row before every request.
    // An MCP event stream (GET) holds one of the key's MCP stream slots instead, for as long as it
    // is open. The other MCP requests take none: a POST is open only while its messages are
    // answered, and the one slow message, a tool call, takes a key slot for the REST call it is.
    const [token, slot] = await Promise.allSettled([
      takes ? takeKeyToken(ctx, principal) : null,
      !op.streaming
        ? acquireKeySlot(ctx, principal)
        : op.method === 'GET'
          ? acquireStreamSlot(ctx, principal)
          : null,
    ])
    if (slot.status === 'fulfilled' && slot.value) {
      req.slot = slot.value
      // 'close' follows 'finish' as well as a dropped connection: exactly one release either way.
      reply.raw.once('close', () => releaseSlotOf(ctx, req))
    }
    if (token.status === 'fulfilled') {
      if (token.value) setRateHeaders(reply, token.value)
    } else {
      // A refused token refuses the request: a slot taken beside it goes straight back.
      releaseSlotOf(ctx, req)
      throw token.reason
    }
    if (slot.status === 'rejected') throw slot.reason
  }
}

/** The MCP messages of a body that are tool calls (a body is one message or a batch). */
function toolCalls(body: unknown): number {
  const messages: unknown[] = Array.isArray(body) ? body : [body]
  return messages.filter(
    (m) => (m as { method?: unknown } | null)?.method === 'tools/call' && 'id' in (m as object),
  ).length
}

/**
 * preHandler of the MCP message endpoints (`rateLimitInBand`): rate limits count tool calls, not
 * protocol messages. A POST takes one of its key's tokens per tools/call it carries (checked once
 * parsed); initialize, tools/list, ping, notifications and every other message take none, so a
 * session can always be opened, listed and closed. Over the limit the refusal is left for the MCP
 * handler to deliver (a RATE_LIMITED tool error, mcp/http.ts), with the X-RateLimit-* headers.
 */
export function createToolCallHook(ctx: ServiceContext, internalSecret: string) {
  return async function toolCallHook(req: FastifyRequest, reply: FastifyReply): Promise<void> {
    const op = req.routeOptions.config.op
    const calls = op?.rateLimitInBand ? toolCalls(req.body) : 0
    if (calls === 0 || !req.principal || req.headers[INTERNAL_HEADER] === internalSecret) return
    try {
      setRateHeaders(reply, await takeKeyToken(ctx, req.principal, calls))
    } catch (e) {
      if (!(e instanceof AppError) || e.code !== 'RATE_LIMITED') throw e
      req.rateLimited = e
      const rate = (e.extra as { rate?: RateHeaders }).rate
      if (rate) setRateHeaders(reply, rate)
    }
  }
}

/**
 * A `key_or_session` request goes the key way when its bearer looks like an API key (`erm_…`, then
 * checked as one) or when it carries no credential at all (401 MISSING_CREDENTIALS, as a key route);
 * a session JWT (bearer or cookie) goes the session way.
 */
function presentsKey(req: FastifyRequest): boolean {
  const bearer = bearerOf(req)
  if (bearer !== null) return bearer.startsWith('erm_')
  return cookieOf(req, SESSION_COOKIE) === null
}

const SAFE_METHODS: ReadonlySet<string> = new Set(['GET', 'HEAD', 'OPTIONS'])

/** The CSRF cookie: readable by the page (not HttpOnly), sent back in the X-CSRF-Token header. */
export const CSRF_COOKIE = 'erm3_csrf'

/**
 * The CSRF token of a session: an HMAC keyed by the session JWT itself, so only a page that was
 * handed it at sign-in (or can read the HttpOnly cookie, which a page cannot) knows it, and a
 * token planted by another site never matches.
 */
export function csrfTokenFor(sessionJwt: string): string {
  return createHmac('sha256', sessionJwt).update('erm3-csrf-v1').digest('base64url')
}

function checkCsrf(req: FastifyRequest, sessionJwt: string): void {
  const sent = req.headers['x-csrf-token']
  const want = Buffer.from(csrfTokenFor(sessionJwt))
  const got = Buffer.from(typeof sent === 'string' ? sent : '')
  if (got.length !== want.length || !timingSafeEqual(got, want))
    throw new AppError(
      'FORBIDDEN',
      'A change made with the session cookie needs the X-CSRF-Token header (the value of the erm3_csrf cookie set at sign-in)',
    )
}

/** One cookie of the request (parsed on demand: most requests carry none and need none). */
export function cookieOf(req: FastifyRequest, name: string): string | null {
  const header = req.headers.cookie
  if (!header) return null
  return req.server.parseCookie(header)[name] ?? null
}
