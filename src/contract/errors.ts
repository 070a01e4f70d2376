import { Type } from 'typebox'
import type { ErrorCode } from '../platform/errors.ts'

/**
 * The closed table of wire errors (docs/decisions/errors.md). Every error response is RFC 9457
 * problem+json with `code` from this table; internal codes map onto it here and nowhere else.
 * Pinned by test/api/contract.test.ts ("the error table").
 */
export const WIRE_ERRORS = {
  INVALID_REQUEST: { status: 400, title: 'Invalid request' },
  TOO_MANY_TICKERS: { status: 400, title: 'Too many tickers' },
  INVALID_TICKER: { status: 400, title: 'Invalid ticker' },
  MISSING_CREDENTIALS: { status: 401, title: 'Missing credentials' },
  INVALID_KEY: { status: 401, title: 'Invalid API key' },
  REVOKED_KEY: { status: 401, title: 'Revoked API key' },
  EXPIRED_KEY: { status: 401, title: 'Expired API key' },
  INSUFFICIENT_BALANCE: { status: 402, title: 'Insufficient balance' },
  SPEND_CAP_REACHED: { status: 402, title: 'Monthly spend cap reached' },
  FORBIDDEN: { status: 403, title: 'Forbidden' },
  ACCOUNT_REQUIRED: { status: 403, title: 'A signed-up account is required' },
  TICKER_NOT_FOUND: { status: 404, title: 'Ticker not found' },
  NOT_FOUND: { status: 404, title: 'Not found' },
  DATE_NOT_AVAILABLE: { status: 404, title: 'Date not available' },
  METHOD_NOT_ALLOWED: { status: 405, title: 'Method not allowed' },
  NOT_ACCEPTABLE: { status: 406, title: 'Not acceptable' },
  REQUEST_TIMEOUT: { status: 408, title: 'Request timeout' },
  CONFLICT: { status: 409, title: 'Conflict' },
  RELINK_REQUIRED: { status: 409, title: 'Brokerage connection needs re-linking' },
  PAYLOAD_TOO_LARGE: { status: 413, title: 'Payload too large' },
  UNSUPPORTED_MEDIA_TYPE: { status: 415, title: 'Unsupported media type' },
  RATE_LIMITED: { status: 429, title: 'Rate limit exceeded' },
  CONCURRENCY_LIMITED: { status: 429, title: 'Too many concurrent requests' },
  INTERNAL: { status: 500, title: 'Internal error' },
  UPSTREAM_ERROR: { status: 502, title: 'Upstream provider error' },
  MODEL_NOT_READY: { status: 503, title: 'Model not ready' },
  UNAVAILABLE: { status: 503, title: 'Service unavailable' },
  UPSTREAM_TIMEOUT: { status: 504, title: 'Upstream provider timed out' },
} as const

export type WireErrorCode = keyof typeof WIRE_ERRORS

/** Internal error codes that are not wire codes, and the wire code each becomes. */
const INTERNAL_TO_WIRE: Partial<Record<ErrorCode, WireErrorCode>> = {
  INVALID_INPUT: 'INVALID_REQUEST',
  UNSUPPORTED_FORMAT: 'NOT_ACCEPTABLE',
  CONFIG_INVALID: 'INTERNAL',
}

export function wireCode(code: ErrorCode | WireErrorCode): WireErrorCode {
  if (code in WIRE_ERRORS) return code as WireErrorCode
  return INTERNAL_TO_WIRE[code as ErrorCode] ?? 'INTERNAL'
}

/** `type` member: the URI of the error's documentation (served at /docs/errors). */
export function errorTypeUri(publicUrl: string, code: WireErrorCode): string {
  return `${publicUrl}/docs/errors#${code.toLowerCase()}`
}

export const problemSchema = Type.Object(
  {
    type: Type.String({ format: 'uri' }),
    title: Type.String(),
    status: Type.Integer(),
    detail: Type.String(),
    instance: Type.String(),
    code: Type.Union(Object.keys(WIRE_ERRORS).map((c) => Type.Literal(c))),
    request_id: Type.String(),
    errors: Type.Optional(Type.Array(Type.Object({ field: Type.String(), message: Type.String() }))),
    retry_after_seconds: Type.Optional(Type.Integer()),
    suggestions: Type.Optional(Type.Array(Type.String())),
    balance_usd: Type.Optional(Type.Number()),
    required_usd: Type.Optional(Type.Number()),
    top_up_url: Type.Optional(Type.String()),
    top_up_method: Type.Optional(
      Type.Literal('POST', {
        description: 'With card top-ups (Stripe): POST {"amount_usd": …} to top_up_url for a checkout_url',
      }),
    ),
    min_top_up_usd: Type.Optional(Type.Number()),
  },
  { $id: 'Problem', additionalProperties: true },
)

/** OAuth endpoints answer errors in the RFC 6749 form instead. */
export const oauthErrorSchema = Type.Object(
  { error: Type.String(), error_description: Type.Optional(Type.String()) },
  { $id: 'OAuthError' },
)
