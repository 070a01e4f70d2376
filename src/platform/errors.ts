/**
 * Typed internal errors. Adapters map `code` to wire statuses through one table (contract layer);
 * nothing below the adapters knows about HTTP.
 */
export type ErrorCode =
  | 'INVALID_REQUEST'
  | 'INVALID_INPUT'
  | 'INVALID_TICKER'
  | 'TOO_MANY_TICKERS'
  | 'MISSING_CREDENTIALS'
  | 'INVALID_KEY'
  | 'REVOKED_KEY'
  | 'EXPIRED_KEY'
  | 'INSUFFICIENT_BALANCE'
  | 'SPEND_CAP_REACHED'
  | 'FORBIDDEN'
  | 'ACCOUNT_REQUIRED'
  | 'TICKER_NOT_FOUND'
  | 'NOT_FOUND'
  | 'DATE_NOT_AVAILABLE'
  | 'CONFLICT'
  | 'RELINK_REQUIRED'
  | 'UNSUPPORTED_FORMAT'
  | 'RATE_LIMITED'
  | 'CONCURRENCY_LIMITED'
  | 'MODEL_NOT_READY'
  | 'UNAVAILABLE'
  | 'UPSTREAM_ERROR'
  | 'UPSTREAM_TIMEOUT'
  | 'CONFIG_INVALID'
  | 'INTERNAL'

/** Field-level problems of an invalid request (`errors[]` of the wire error). */
export interface FieldProblem {
  field: string
  message: string
}

export interface AppErrorOptions {
  cause?: unknown
  /** Error-specific members of the wire error (e.g. suggestions, balance_usd). */
  extra?: Record<string, unknown>
  /** For INVALID_REQUEST: which fields are wrong and why. */
  fields?: FieldProblem[]
  /** For limits: seconds until a retry can succeed. */
  retryAfterSeconds?: number
}

/** Errors about the service itself: the only ones whose stack trace is worth capturing. */
const SERVICE_FAULTS: ReadonlySet<ErrorCode> = new Set([
  'INTERNAL',
  'UNAVAILABLE',
  'UPSTREAM_ERROR',
  'UPSTREAM_TIMEOUT',
  'CONFIG_INVALID',
  'MODEL_NOT_READY',
])

export class AppError extends Error {
  readonly code: ErrorCode
  readonly extra: Record<string, unknown>
  readonly fields: FieldProblem[]
  readonly retryAfterSeconds: number | null
  constructor(code: ErrorCode, message: string, options: AppErrorOptions = {}) {
    // A client error (a 429 under load, a bad key) is an answer, not a fault: capturing its
    // stack cost more than the rest of the rejection (profiled), and nobody reads it.
    const limit = Error.stackTraceLimit
    if (!SERVICE_FAULTS.has(code)) Error.stackTraceLimit = 0
    try {
      super(message, options.cause === undefined ? undefined : { cause: options.cause })
    } finally {
      Error.stackTraceLimit = limit
    }
    this.name = 'AppError'
    this.code = code
    this.extra = options.extra ?? {}
    this.fields = options.fields ?? []
    this.retryAfterSeconds = options.retryAfterSeconds ?? null
  }
}

/** Where in a user's file a problem sits. Lines and columns are 1-based, as editors show them. */
export interface InputLocation {
  file: string
  line?: number
  column?: number | string
}

/** A problem in user-supplied input data, pointing at file, line and column. */
export class InputError extends AppError {
  readonly location: InputLocation
  constructor(location: InputLocation, message: string) {
    super('INVALID_INPUT', `${formatLocation(location)}: ${message}`)
    this.name = 'InputError'
    this.location = location
  }
}

export function formatLocation(loc: InputLocation): string {
  let s = loc.file
  if (loc.line !== undefined) s += `:${loc.line}`
  if (loc.column !== undefined)
    s += typeof loc.column === 'number' ? `:${loc.column}` : ` (column ${loc.column})`
  return s
}
