/**
 * Typed internal errors. Adapters map `code` to wire statuses through one table (contract layer);
 * nothing below the adapters knows about HTTP.
 */
export type ErrorCode =
  | 'INVALID_REQUEST'
  | 'INVALID_INPUT'
  | 'NOT_FOUND'
  | 'CONFLICT'
  | 'UNSUPPORTED_FORMAT'
  | 'CONFIG_INVALID'
  | 'INTERNAL'

export class AppError extends Error {
  readonly code: ErrorCode
  constructor(code: ErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options)
    this.name = 'AppError'
    this.code = code
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
