/**
 * @erm3/client: a typed client of the erm3 API for Node, Deno, Bun and browsers. No dependencies
 * beyond `fetch`. Every operation of the API is typed from the same OpenAPI document the server
 * serves (./operations.ts is generated from it).
 */
import { errorOf, retryAfterMs } from './errors.ts'
import { type AgentMeta, OPERATIONS, type OperationId, type Requests, type Responses } from './operations.ts'

export { Erm3Error, retryAfterMs } from './errors.ts'
export * from './operations.ts'

export interface ClientOptions {
  /** The server's origin, e.g. `https://erm3.example.com`. */
  baseUrl: string
  /** An API key (`erm_agent_live_…`). */
  apiKey?: string
  /** An OAuth access token, or a function giving the current one (called before every request). */
  token?: string | (() => string | Promise<string>)
  /** Per call, until the answer is read (default 60 s); a download's stream is not cut by it. */
  timeoutMs?: number
  /** Retries after 429/503 answers, and after connection failures of idempotent calls (default 2). */
  maxRetries?: number
  /** A Retry-After longer than this is not waited for: the error is thrown (default 30 s). */
  maxRetryDelayMs?: number
  /** Headers sent with every request (e.g. a User-Agent). */
  headers?: Record<string, string>
  fetch?: typeof fetch
}

export interface CallOptions {
  signal?: AbortSignal
  timeoutMs?: number
  maxRetries?: number
  headers?: Record<string, string>
}

/** Where the numbers come from: the lineage headers of a data answer (null where absent). */
export interface Lineage {
  modelVersion: string | null
  dataAsOf: string | null
  factorSetId: string | null
  universeSize: number | null
  /** `synthetic; seed=42`, `imported` or `vendor; sources=…`. */
  dataset: string | null
  tickerNote: string | null
}

/** What every answer carries besides its data. */
export interface AnswerMeta {
  status: number
  headers: Headers
  requestId: string | null
  /** What the call cost (`_agent.cost_usd`, or the X-API-Cost-USD header); null for unmetered calls. */
  costUsd: number | null
  /** The balance after the call, when the server says it (`_agent.balance_usd` or an X-Balance-* header). */
  balanceUsd: number | null
  /** HIT, MISS or BYPASS (metered calls). */
  cacheStatus: string | null
  lineage: Lineage
  /** The `_agent` block of a metered JSON answer. */
  agent: (AgentMeta & { balance_usd?: number }) | null
}

export interface Answer<T> extends AnswerMeta {
  data: T
}

/** A Parquet or CSV answer: read it whole (`bytes`, `text`) or as a stream (`body`), once. */
export interface Download extends AnswerMeta {
  format: 'parquet' | 'csv'
  filename: string | null
  body: ReadableStream<Uint8Array>
  bytes(): Promise<Uint8Array>
  text(): Promise<string>
}

type Args<K extends OperationId> =
  Record<string, never> extends Requests[K]
    ? [input?: Requests[K], options?: CallOptions]
    : [input: Requests[K], options?: CallOptions]

/** Operations answering pages (`limit`/`cursor` in, `next_cursor`/`total` out). */
export type PagedOperationId = {
  [K in OperationId]: 'cursor' extends keyof NonNullable<RequestPartsOf<K>> ? K : never
}[OperationId]

type RequestPartsOf<K extends OperationId> =
  | (Requests[K] extends { query?: infer Q } ? Q : never)
  | (Requests[K] extends { body?: infer B } ? B : never)

type Input = { params?: Record<string, unknown>; query?: Record<string, unknown>; body?: unknown }
type Op = (typeof OPERATIONS)[OperationId]

const DEFAULTS = { timeoutMs: 60_000, maxRetries: 2, maxRetryDelayMs: 30_000 }

/** A number from a header or field, or null. */
function num(v: unknown): number | null {
  if (v === null || v === undefined || v === '') return null
  const n = Number(v)
  return Number.isFinite(n) ? n : null
}

function lineageOf(h: Headers): Lineage {
  return {
    modelVersion: h.get('x-risk-model-version'),
    dataAsOf: h.get('x-data-as-of'),
    factorSetId: h.get('x-factor-set-id'),
    universeSize: num(h.get('x-universe-size')),
    dataset: h.get('x-dataset'),
    tickerNote: h.get('x-ticker-note'),
  }
}

function balanceHeader(h: Headers): number | null {
  for (const [k, v] of h) if (k.startsWith('x-balance')) return num(v)
  return null
}

