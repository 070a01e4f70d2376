/**
 * The one HTTP client every source uses: a configurable base URL, a request-rate ceiling and a
 * concurrency bound per source, and retries with exponential backoff and full jitter on what a
 * retry can fix (429 honouring Retry-After, 5xx, a connection reset, a body cut short, a
 * timeout). Authentication failures and other 4xx are answered at once as a SourceError; the
 * caller decides what a 404 means.
 */
import { AppError } from '../../platform/errors.ts'

export interface HttpClientOptions {
  /** The source's name, for messages (`tiingo`, `sec`). */
  source: string
  /** Base URL; request paths are resolved against it (a trailing `/` is added when missing). */
  baseUrl: string
  /** Headers sent with every request (User-Agent, Authorization). Never logged. */
  headers?: Record<string, string>
  /** Query parameters sent with every request (an `apiKey`, a `token`). Never logged. */
  query?: Record<string, string>
  /** Ceiling on requests started per second (0: none). */
  ratePerSecond?: number
  /** Requests in flight at once. */
  concurrency?: number
  /** Retries after the first attempt. */
  maxRetries?: number
  /** Per attempt, until the whole body has arrived. */
  timeoutMs?: number
  /** Backoff base and ceiling (milliseconds). */
  backoffMs?: number
  maxBackoffMs?: number
  /** For tests: the clock and the sleep, and the random draw of the jitter. */
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>
  random?: () => number
}

/** A failed call: `status` is the last HTTP status (0: no answer), `retryable` whether it was. */
export class SourceError extends AppError {
  readonly source: string
  readonly status: number
  constructor(source: string, status: number, message: string, cause?: unknown) {
    const code = status === 401 || status === 403 ? 'CONFIG_INVALID' : 'UPSTREAM_ERROR'
    super(code, `${source}: ${message}`, cause === undefined ? {} : { cause })
    this.source = source
    this.status = status
  }
}

export interface HttpAnswer {
  status: number
  headers: Headers
  body: Uint8Array
  /** The URL without the query (safe to log: keys travel in the query for some vendors). */
  where: string
}

export interface GetOptions {
  query?: Record<string, string | number | boolean | undefined>
  accept?: string
  signal?: AbortSignal
  /** Statuses answered to the caller instead of thrown (e.g. [404]). */
  allow?: readonly number[]
}

const RETRYABLE = new Set([408, 425, 429, 500, 502, 503, 504])

export function abortableSleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason)
    const t = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort)
      resolve()
    }, ms)
    const onAbort = () => {
      clearTimeout(t)
      reject(signal?.reason)
    }
    signal?.addEventListener('abort', onAbort, { once: true })
  })
}

/** Retry-After in milliseconds: delta-seconds or an HTTP date; null when absent or unreadable. */
export function retryAfterMs(value: string | null, now: number = Date.now()): number | null {
  if (value === null) return null
  const v = value.trim()
  if (/^\d+$/.test(v)) return Number(v) * 1000
  const at = Date.parse(v)
  return Number.isNaN(at) ? null : Math.max(0, at - now)
}

export class HttpClient {
  readonly source: string
  private readonly base: URL
  private readonly o: Required<Omit<HttpClientOptions, 'headers' | 'query'>> & {
    headers: Record<string, string>
    query: Record<string, string>
  }
  private inFlight = 0
  private readonly waiting: (() => void)[] = []
  private nextStart = 0
  /** Requests sent (every attempt counts: vendors bill attempts). */
  calls = 0
  retries = 0

  constructor(opts: HttpClientOptions) {
    this.source = opts.source
    this.base = new URL(opts.baseUrl.endsWith('/') ? opts.baseUrl : `${opts.baseUrl}/`)
    this.o = {
      ratePerSecond: 0,
      concurrency: 4,
      maxRetries: 6,
      timeoutMs: 60_000,
      backoffMs: 500,
      maxBackoffMs: 60_000,
      sleep: abortableSleep,
      random: Math.random,
      ...opts,
      headers: opts.headers ?? {},
      query: opts.query ?? {},
    }
  }

