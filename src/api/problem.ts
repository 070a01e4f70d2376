import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify'
import { errorTypeUri, WIRE_ERRORS, type WireErrorCode, wireCode } from '../contract/errors.ts'
import { AppError, type FieldProblem, isBackendUnavailable } from '../platform/errors.ts'

export interface Problem {
  type: string
  title: string
  status: number
  detail: string
  instance: string
  code: WireErrorCode
  request_id: string
  [member: string]: unknown
}

/** The problem document of `code` for a request (`url` and `id` are all it reads of one). */
export function problem(
  publicUrl: string,
  req: Pick<FastifyRequest, 'url' | 'id'>,
  code: WireErrorCode,
  detail: string,
  extra: Record<string, unknown> = {},
): Problem {
  const e = WIRE_ERRORS[code]
  return {
    type: errorTypeUri(publicUrl, code),
    title: e.title,
    status: e.status,
    detail,
    instance: req.url.split('?')[0] ?? req.url,
    code,
    request_id: String(req.id),
    ...extra,
  }
}

const TICKER_MESSAGE = "must be a ticker: 1–12 characters of A–Z, 0–9, '.', '-' (blanks and case ignored)"

type AjvError = NonNullable<FastifyError['validation']>[number]

/**
 * A union of literals (`anyOf` of `const`, nullable or not) fails with one "must be equal to
 * constant" per branch and a final "must match a schema in anyOf": fold those into one error
 * listing the allowed values. Other errors pass through; `enum` errors list their values too.
 */
function foldUnions(errors: readonly AjvError[]): AjvError[] {
  const folded = new Set<AjvError>()
  const out: AjvError[] = []
  // Outermost first (ajv reports a nested union before the union around it).
  for (const e of [...errors].reverse()) {
    if (e.keyword !== 'anyOf' || folded.has(e)) continue
    const branches = errors.filter(
      (x) => x !== e && x.instancePath === e.instancePath && x.schemaPath.startsWith(`${e.schemaPath}/`),
    )
    const allowed: string[] = []
    for (const b of branches) {
      const p = b.params as { allowedValue?: unknown; allowedValues?: unknown[]; type?: unknown }
      if (b.keyword === 'const') allowed.push(String(p.allowedValue))
      else if (b.keyword === 'enum') allowed.push(...(p.allowedValues ?? []).map(String))
      else if (b.keyword === 'type' && p.type === 'null') allowed.push('null')
      else if (b.keyword !== 'anyOf') {
        allowed.length = 0
        break
      }
    }
    if (allowed.length === 0) continue
    for (const b of branches) folded.add(b)
    folded.add(e)
    out.push({ ...e, message: `must be one of: ${[...new Set(allowed)].join(', ')}` })
  }
  const rest = errors
    .filter((e) => !folded.has(e))
    .map((e) =>
      e.keyword === 'enum'
        ? {
            ...e,
            message: `must be one of: ${((e.params as { allowedValues?: unknown[] }).allowedValues ?? []).join(', ')}`,
          }
        : e,
    )
  return [...out, ...rest]
}

