/**
 * The listener's edge: what a node exposed directly to clients does before any route runs.
 *
 * - Deadlines: a request's headers must arrive within ERM3_HEADERS_TIMEOUT_MS and the whole
 *   request, body included, within ERM3_REQUEST_TIMEOUT_MS; a client that stalls is answered
 *   `408 REQUEST_TIMEOUT` and its connection closed. (Only the request is timed: a long answer,
 *   an MCP or chat stream, is not cut.)
 * - A cap on the connections one client address holds open (ERM3_MAX_CONNECTIONS_PER_ADDRESS,
 *   IPv6 counted per network like every per-address limit); one over it is closed at once.
 *   Trusted proxies are not counted: a balancer carries every client's connections.
 * - Malformed HTTP (a request Node's parser refuses, or HTTP/1.1 without Host) is answered with a
 *   problem document like every other client error, not Node's or Fastify's own text.
 * - Served over https (PUBLIC_URL), every response carries Strict-Transport-Security.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { Socket } from 'node:net'
import type { WireErrorCode } from '../contract/errors.ts'
import { API_VERSION } from '../contract/openapi.ts'
import { newRequestId } from '../platform/ids.ts'
import type { ServiceContext } from '../services/context.ts'
import { addressSubject } from '../services/limits.ts'
import { problem } from './problem.ts'
import type { EdgeMetrics } from './prom.ts'

/** One year: browsers keep to https for this long after any https response. */
const HSTS = 'max-age=31536000'

const REASONS: Record<number, string> = { 400: 'Bad Request', 408: 'Request Timeout' }

/** How often Node looks for requests past their deadline: a fraction of the headers deadline. */
const checkEvery = (headersTimeoutMs: number) =>
  Math.max(50, Math.min(30_000, Math.floor(headersTimeoutMs / 4)))

/**
 * The HTTP server Fastify serves on (its serverFactory): the deadlines, the connection cap and
 * HSTS, with `handle` (Fastify) for every well-formed request.
 */
export function createEdgeServer(
  ctx: ServiceContext,
  handle: (req: IncomingMessage, res: ServerResponse) => void,
  opts: { metrics: EdgeMetrics; trusted: (address: string | undefined) => boolean },
): Server {
  const h = ctx.config.http
  const hsts = ctx.config.publicUrl.startsWith('https:')
  const server = createServer(
    {
      headersTimeout: h.headersTimeoutMs,
      requestTimeout: h.requestTimeoutMs,
      connectionsCheckingInterval: checkEvery(h.headersTimeoutMs),
      // Answered below as a problem document, not with Node's empty 400.
      requireHostHeader: false,
    },
    (req, res) => {
      if (hsts) res.setHeader('Strict-Transport-Security', HSTS)
      if (req.headers.host === undefined && req.httpVersion === '1.1') {
        const id = newRequestId()
        const body = JSON.stringify(
          problem(
            ctx.config.publicUrl,
            { url: pathOf(req.url), id },
            'INVALID_REQUEST',
            'An HTTP/1.1 request needs a Host header',
          ),
        )
        res.writeHead(400, { ...problemHeaders(id, body), Connection: 'close' })
        res.end(body)
        return
      }
      handle(req, res)
    },
  )
  server.keepAliveTimeout = h.keepAliveTimeoutMs
  capConnections(ctx, server, opts)
  return server
}

/** The path of a request target, without its query (which may hold a sign-in token). */
function pathOf(url: string | undefined): string {
  const path = (url ?? '/').split('?')[0] ?? '/'
  return path.startsWith('/') ? path : '/'
}

function problemHeaders(id: string, body: string): Record<string, string> {
  return {
    'Content-Type': 'application/problem+json; charset=utf-8',
    'Content-Length': String(Buffer.byteLength(body)),
    'X-Request-ID': id,
    'X-API-Version': API_VERSION,
  }
}

/** Closes a connection beyond `ERM3_MAX_CONNECTIONS_PER_ADDRESS` open ones of its client's subject. */
function capConnections(
  ctx: ServiceContext,
  server: Server,
  opts: { metrics: EdgeMetrics; trusted: (address: string | undefined) => boolean },
): void {
  const max = ctx.config.http.maxConnectionsPerAddress
  if (max === 0) return
  const open = new Map<string, number>()
  let warnedAt = Number.NEGATIVE_INFINITY
  // Node's own listener (the HTTP parser) was added first; a socket closed here never gets to it.
  server.on('connection', (socket: Socket) => {
    const address = socket.remoteAddress
    if (opts.trusted(address)) return
    const subject = addressSubject(ctx.config, address)
    const n = open.get(subject) ?? 0
    if (n >= max) {
      opts.metrics.connectionRefused()
      // One line a minute at most: a flood of refusals must not become a flood of logs.
      if (Date.now() - warnedAt >= 60_000) {
        warnedAt = Date.now()
        ctx.log.warn(
          { subject, max, variable: 'ERM3_MAX_CONNECTIONS_PER_ADDRESS' },
          'connection refused: its client address holds the most connections allowed',
        )
      }
      socket.destroy()
      return
    }
    open.set(subject, n + 1)
    socket.once('close', () => {
      const left = (open.get(subject) ?? 1) - 1
      if (left > 0) open.set(subject, left)
      else open.delete(subject)
    })
  })
}

/**
 * Fastify's clientErrorHandler: what Node's HTTP parser refused (malformed, headers too large) is a
 * `400 INVALID_REQUEST` problem, a request past its deadline a `408 REQUEST_TIMEOUT`; either way the
 * connection is closed, as Node does. A client that reset its connection gets nothing (it is gone).
 * Logged at info without a stack: the client's doing, not the server's.
 */
export function clientErrorHandler(ctx: ServiceContext) {
  const h = ctx.config.http
  const hsts = ctx.config.publicUrl.startsWith('https:')
  return (err: Error & { code?: string }, socket: Socket): void => {
    if (err.code === 'ECONNRESET' || socket.destroyed) return
    const timeout = err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
    const code: WireErrorCode = timeout ? 'REQUEST_TIMEOUT' : 'INVALID_REQUEST'
    const detail = timeout
      ? `The request did not arrive in time: headers within ${h.headersTimeoutMs / 1000} s, the whole request within ${h.requestTimeoutMs / 1000} s`
      : err.code === 'HPE_HEADER_OVERFLOW'
        ? 'The request headers are larger than the server accepts'
        : 'The request is not valid HTTP/1.1'
    const id = newRequestId()
    ctx.log.info(
      { request_id: id, code: err.code },
      timeout ? 'request timed out' : 'malformed request refused',
    )
    if (socket.writable) {
      const p = problem(ctx.config.publicUrl, { url: '/', id }, code, detail)
      const body = JSON.stringify(p)
      const headers = {
        ...problemHeaders(id, body),
        Connection: 'close',
        ...(hsts ? { 'Strict-Transport-Security': HSTS } : {}),
      }
      const head = Object.entries(headers)
        .map(([k, v]) => `${k}: ${v}\r\n`)
        .join('')
      socket.write(`HTTP/1.1 ${p.status} ${REASONS[p.status] ?? ''}\r\n${head}\r\n${body}`)
    }
    socket.destroy()
  }
}
