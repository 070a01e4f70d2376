import type { IncomingMessage } from 'node:http'
import { fileURLToPath } from 'node:url'
import type { Server } from '@modelcontextprotocol/sdk/server/index.js'
import { SSEServerTransport } from '@modelcontextprotocol/sdk/server/sse.js'
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js'
import { isInitializeRequest, isJSONRPCRequest } from '@modelcontextprotocol/sdk/types.js'
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { Transport } from '../contract/client.ts'
import type { RequestPart } from '../contract/operations.ts'
import type { ServiceContext } from '../services/context.ts'
import type { Principal } from '../services/identity/keys.ts'
import { createMcpServer, RATE_REFUSAL, type RateRefusal } from './server.ts'
import { SESSION_IDLE_MS, sessionRegistry } from './sessions.ts'

const SWEEP_MS = 60_000

/** A session of the older SSE transport: its event stream, and so the session, lives on one node. */
interface SseSession {
  id: string
  transport: SSEServerTransport
  server: Server
  /** Sessions belong to an account; any of its keys (or a refreshed OAuth token) may continue one. */
  accountId: string
  environment: Principal['environment']
  lastSeen: number
}

type AuthedRequest = IncomingMessage & {
  auth?: { token: string; clientId: string; scopes: string[]; extra?: Record<string, unknown> }
}

/**
 * Rate limits over MCP count tool calls, not protocol messages (the auth hook takes one token
 * per tools/call, and none for initialize, lists, ping, notifications, the streams or DELETE; see
 * api/auth-hook.ts). Over the limit, a POST made only of tools/call requests is answered in MCP,
 * each call a tool error `RATE_LIMITED: … Retry after N s.` with nothing run or charged: the agent
 * sees the code and the wait in the tool result, as it does for a 402, where a 429 on the POST would
 * reach it (through the SDK clients) as a transport exception of the client program. A batch
 * mixing tool calls with other messages gets the HTTP 429 problem with Retry-After, as REST does.
 * Throws that 429; returns what the tool calls must say, or null when within the limit.
 */
function rateRefusal(req: FastifyRequest): RateRefusal | null {
  const refused = req.rateLimited
  if (!refused) return null
  const messages: unknown[] = Array.isArray(req.body) ? req.body : [req.body]
  const toolCalls = messages.every((m) => isJSONRPCRequest(m) && m.method === 'tools/call')
  if (messages.length === 0 || !toolCalls) throw refused
  return { detail: refused.message, retryAfterSeconds: refused.retryAfterSeconds ?? 1 }
}

function bearer(req: FastifyRequest): string {
  const h = req.headers.authorization ?? ''
  return h.replace(/^Bearer\s+/i, '').trim()
}

/** Takes the response over from Fastify, keeping the headers set so far (request id, rate limits). */
function hijack(reply: FastifyReply): void {
  for (const [k, v] of Object.entries(reply.getHeaders()))
    if (v !== undefined) reply.raw.setHeader(k, v as string)
  reply.hijack()
}

function jsonRpcError(reply: FastifyReply, status: number, message: string): FastifyReply {
  return reply
    .code(status)
    .header('Content-Type', 'application/json')
    .send(JSON.stringify({ jsonrpc: '2.0', error: { code: -32000, message }, id: null }))
}

/**
 * The MCP transports as route handlers: Streamable HTTP at /mcp (primary) and SSE at /mcp/sse
 * with its message endpoint. The auth hook has authenticated each message and rate limited each
 * tool call; a tool call then goes through `internal` as the REST call it stands for.
 */
export function createMcpHandlers(ctx: ServiceContext, internal: Transport, dataNotice?: () => string) {
  const b = sessionBook(ctx, internal, dataNotice)
  const { sse, registry, sweeper, close } = b
  return {
    /** Sessions this node knows of (Streamable HTTP ones it opened or served, and its SSE streams). */
    sessionCount: () => registry.size + sse.size,
    /** This module: the handlers of the /mcp operations live here (src/api/app.ts, the route-file rule). */
    file: fileURLToPath(import.meta.url),
    handlers: withOriginCheck(ctx, { ...streamableHandlers(b), ...sseHandlers(b) }),
    close() {
      clearInterval(sweeper)
      for (const s of sse.values()) close(s)
    },
  }
}

/**
 * The MCP specification: servers must validate `Origin` (DNS rebinding). A browser page may call
 * /mcp only from PUBLIC_URL's origin or one of ERM3_MCP_ALLOWED_ORIGINS; any other Origin is
 * refused 403 before anything runs. Clients that are not browsers send no Origin and pass.
 */
function withOriginCheck<
  H extends Record<string, (req: FastifyRequest<never>, reply: FastifyReply) => unknown>,
>(ctx: ServiceContext, handlers: H): H {
  const allowed = new Set([new URL(ctx.config.publicUrl).origin, ...ctx.config.mcpAllowedOrigins])
  const out: Record<string, unknown> = {}
  for (const [name, h] of Object.entries(handlers))
    out[name] = (req: FastifyRequest<never>, reply: FastifyReply) => {
      const origin = req.headers.origin
      if (origin !== undefined && !allowed.has(origin))
        return jsonRpcError(
          reply,
          403,
          `Origin ${origin} may not call this MCP server (allowed: ${[...allowed].join(', ')}; see ERM3_MCP_ALLOWED_ORIGINS)`,
        )
      return h(req, reply)
    }
  return out as H
}

type SessionBook = ReturnType<typeof sessionBook>

/**
 * What every handler needs: the Streamable HTTP sessions (shared by every node, sessions.ts), the
 * SSE sessions of this node, a new MCP server, the request's credentials handed to the SDK.
 * Idle sessions are swept.
 */