/** Turns an ajv error list (Fastify validation) into `errors[]` members. */
function fieldProblems(err: FastifyError): FieldProblem[] {
  const where = err.validationContext ?? 'request'
  return foldUnions(err.validation ?? []).map((v) => {
    const params = v.params as Record<string, unknown>
    const path = v.instancePath.replace(/^\//, '').replaceAll('/', '.')
    const missing = typeof params.missingProperty === 'string' ? params.missingProperty : null
    const extra = typeof params.additionalProperty === 'string' ? params.additionalProperty : null
    const field = [where, path, missing ?? extra].filter((x) => x).join('.')
    if (extra) return { field, message: 'unknown field' }
    // The ticker pattern (schemas.ts TickerParam) in words rather than as a regular expression.
    if (v.keyword === 'pattern' && /(^|\.)tickers?(\.\d+)?$/.test(field))
      return {
        field,
        message: TICKER_MESSAGE,
      }
    return { field, message: v.message ?? 'invalid' }
  })
}

const FASTIFY_CODES: Record<string, WireErrorCode> = {
  FST_ERR_CTP_INVALID_MEDIA_TYPE: 'UNSUPPORTED_MEDIA_TYPE',
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: 'INVALID_REQUEST',
  FST_ERR_CTP_BODY_TOO_LARGE: 'PAYLOAD_TOO_LARGE',
  FST_ERR_CTP_EMPTY_JSON_BODY: 'INVALID_REQUEST',
  FST_ERR_CTP_INVALID_JSON_BODY: 'INVALID_REQUEST',
}

const BY_STATUS: Record<number, WireErrorCode> = {
  400: 'INVALID_REQUEST',
  401: 'INVALID_KEY',
  403: 'FORBIDDEN',
  404: 'NOT_FOUND',
  405: 'METHOD_NOT_ALLOWED',
  406: 'NOT_ACCEPTABLE',
  409: 'CONFLICT',
  413: 'PAYLOAD_TOO_LARGE',
  415: 'UNSUPPORTED_MEDIA_TYPE',
  429: 'RATE_LIMITED',
  502: 'UPSTREAM_ERROR',
  503: 'UNAVAILABLE',
  504: 'UPSTREAM_TIMEOUT',
}

export interface MappedError {
  problem: Problem
  retryAfterSeconds: number | null
  rate: { limit: number; remaining: number; resetEpochS: number } | null
  /** Unexpected: log it with the stack. */
  internal: boolean
}

/** The one mapping from any thrown value to a wire problem. Never leaks exception text in a 500. */
export function mapError(publicUrl: string, req: FastifyRequest, err: unknown): MappedError {
  if (err instanceof AppError) {
    const code = wireCode(err.code)
    const { rate, ...extra } = err.extra as { rate?: MappedError['rate'] } & Record<string, unknown>
    if (err.fields.length) extra.errors = err.fields
    if (err.retryAfterSeconds !== null) extra.retry_after_seconds = err.retryAfterSeconds
    const internal = code === 'INTERNAL'
    const detail = internal
      ? 'An internal error occurred; it has been logged with this request_id'
      : err.message
    return {
      problem: problem(publicUrl, req, code, detail, extra),
      retryAfterSeconds: err.retryAfterSeconds,
      rate: rate ?? null,
      internal,
    }
  }
  const fe = err as FastifyError
  if (fe && Array.isArray(fe.validation)) {
    const fields = fieldProblems(fe)
    const detail = fields.map((f) => `${f.field}: ${f.message}`).join('; ') || 'The request is not valid'
    // A ticker that fails the pattern is the specification's INVALID_TICKER, like an unknown shape.
    const code = fields.some((f) => f.message.startsWith(TICKER_MESSAGE))
      ? 'INVALID_TICKER'
      : 'INVALID_REQUEST'
    return {
      problem: problem(publicUrl, req, code, detail, { errors: fields }),
      retryAfterSeconds: null,
      rate: null,
      internal: false,
    }
  }
  if (isBackendUnavailable(err)) {
    // The database is down or restarting: a 503 to retry, never a 500. A debit commits before its
    // response, so a call that fails this way was charged only if its debit committed (at most once).
    return {
      problem: problem(
        publicUrl,
        req,
        'UNAVAILABLE',
        'A backing service (the database) is unreachable or restarting; retry shortly',
        { retry_after_seconds: 1 },
      ),
      retryAfterSeconds: 1,
      rate: null,
      internal: true, // logged with its cause: the operator needs to know
    }
  }
  const status = typeof fe?.statusCode === 'number' ? fe.statusCode : 500
  const code = (fe?.code && FASTIFY_CODES[fe.code]) || (status < 500 ? BY_STATUS[status] : undefined)
  if (code && status < 500) {
    const extra = code === 'INVALID_REQUEST' ? { errors: [{ field: 'body', message: fe.message }] } : {}
    return {
      problem: problem(publicUrl, req, code, fe.message, extra),
      retryAfterSeconds: null,
      rate: null,
      internal: false,
    }
  }
  return {
    problem: problem(
      publicUrl,
      req,
      'INTERNAL',
      'An internal error occurred; it has been logged with this request_id',
    ),
    retryAfterSeconds: null,
    rate: null,
    internal: true,
  }
}

/**
 * X-RateLimit-* of the limit a request was counted against (docs/decisions/rate-limits.md; Reset
 * in epoch seconds).
 */
export function setRateHeaders(reply: FastifyReply, h: NonNullable<MappedError['rate']>): void {
  reply.header('X-RateLimit-Limit', String(h.limit))
  reply.header('X-RateLimit-Remaining', String(h.remaining))
  reply.header('X-RateLimit-Reset', String(h.resetEpochS))
}

/** The 401s of a bearer token that was presented but is not (or no longer) valid. */
const BAD_TOKEN: ReadonlySet<string> = new Set(['INVALID_KEY', 'REVOKED_KEY', 'EXPIRED_KEY'])

export function sendProblem(reply: FastifyReply, m: MappedError): FastifyReply {
  // RFC 6750 §3 / RFC 9728 §5.1: tell a client (an MCP client in particular) where to start OAuth.
  if (m.problem.status === 401) {
    const resource = m.problem.type.replace(/\/docs\/errors#.*$/, '')
    // A credential was presented and refused (unknown, revoked, expired): RFC 6750 §3.1
    // invalid_token, so a client refreshes or re-authorises instead of retrying. None presented:
    // no error code (§3.1), only where to start.
    const refused = BAD_TOKEN.has(m.problem.code)
      ? `, error="invalid_token", error_description="${m.problem.title}"`
      : ''
    reply.header(
      'WWW-Authenticate',
      `Bearer realm="erm3", resource_metadata="${resource}/.well-known/oauth-protected-resource"${refused}`,
    )
  }
  if (m.retryAfterSeconds !== null) reply.header('Retry-After', String(m.retryAfterSeconds))
  if (m.rate) setRateHeaders(reply, m.rate)
  return reply
    .code(m.problem.status)
    .header('Content-Type', 'application/problem+json; charset=utf-8')
    .send(JSON.stringify(m.problem))
}
