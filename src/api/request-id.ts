import type { IncomingMessage } from 'node:http'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { newRequestId } from '../platform/ids.ts'
import { INTERNAL_HEADER } from './auth-hook.ts'

/** A request or correlation id a client (or this process) may name: a short token, nothing else. */
const REQUEST_ID_RE = /^[A-Za-z0-9._:-]{1,64}$/

/**
 * The client's own id for its request — `X-Correlation-ID`, else `X-Request-ID` — when it is a
 * sane token: echoed back as `X-Correlation-ID` and logged, never used as erm3's request id.
 */
export function correlationIdOf(req: IncomingMessage): string | null {
  for (const name of ['x-correlation-id', 'x-request-id']) {
    const given = req.headers[name]
    if (typeof given === 'string' && REQUEST_ID_RE.test(given)) return given
  }
  return null
}

/**
 * erm3's request id, always generated here: it is the request id of the ledger entry, the
 * problem's `request_id` and `X-Request-ID`, so no client can choose it (two requests sending the
 * same `X-Request-ID` are two ids). The one exception is a call this process makes to itself (an
 * MCP tool, a chat tool call, marked by `internalSecret`), which names the id it derived from its
 * own request's.
 */
export function requestIdGenerator(internalSecret: string): (req: IncomingMessage) => string {
  return (req) => {
    const given = req.headers['x-request-id']
    return req.headers[INTERNAL_HEADER] === internalSecret &&
      typeof given === 'string' &&
      REQUEST_ID_RE.test(given)
      ? given
      : newRequestId()
  }
}

/** erm3's request id, and the client's own (when it sent a sane one) as the correlation id. */
export function idHeaders(req: FastifyRequest, reply: FastifyReply): void {
  reply.header('X-Request-ID', String(req.id))
  const correlation = correlationIdOf(req.raw)
  if (correlation !== null) reply.header('X-Correlation-ID', correlation)
}