function metaOf(res: Response, json: unknown): AnswerMeta {
  const agent =
    json !== null && typeof json === 'object' && '_agent' in json
      ? ((json as { _agent: AnswerMeta['agent'] })._agent ?? null)
      : null
  return {
    status: res.status,
    headers: res.headers,
    requestId: res.headers.get('x-request-id'),
    costUsd: num(agent?.cost_usd ?? res.headers.get('x-api-cost-usd')),
    balanceUsd: num(agent?.balance_usd) ?? balanceHeader(res.headers),
    cacheStatus: agent?.cache_status ?? res.headers.get('x-cache-status'),
    lineage: lineageOf(res.headers),
    agent,
  }
}

/** A query value as the server reads it: lists comma-separated, booleans as words. */
function queryValue(v: unknown): string {
  return Array.isArray(v) ? v.map(String).join(',') : String(v)
}

function urlOf(baseUrl: string, id: OperationId, op: Op, input: Input): URL {
  const path = op.path.replace(/\{(\w+)\}/g, (_, name: string) => {
    const v = input.params?.[name]
    if (v === undefined || v === null) throw new TypeError(`${id}: the path parameter ${name} is required`)
    return encodeURIComponent(String(v))
  })
  const url = new URL(path, baseUrl.endsWith('/') ? baseUrl : `${baseUrl}/`)
  url.pathname = url.pathname.replace(/\/+/g, '/')
  for (const [k, v] of Object.entries(input.query ?? {}))
    if (v !== undefined && v !== null) url.searchParams.set(k, queryValue(v))
  return url
}

function bodyOf(op: Op, input: Input): { body?: string; type?: string } {
  if (!op.body || input.body === undefined) return {}
  if (op.body.mediaType === 'application/x-www-form-urlencoded') {
    const form = new URLSearchParams()
    for (const [k, v] of Object.entries(input.body as Record<string, unknown>))
      if (v !== undefined && v !== null) form.set(k, queryValue(v))
    return { body: form.toString(), type: op.body.mediaType }
  }
  return { body: JSON.stringify(input.body), type: 'application/json' }
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason)
    const t = setTimeout(() => {
      signal.removeEventListener('abort', stop)
      resolve()
    }, ms)
    const stop = () => {
      clearTimeout(t)
      reject(signal.reason)
    }
    signal.addEventListener('abort', stop, { once: true })
  })
}

/** Exponential backoff with jitter: about 0.5 s, 1 s, 2 s … capped at 8 s. */
function backoffMs(attempt: number): number {
  return Math.min(8000, 500 * 2 ** attempt) * (0.5 + Math.random() / 2)
}

/** A deadline for one call, combined with the caller's signal; `done` stops the clock. */
function deadline(ms: number, outer?: AbortSignal): { signal: AbortSignal; done(): void } {
  const c = new AbortController()
  const t = setTimeout(() => c.abort(new DOMException(`no answer within ${ms} ms`, 'TimeoutError')), ms)
  const onAbort = () => c.abort(outer?.reason)
  if (outer?.aborted) c.abort(outer.reason)
  outer?.addEventListener('abort', onAbort, { once: true })
  return {
    signal: c.signal,
    done() {
      clearTimeout(t)
      outer?.removeEventListener('abort', onAbort)
    },
  }
}

export class Erm3Client {
  readonly options: Required<Omit<ClientOptions, 'apiKey' | 'token'>> &
    Pick<ClientOptions, 'apiKey' | 'token'>
  /** One method per operation: `client.ops.getMetrics({ params: { ticker: 'AAPL' } })`. */
  readonly ops: { [K in OperationId]: (...args: Args<K>) => Promise<Answer<Responses[K]>> }

  constructor(options: ClientOptions) {
    this.options = { ...DEFAULTS, headers: {}, fetch: globalThis.fetch.bind(globalThis), ...options }
    const ops: Record<string, unknown> = {}
    for (const id of Object.keys(OPERATIONS) as OperationId[])
      ops[id] = (input?: Input, options?: CallOptions) => this.#json(id, input ?? {}, options ?? {})
    this.ops = ops as Erm3Client['ops']
  }

  /** Calls an operation and reads its answer (JSON parsed, a text document as a string). */
  call<K extends OperationId>(id: K, ...args: Args<K>): Promise<Answer<Responses[K]>> {
    const [input, options] = args
    return this.#json(id, (input ?? {}) as Input, options ?? {}) as Promise<Answer<Responses[K]>>
  }