function sessionBook(ctx: ServiceContext, internal: Transport, dataNotice?: () => string) {
  const { now } = ctx
  const registry = sessionRegistry(ctx)
  const sse = new Map<string, SseSession>()
  const principal = (req: FastifyRequest) => req.principal as Principal
  const newServer = () =>
    createMcpServer({
      transport: internal,
      bearerOf: (t) => t ?? null,
      ...(dataNotice ? { dataNotice } : {}),
    })
  const attachAuth = (req: FastifyRequest, refused: RateRefusal | null = null) => {
    const p = principal(req)
    ;(req.raw as AuthedRequest).auth = {
      token: bearer(req),
      clientId: p.keyId,
      scopes: ['mcp:read'],
      ...(refused ? { extra: { [RATE_REFUSAL]: refused } } : {}),
    }
  }
  const findSse = (req: FastifyRequest, id: string | undefined): SseSession | null => {
    const s = id ? sse.get(id) : undefined
    const p = principal(req)
    if (!s || s.accountId !== p.accountId || s.environment !== p.environment) return null
    s.lastSeen = now()
    return s
  }
  const close = (s: SseSession) => {
    sse.delete(s.id)
    void s.transport.close().catch(() => undefined)
    void s.server.close().catch(() => undefined)
  }
  const sweeper = setInterval(() => {
    const cutoff = now() - SESSION_IDLE_MS
    for (const s of sse.values()) if (s.lastSeen < cutoff) close(s)
    registry.sweep()
  }, SWEEP_MS)
  sweeper.unref()
  return { sse, registry, now, principal, newServer, attachAuth, findSse, close, sweeper }
}

/** The session a Streamable HTTP request names, when it is one of the caller's (else null). */
async function namedSession(b: SessionBook, req: FastifyRequest): Promise<string | null> {
  const sid = req.headers['mcp-session-id']
  if (typeof sid !== 'string') return null
  return (await b.registry.find(sid, b.principal(req))) ? sid : null
}

/**
 * Streamable HTTP at /mcp: POST messages (the first one initialises), GET the stream, DELETE the
 * session. Every request is served by a new MCP server on a stateless transport (the
 * specification's stateless mode), the session being only the shared record of who opened it:
 * so any node serves any session, and nothing waits on one node's memory.
 */
function streamableHandlers(b: SessionBook) {
  const { registry, principal } = b
  return {
    mcpPost: async (req: FastifyRequest, reply: FastifyReply) => {
      const refused = rateRefusal(req)
      const named = typeof req.headers['mcp-session-id'] === 'string'
      const sid = await namedSession(b, req)
      if (named && !sid) return jsonRpcError(reply, 404, 'Unknown or expired MCP session: initialise again')
      if (!sid) {
        if (!isInitializeRequest(req.body))
          return jsonRpcError(reply, 400, 'No session: send an initialize request first')
        reply.header('Mcp-Session-Id', await registry.open(principal(req)))
      }
      return serveOnce(b, req, reply, refused)
    },
    mcpGet: async (req: FastifyRequest, reply: FastifyReply) => {
      if (!(await namedSession(b, req))) return jsonRpcError(reply, 404, 'Unknown or expired MCP session')
      return serveOnce(b, req, reply, null)
    },
    // Ends the session on every node. A session is the account's own: another account's id is a
    // 404 exactly like an unknown one (as on POST and GET), so an id can neither be ended nor
    // probed from outside the account that opened it.
    mcpDelete: async (req: FastifyRequest, reply: FastifyReply) => {
      const sid = await namedSession(b, req)
      if (!sid) return jsonRpcError(reply, 404, 'Unknown or expired MCP session')
      await registry.close(sid)
      return reply.code(200).header('Content-Type', 'application/json').send('{}')
    },
  }
}

/** One request on a new server and stateless transport, both closed when the response is. */
async function serveOnce(
  b: SessionBook,
  req: FastifyRequest,
  reply: FastifyReply,
  refused: RateRefusal | null,
): Promise<FastifyReply> {
  const server = b.newServer()
  const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined })
  await server.connect(transport)
  reply.raw.once('close', () => {
    void transport.close().catch(() => undefined)
    void server.close().catch(() => undefined)
  })
  b.attachAuth(req, refused)
  hijack(reply)
  await transport.handleRequest(req.raw, reply.raw, req.body)
  return reply
}

/** The SSE transport: the stream at /mcp/sse, and the messages posted to /mcp/messages. */
function sseHandlers(b: SessionBook) {
  const { sse, now, principal, newServer, attachAuth, findSse, close } = b
  return {
    mcpSse: async (req: FastifyRequest, reply: FastifyReply) => {
      const p = principal(req)
      hijack(reply)
      const transport = new SSEServerTransport('/mcp/messages', reply.raw)
      const server = newServer()
      const s: SseSession = {
        id: transport.sessionId,
        transport,
        server,
        accountId: p.accountId,
        environment: p.environment,
        lastSeen: now(),
      }
      sse.set(s.id, s)
      transport.onclose = () => sse.delete(s.id)
      reply.raw.on('close', () => close(s))
      await server.connect(transport)
      return reply
    },
    mcpMessages: async (
      req: FastifyRequest<{ Querystring: RequestPart<'mcpMessages', 'querystring'> }>,
      reply: FastifyReply,
    ) => {
      const refused = rateRefusal(req)
      const { sessionId } = req.query
      const s = findSse(req, sessionId)
      if (!s) return jsonRpcError(reply, 404, 'Unknown or expired MCP session')
      attachAuth(req, refused)
      hijack(reply)
      await s.transport.handlePostMessage(req.raw, reply.raw, req.body)
      return reply
    },
  }
}
