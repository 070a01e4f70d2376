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

function formatLocation(loc: InputLocation): string {
  let s = loc.file
  if (loc.line !== undefined) s += `:${loc.line}`
  if (loc.column !== undefined)
    s += typeof loc.column === 'number' ? `:${loc.column}` : ` (column ${loc.column})`
  return s
}

/** Socket-level failures: the peer is down, restarting or unreachable. */
const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENOTCONN',
])
/** SQLSTATE: class 08 (connection exception) and 57P01–57P03 (shutdown, crash, starting up). */
const UNAVAILABLE_SQLSTATE = /^(08...|57P0[123])$/

/**
 * True when `err` says a backing service (the database) is unreachable or restarting rather than
 * that the request or the code is wrong: such a failure is a 503 to retry, not a 500. Matches
 * Node's socket error codes, SQLSTATE connection classes and the driver's lost-connection message.
 */
export function isBackendUnavailable(err: unknown): boolean {
  if (!err || typeof err !== 'object') return false
  const e = err as { code?: unknown; message?: unknown; errors?: unknown }
  if (typeof e.code === 'string' && (NETWORK_CODES.has(e.code) || UNAVAILABLE_SQLSTATE.test(e.code)))
    return true
  // An AggregateError of failed connection attempts (IPv4 and IPv6) carries codes on its members.
  if (Array.isArray(e.errors) && e.errors.length > 0 && e.errors.every(isBackendUnavailable)) return true
  return (
    typeof e.message === 'string' &&
    /^Connection terminated|Client has encountered a connection error/.test(e.message)
  )
}
