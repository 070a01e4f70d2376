/**
 * The loopback HTTP server under every fake market-data vendor (tiingo.ts, polygon.ts): it counts
 * and records requests and can be told to misbehave before the vendor's own answer.
 *
 *   const s = await startVendorServer((req) => ({ body: { ok: true } }))
 *   s.failNext(2, { kind: 'status', status: 429, retryAfter: 3 })  // the next 2 calls: 429
 *   s.failNext(1, { kind: 'truncate' })   // Content-Length larger than the body, socket closed
 *   s.calls; s.requests[0].url; await s.close()
 *
 * Faults queue in order: each call takes the first pending one, then the route answers.
 */
import { createServer, type IncomingHttpHeaders } from 'node:http'
import type { AddressInfo } from 'node:net'

export type Fault =
  | { kind: 'status'; status: number; retryAfter?: number; body?: unknown }
  | { kind: 'truncate' }

export interface FakeRequest {
  /** Path and query as received (the fake is local: keys may appear here). */
  url: URL
  headers: IncomingHttpHeaders
}

export interface Reply {
  status?: number
  /** A JSON value, or raw bytes with `contentType`. */
  body: unknown
  contentType?: string
}

export interface VendorServer {
  /** `http://127.0.0.1:PORT` (no trailing slash). */
  url: string
  /** Requests received, faults included. */
  readonly calls: number
  readonly requests: FakeRequest[]
  failNext(n: number, fault: Fault): void
  close(): Promise<void>
}

function encode(r: Reply): { bytes: Buffer; type: string } {
  if (r.body instanceof Uint8Array)
    return { bytes: Buffer.from(r.body), type: r.contentType ?? 'application/octet-stream' }
  return { bytes: Buffer.from(JSON.stringify(r.body)), type: 'application/json' }
}

export async function startVendorServer(
  route: (req: FakeRequest, base: string) => Reply | Promise<Reply>,
): Promise<VendorServer> {
  const faults: Fault[] = []
  const requests: FakeRequest[] = []
  let base = ''
  const server = createServer((req, res) => {
    const r: FakeRequest = { url: new URL(req.url ?? '/', base), headers: req.headers }
    requests.push(r)
    const fault = faults.shift()
    if (fault?.kind === 'status') {
      const { bytes } = encode({ body: fault.body ?? { message: `fault ${fault.status}` } })
      const headers: Record<string, string> = { 'content-type': 'application/json' }
      if (fault.retryAfter !== undefined) headers['retry-after'] = String(fault.retryAfter)
      res.writeHead(fault.status, headers).end(bytes)
      return
    }
    Promise.resolve(route(r, base)).then(
      (reply) => {
        const { bytes, type } = encode(reply)
        if (fault?.kind === 'truncate') {
          res.writeHead(reply.status ?? 200, {
            'content-type': type,
            'content-length': String(bytes.length + 100),
          })
          res.write(bytes.subarray(0, Math.floor(bytes.length / 2)), () => res.socket?.destroy())
          return
        }
        res.writeHead(reply.status ?? 200, { 'content-type': type, 'content-length': String(bytes.length) })
        res.end(bytes)
      },
      (e: Error) => res.writeHead(500, { 'content-type': 'text/plain' }).end(e.message),
    )
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  return {
    url: base,
    get calls() {
      return requests.length
    },
    requests,
    failNext(n, fault) {
      for (let i = 0; i < n; i++) faults.push(fault)
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  }
}

/** The rows of `all` on one page of `size`, from a `cursor` query value (an offset). */
export function page<T>(all: readonly T[], url: URL, size: number): { rows: T[]; next: number | null } {
  const at = Number(url.searchParams.get('cursor') ?? '0')
  const rows = all.slice(at, at + size)
  return { rows, next: at + size < all.length ? at + size : null }
}
