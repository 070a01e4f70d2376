import type { FastifyReply, FastifyRequest } from 'fastify'
import { type MappedError, setRateHeaders } from './problem.ts'

/**
 * Errors of operations declared `errorStyle: 'oauth'` (token, revocation, registration) in the
 * RFC 6749 §5.2 form `{error, error_description}`, from the same mapping as problem+json. OAuth
 * codes come from the service (`extra.oauth_error`); anything else maps by wire code here.
 */
const BY_WIRE_CODE: Record<string, string> = {
  RATE_LIMITED: 'rate_limited',
  CONCURRENCY_LIMITED: 'rate_limited',
  INTERNAL: 'server_error',
  UNAVAILABLE: 'temporarily_unavailable',
  MODEL_NOT_READY: 'temporarily_unavailable',
}

/** RFC 6749 §5.2: error_description is limited to %x20-21 / %x23-5B / %x5D-7E. */
function description(s: string): string {
  return s.replace(/["\\]/g, "'").replace(/[^\x20-\x7e]/g, ' ')
}

export function sendOAuthError(req: FastifyRequest, reply: FastifyReply, m: MappedError): FastifyReply {
  const p = m.problem
  const fallback =
    req.routeOptions.config.op?.id === 'oauthRegister' ? 'invalid_client_metadata' : 'invalid_request'
  const error = typeof p.oauth_error === 'string' ? p.oauth_error : (BY_WIRE_CODE[p.code] ?? fallback)
  if (m.retryAfterSeconds !== null) reply.header('Retry-After', String(m.retryAfterSeconds))
  if (m.rate) setRateHeaders(reply, m.rate)
  return reply
    .code(p.status)
    .header('Content-Type', 'application/json; charset=utf-8')
    .header('Cache-Control', 'no-store')
    .header('Pragma', 'no-cache')
    .send(JSON.stringify({ error, error_description: description(p.detail) }))
}
