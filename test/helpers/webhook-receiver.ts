import { createHmac, timingSafeEqual } from 'node:crypto'
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'

export interface Received {
  headers: IncomingHttpHeaders
  body: string
  at: number
}

/** A webhook receiver on loopback: records every request, answers `status` (or hangs when null). */
export async function startReceiver(): Promise<{
  url: string
  received: Received[]
  status: number | null
  /** Resolves at the next request. */
  next(): Promise<Received>
  close(): Promise<void>
}> {
  const received: Received[] = []
  let waiters: ((r: Received) => void)[] = []
  const state = { status: 200 as number | null }
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      const r = { headers: req.headers, body: Buffer.concat(chunks).toString('utf8'), at: Date.now() }
      received.push(r)
      const w = waiters
      waiters = []
      for (const f of w) f(r)
      if (state.status === null) return // hang: the sender must time out
      res.writeHead(state.status, { 'content-type': 'text/plain' }).end('ok')
    })
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}/hook`,
    received,
    get status() {
      return state.status
    },
    set status(s: number | null) {
      state.status = s
    },
    next: () => new Promise((r) => waiters.push(r)),
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections()
        server.close(() => r())
      }),
  }
}

/**
 * An independent verifier of X-Erm3-Signature (the docs' recipe, written against node:crypto, not
 * the server's code): `t=<unix>,v1=<hex HMAC-SHA256(secret, t + "." + body)>`, fresh within 5 minutes.
 */
export function verifySignature(
  secret: string,
  header: string | undefined,
  rawBody: string,
  nowSeconds: number,
): { ok: boolean; why?: string } {
  if (!header) return { ok: false, why: 'no header' }
  const parts = Object.fromEntries(header.split(',').map((p) => p.split('=', 2) as [string, string]))
  const t = Number(parts.t)
  if (!Number.isInteger(t) || !parts.v1) return { ok: false, why: 'malformed' }
  if (Math.abs(nowSeconds - t) > 300) return { ok: false, why: 'stale' }
  const expected = createHmac('sha256', secret).update(`${t}.${rawBody}`).digest()
  const given = Buffer.from(parts.v1, 'hex')
  if (given.length !== expected.length || !timingSafeEqual(given, expected))
    return { ok: false, why: 'mismatch' }
  return { ok: true }
}
