import type { Static, TSchema } from 'typebox'
import { openApiPath } from './operation.ts'
import { OPS, type OperationId } from './operations.ts'

/**
 * A typed client derived from the contract: one `call` for every operation, its inputs and
 * success body typed from the same schemas the server validates with. The transport is
 * pluggable (fetch against a URL, or an in-process injector in tests).
 */
export interface TransportRequest {
  method: string
  url: string
  headers: Record<string, string>
  body?: string
}

interface TransportResponse {
  status: number
  headers: Record<string, string>
  body: string
}

export type Transport = (req: TransportRequest) => Promise<TransportResponse>

type Maybe<S> = S extends TSchema ? Static<S> : never
type Op<K extends OperationId> = (typeof OPS)[K]

export type CallInput<K extends OperationId> = {
  params?: Op<K> extends { params: infer P } ? Maybe<P> : never
  query?: Op<K> extends { querystring: infer Q } ? Partial<Maybe<Q>> : never
  body?: Op<K> extends { body: infer B } ? Maybe<B> : never
  headers?: Record<string, string>
  /** Bearer credential for this call (overrides the client's). */
  key?: string | null
}

/** The success body of an operation, as its response schema types it (the dashboard's types). */
export type ResponseOf<K extends OperationId> = Static<Op<K>['response']>

export interface CallResult<K extends OperationId> {
  status: number
  headers: Record<string, string>
  text: string
  /** Parsed JSON (success body or problem), or null for non-JSON responses. */
  json: unknown
  /** The success body, typed; throws when the status is not the operation's success status. */
  ok(): ResponseOf<K>
}

export function fetchTransport(baseUrl: string): Transport {
  return async (req) => {
    const res = await fetch(new URL(req.url, baseUrl), {
      method: req.method,
      headers: req.headers,
      body: req.body,
    })
    const headers: Record<string, string> = {}
    res.headers.forEach((v, k) => {
      headers[k] = v
    })
    return { status: res.status, headers, body: await res.text() }
  }
}

export function createClient(transport: Transport, opts: { key?: string } = {}) {
  return {
    async call<K extends OperationId>(id: K, input: CallInput<K> = {}): Promise<CallResult<K>> {
      const op = OPS[id]
      let path = openApiPath(op.path)
      for (const [k, v] of Object.entries((input.params ?? {}) as Record<string, unknown>))
        path = path.replace(`{${k}}`, encodeURIComponent(String(v)))
      const qs = new URLSearchParams()
      for (const [k, v] of Object.entries((input.query ?? {}) as Record<string, unknown>))
        if (v !== undefined) qs.set(k, String(v))
      const headers: Record<string, string> = { ...(input.headers ?? {}) }
      const key = input.key === undefined ? opts.key : input.key
      if (key) headers.authorization = `Bearer ${key}`
      let body: string | undefined
      if (input.body !== undefined) {
        body = JSON.stringify(input.body)
        headers['content-type'] ??= 'application/json'
      }
      const q = qs.toString()
      const res = await transport({ method: op.method, url: q ? `${path}?${q}` : path, headers, body })
      const isJson = /json/.test(res.headers['content-type'] ?? '')
      const json = isJson && res.body !== '' ? (JSON.parse(res.body) as unknown) : null
      return {
        status: res.status,
        headers: res.headers,
        text: res.body,
        json,
        ok() {
          if (res.status !== op.status)
            throw new Error(`${id}: expected ${op.status}, got ${res.status}: ${res.body}`)
          return json as Static<Op<K>['response']>
        },
      }
    },
  }
}

export type Erm3Client = ReturnType<typeof createClient>