  /**
   * The answer of a data operation as a Parquet or CSV file (`format` is sent in the query, or in
   * the body of a POST that takes it there). The timeout covers the headers; the body streams.
   */
  async download<K extends OperationId>(
    id: K,
    input: Requests[K],
    options: CallOptions & { format: 'parquet' | 'csv' },
  ): Promise<Download> {
    const op = OPERATIONS[id] as Op
    const i = { ...(input as Input) }
    if ((op.query as readonly string[]).includes('format')) i.query = { ...i.query, format: options.format }
    else if (op.body?.fields?.includes('format' as never))
      i.body = { ...(i.body as Record<string, unknown>), format: options.format }
    else throw new TypeError(`${id} has no Parquet or CSV form`)
    const { res, done } = await this.#send(id, i, options)
    done()
    if (!res.ok) throw errorOf(res, await res.text())
    const body = res.body ?? new ReadableStream<Uint8Array>()
    const filename = /filename="([^"]+)"/.exec(res.headers.get('content-disposition') ?? '')?.[1] ?? null
    return {
      ...metaOf(res, null),
      format: options.format,
      filename,
      body,
      bytes: async () => new Uint8Array(await new Response(body).arrayBuffer()),
      text: () => new Response(body).text(),
    }
  }

  /**
   * Every page of a cursor-paged operation, first to last: sends `cursor` = the previous page's
   * `next_cursor` with the same other parameters until it is null.
   */
  async *paginate<K extends PagedOperationId>(
    id: K,
    input: Requests[K],
    options: CallOptions = {},
  ): AsyncGenerator<Answer<Responses[K]>> {
    const op = OPERATIONS[id] as Op
    const inBody = !(op.query as readonly string[]).includes('cursor')
    let cursor: string | null = null
    do {
      const i = { ...(input as Input) }
      if (cursor !== null) {
        if (inBody) i.body = { ...(i.body as Record<string, unknown>), cursor }
        else i.query = { ...i.query, cursor }
      }
      const page = (await this.#json(id, i, options)) as Answer<Responses[K]>
      yield page
      cursor = ((page.data as { next_cursor?: string | null }).next_cursor ?? null) as string | null
    } while (cursor !== null)
  }

  async #json(id: OperationId, input: Input, options: CallOptions): Promise<Answer<unknown>> {
    const { res, done } = await this.#send(id, input, options)
    try {
      const text = await res.text()
      if (!res.ok) throw errorOf(res, text)
      const isJson = /json/.test(res.headers.get('content-type') ?? '')
      const data =
        res.status === 204 || res.status === 304 || text === '' ? null : isJson ? JSON.parse(text) : text
      return { ...metaOf(res, data), data }
    } finally {
      done()
    }
  }

  async #headers(type: string | undefined, extra: Record<string, string> | undefined): Promise<Headers> {
    const h = new Headers({ ...this.options.headers, ...extra })
    const { apiKey, token } = this.options
    const credential = apiKey ?? (typeof token === 'function' ? await token() : token)
    if (credential && !h.has('authorization')) h.set('authorization', `Bearer ${credential}`)
    if (type) h.set('content-type', type)
    return h
  }

  /**
   * Sends the request, retrying what is safe to retry: a 429 or 503 answer (refused before any
   * work, so nothing was charged) after its Retry-After or a backoff; a connection failure only
   * for an idempotent method: a POST whose connection failed may have been answered and charged.
   */
  async #send(id: OperationId, input: Input, options: CallOptions): Promise<{ res: Response; done(): void }> {
    const op = OPERATIONS[id] as Op
    const url = urlOf(this.options.baseUrl, id, op, input)
    const { body, type } = bodyOf(op, input)
    const maxRetries = options.maxRetries ?? this.options.maxRetries
    const clock = deadline(options.timeoutMs ?? this.options.timeoutMs, options.signal)
    try {
      for (let attempt = 0; ; attempt++) {
        const headers = await this.#headers(type, options.headers)
        let res: Response
        try {
          res = await this.options.fetch(url, { method: op.method, headers, body, signal: clock.signal })
        } catch (err) {
          if (clock.signal.aborted || !op.idempotent || attempt >= maxRetries) throw err
          await sleep(backoffMs(attempt), clock.signal)
          continue
        }
        if ((res.status === 429 || res.status === 503) && attempt < maxRetries) {
          const wait = retryAfterMs(res.headers.get('retry-after')) ?? backoffMs(attempt)
          if (wait <= this.options.maxRetryDelayMs) {
            await res.body?.cancel()
            await sleep(wait, clock.signal)
            continue
          }
        }
        return { res, done: clock.done }
      }
    } catch (err) {
      clock.done()
      throw err
    }
  }
}
