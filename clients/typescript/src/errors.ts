/** An error answer of the API: an RFC 9457 problem (or an OAuth error), with its code. */
export class Erm3Error extends Error {
  override readonly name = 'Erm3Error'
  constructor(
    /** HTTP status. */
    readonly status: number,
    /** The problem's `code` (`INSUFFICIENT_BALANCE`, `TICKER_NOT_FOUND` …), or the OAuth `error`. */
    readonly code: string,
    message: string,
    /** The whole problem document (`suggestions`, `errors`, `balance_usd`, `top_up_url` …). */
    readonly problem: Record<string, unknown>,
    /** The X-Request-ID of the answer: quote it when reporting a problem. */
    readonly requestId: string | null,
    /** Seconds the server asked to wait (Retry-After), when it said. */
    readonly retryAfterSeconds: number | null,
  ) {
    super(message)
  }
}

/** The wait a Retry-After header asks for, in milliseconds: delta-seconds or an HTTP date. */
export function retryAfterMs(value: string | null, now = Date.now()): number | null {
  if (value === null || value.trim() === '') return null
  if (/^\d+(\.\d+)?$/.test(value.trim())) return Number(value) * 1000
  const at = Date.parse(value)
  return Number.isNaN(at) ? null : Math.max(0, at - now)
}

/** The Erm3Error of an answer that is not a success (its body already read as text). */
export function errorOf(res: Response, text: string): Erm3Error {
  let problem: Record<string, unknown> = {}
  try {
    const parsed = JSON.parse(text) as unknown
    if (parsed !== null && typeof parsed === 'object') problem = parsed as Record<string, unknown>
  } catch {
    problem = { detail: text.slice(0, 500) }
  }
  const code = String(problem.code ?? problem.error ?? `HTTP_${res.status}`)
  const detail = String(problem.detail ?? problem.error_description ?? problem.title ?? res.statusText)
  const wait = retryAfterMs(res.headers.get('retry-after'))
  return new Erm3Error(
    res.status,
    code,
    `${code}: ${detail}`,
    problem,
    res.headers.get('x-request-id'),
    wait === null ? null : wait / 1000,
  )
}
