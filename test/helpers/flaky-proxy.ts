import { once } from 'node:events'
import { createServer, request, type Server } from 'node:http'

/** What the proxy does with one request: pass it on, answer it itself, or pass it on and then cut the connection. */
export type ProxyAction = 'pass' | 'hang' | 'cut-after' | { status: number; headers?: Record<string, string> }

/**
 * A loopback HTTP proxy in front of a real server, scripted per request: a test makes it answer
 * 429/503 itself, hang, or forward a request and then drop the client's connection before the
 * answer (so the server did the work, and may have charged it). Counts what it saw.
 */
export async function flakyProxy(
  target: string,
  script: (method: string, url: string, n: number) => ProxyAction,
): Promise<{ url: string; seen: string[]; close(): Promise<void> }> {
  const seen: string[] = []
  const server: Server = createServer((req, res) => {
    const n = seen.push(`${req.method} ${req.url}`)
    const action = script(String(req.method), String(req.url), n)
    if (action === 'hang') return
    if (typeof action === 'object') {
      res.writeHead(action.status, { 'content-type': 'application/problem+json', ...action.headers })
      res.end(
        JSON.stringify({
          code: action.status === 429 ? 'RATE_LIMITED' : 'UNAVAILABLE',
          status: action.status,
        }),
      )
      return
    }
    const up = request(
      new URL(String(req.url), target),
      { method: req.method, headers: req.headers },
      (r) => {
        if (action === 'cut-after') {
          r.resume()
          r.on('end', () => req.socket.destroy())
          return
        }
        res.writeHead(r.statusCode ?? 502, r.headers)
        r.pipe(res)
      },
    )
    req.pipe(up)
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const addr = server.address() as { port: number }
  return {
    url: `http://127.0.0.1:${addr.port}`,
    seen,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  }
}