  /** GET `path` (relative to the base URL, or absolute for a vendor's `next_url`). */
  async get(path: string, g: GetOptions = {}): Promise<HttpAnswer> {
    const url = new URL(path.replace(/^\//, ''), this.base)
    for (const [k, v] of Object.entries(this.o.query))
      if (!url.searchParams.has(k)) url.searchParams.set(k, v)
    for (const [k, v] of Object.entries(g.query ?? {}))
      if (v !== undefined) url.searchParams.set(k, String(v))
    const where = `${url.origin}${url.pathname}`
    let lastError = 'no attempt'
    let lastStatus = 0
    for (let attempt = 0; ; attempt++) {
      let waitMs: number | null = null
      try {
        const a = await this.once(url, where, g)
        if (a.status < 300 || g.allow?.includes(a.status)) return a
        lastStatus = a.status
        lastError = `HTTP ${a.status} from ${where}${statusHint(a)}`
        if (!RETRYABLE.has(a.status)) throw new SourceError(this.source, a.status, lastError)
        waitMs = retryAfterMs(a.headers.get('retry-after'))
      } catch (e) {
        if (e instanceof SourceError) throw e
        if (g.signal?.aborted) throw g.signal.reason
        lastStatus = 0
        lastError = `${(e as Error).message} (${where})`
      }
      if (attempt >= this.o.maxRetries)
        throw new SourceError(this.source, lastStatus, `${lastError}; gave up after ${attempt + 1} attempts`)
      this.retries++
      const backoff = Math.min(this.o.maxBackoffMs, this.o.backoffMs * 2 ** attempt) * this.o.random()
      await this.o.sleep(Math.max(waitMs ?? 0, backoff), g.signal)
    }
  }

  async getJson<T = unknown>(path: string, g: GetOptions = {}): Promise<T | null> {
    const a = await this.get(path, { accept: 'application/json', ...g })
    if (a.status >= 300) return null
    try {
      return JSON.parse(new TextDecoder().decode(a.body)) as T
    } catch (e) {
      throw new SourceError(this.source, a.status, `unreadable JSON from ${a.where}: ${(e as Error).message}`)
    }
  }

  async getText(path: string, g: GetOptions = {}): Promise<string | null> {
    const a = await this.get(path, g)
    return a.status >= 300 ? null : new TextDecoder().decode(a.body)
  }

  private async once(url: URL, where: string, g: GetOptions): Promise<HttpAnswer> {
    await this.acquire(g.signal)
    try {
      await this.pace(g.signal)
      this.calls++
      const timeout = AbortSignal.timeout(this.o.timeoutMs)
      const signal = g.signal ? AbortSignal.any([g.signal, timeout]) : timeout
      const res = await fetch(url, {
        headers: { ...this.o.headers, ...(g.accept ? { accept: g.accept } : {}) },
        signal,
        redirect: 'follow',
      })
      const body = new Uint8Array(await res.arrayBuffer())
      const declared = res.headers.get('content-length')
      const encoded = res.headers.get('content-encoding')
      if (declared !== null && !encoded && Number(declared) !== body.length)
        throw new Error(`body cut short: ${body.length} of ${declared} bytes`)
      return { status: res.status, headers: res.headers, body, where }
    } finally {
      this.release()
    }
  }

  /** Spaces request starts by 1/ratePerSecond across every caller of this client. */
  private async pace(signal?: AbortSignal): Promise<void> {
    if (this.o.ratePerSecond <= 0) return
    const now = performance.now()
    const start = Math.max(now, this.nextStart)
    this.nextStart = start + 1000 / this.o.ratePerSecond
    if (start > now) await this.o.sleep(start - now, signal)
  }

  private async acquire(signal?: AbortSignal): Promise<void> {
    if (this.inFlight < this.o.concurrency) {
      this.inFlight++
      return
    }
    await new Promise<void>((resolve, reject) => {
      const go = () => {
        signal?.removeEventListener('abort', onAbort)
        resolve()
      }
      const onAbort = () => {
        const i = this.waiting.indexOf(go)
        if (i >= 0) this.waiting.splice(i, 1)
        reject(signal?.reason)
      }
      signal?.addEventListener('abort', onAbort, { once: true })
      this.waiting.push(go)
    })
  }

  private release(): void {
    const next = this.waiting.shift()
    if (next) next()
    else this.inFlight--
  }
}

/** A short reason from an error body (JSON `message`/`detail`/`error`), never the whole body. */
function statusHint(a: HttpAnswer): string {
  const text = new TextDecoder().decode(a.body.subarray(0, 2000))
  try {
    const j = JSON.parse(text) as Record<string, unknown>
    const m = j.message ?? j.detail ?? j.error ?? j.status
    if (typeof m === 'string') return `: ${m.slice(0, 200)}`
  } catch {
    // not JSON: a status line is enough
  }
  return ''
}
