/**
 * The loopback HTTP server under the reference-data fakes (sec.ts, treasury.ts, fred.ts,
 * holdings.ts): listens on 127.0.0.1, port 0, records every request (path with query, headers,
 * arrival time in milliseconds of performance.now()) and lets a test queue faults — a 429 with
 * Retry-After, a 5xx, any status — that answer the next matching requests before the route does.
 */
import { createServer, type IncomingHttpHeaders } from 'node:http'
import type { AddressInfo } from 'node:net'

export interface RecordedRequest {
  /** Path and query as sent (`/files/company_tickers_exchange.json`). */
  path: string
  headers: IncomingHttpHeaders
  at: number
}

export interface FakeAnswer {
  status?: number
  body: string | Uint8Array
  type?: string
  headers?: Record<string, string>
}

export interface Fault {
  status: number
  /** Retry-After header value (delta-seconds or an HTTP date). */
  retryAfter?: string
  /** How many matching requests get it (default 1). */
  times?: number
  /** Only requests whose path matches (default: every request). */
  match?: RegExp
  body?: string
}

export type Route = (url: URL, headers: IncomingHttpHeaders) => FakeAnswer | null

export interface FakeServer {
  /** `http://127.0.0.1:PORT` (no trailing slash). */
  url: string
  requests: RecordedRequest[]
  fail(fault: Fault): void
  close(): Promise<void>
}

export async function startFake(route: Route): Promise<FakeServer> {
  const requests: RecordedRequest[] = []
  const faults: (Required<Omit<Fault, 'retryAfter'>> & { retryAfter?: string })[] = []
  const server = createServer((req, res) => {
    const path = req.url ?? '/'
    requests.push({ path, headers: req.headers, at: performance.now() })
    const url = new URL(path, 'http://127.0.0.1')
    const f = faults.find((x) => x.times > 0 && x.match.test(url.pathname + url.search))
    let a: FakeAnswer | null
    if (f) {
      f.times--
      a = { status: f.status, body: f.body, headers: f.retryAfter ? { 'retry-after': f.retryAfter } : {} }
    } else a = route(url, req.headers) ?? { status: 404, body: 'Not Found' }
    const body = typeof a.body === 'string' ? Buffer.from(a.body) : Buffer.from(a.body)
    res.writeHead(a.status ?? 200, {
      'content-type': a.type ?? 'text/plain',
      'content-length': String(body.length),
      ...a.headers,
    })
    res.end(body)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    fail(fault) {
      faults.push({
        status: fault.status,
        times: fault.times ?? 1,
        match: fault.match ?? /./,
        body: fault.body ?? `HTTP ${fault.status}`,
        ...(fault.retryAfter === undefined ? {} : { retryAfter: fault.retryAfter }),
      })
    },
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections()
        server.close((e) => (e ? reject(e) : resolve()))
      }),
  }
}

export const json = (v: unknown): FakeAnswer => ({ body: JSON.stringify(v), type: 'application/json' })
