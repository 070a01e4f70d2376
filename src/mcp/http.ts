import type { IncomingMessage } from 'node:http'
import { fileURLToPath } from 'node:url'
import type { Server } from '@modelcontextprotocol/sdk/server/index.js'
import { SSEServerTransport } from '@modelcontextprotocol/sdk/server/sse.js'
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js'
import { isInitializeRequest, isJSONRPCRequest } from '@modelcontextprotocol/sdk/types.js'
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { Transport } from '../contract/client.ts'
import type { RequestPart } from '../contract/operations.ts'
import { newId } from '../platform/ids.ts'
import type { Principal } from '../services/identity/keys.ts'
import { createMcpServer, RATE_REFUSAL, type RateRefusal } from './server.ts'

/** An idle session is closed after this (clients re-initialise). */
const SESSION_IDLE_MS = 30 * 60_000
const SWEEP_MS = 60_000

interface Session {
  id: string
  transport: StreamableHTTPServerTransport | SSEServerTransport
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
 * Rate limits over MCP. They are enforced in one place, the auth hook: one token per MCP message,
 * none for the REST call a tool makes inside. Over the limit, only the way the refusal is said
 * depends on the message. A POST made only of tools/call requests is answered in MCP, each call a
 * tool error `RATE_LIMITED: … Retry after N s.` with nothing run or charged: the agent sees the
 * code and the wait in the tool result, as it does for a 402, where a 429 on the POST would reach
 * it (through the SDK clients) as a transport exception of the client program. Any other message
 * (initialize, lists, resources, notifications) gets the HTTP 429 problem with Retry-After, as
 * REST does, and so do the streams and DELETE, whose operations are not `rateLimitInBand`.
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
 * with its message endpoint. The auth hook has authenticated and rate limited each message; a
 * tool call then goes through `internal` as the REST call it stands for.
 */
export function createMcpHandlers(
  internal: Transport,
  now: () => number = Date.now,
  dataNotice?: () => string,
) {
  const b = sessionBook(internal, now, dataNotice)
  const { sessions, sweeper, close } = b
  return {
    sessions,
    /** This module: the handlers of the /mcp operations live here (src/api/app.ts, the route-file rule). */
    file: fileURLToPath(import.meta.url),
    handlers: { ...streamableHandlers(b), ...sseHandlers(b) },
    close() {
      clearInterval(sweeper)
      for (const s of sessions.values()) close(s)
    },
  }
}

type SessionBook = ReturnType<typeof sessionBook>

/**
 * The open sessions, each bound to the account and environment that opened it, and what every
 * handler needs: a new MCP server, the request's credentials handed to the SDK, a session looked
 * up (another account's is not found), a session closed. Idle sessions are swept.
 */
function sessionBook(internal: Transport, now: () => number, dataNotice?: () => string) {
  const sessions = new Map<string, Session>()
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
  const find = (req: FastifyRequest, id: string | undefined): Session | null => {
    const s = id ? sessions.get(id) : undefined
    const p = principal(req)
    if (!s || s.accountId !== p.accountId || s.environment !== p.environment) return null
    s.lastSeen = now()
    return s
  }
  const close = (s: Session) => {
    sessions.delete(s.id)
    void s.transport.close().catch(() => undefined)
    void s.server.close().catch(() => undefined)
  }
  const sweeper = setInterval(() => {
    const cutoff = now() - SESSION_IDLE_MS
    for (const s of sessions.values()) if (s.lastSeen < cutoff) close(s)
  }, SWEEP_MS)
  sweeper.unref()
  return { sessions, now, principal, newServer, attachAuth, find, close, sweeper }
}

/** Streamable HTTP at /mcp: POST messages (the first one initialises), GET the stream, DELETE the session. */
function streamableHandlers(b: SessionBook) {
  const { attachAuth, find, close } = b
  return {
    mcpPost: async (req: FastifyRequest, reply: FastifyReply) => {
      const refused = rateRefusal(req)
      const sid = req.headers['mcp-session-id']
      const s = typeof sid === 'string' ? find(req, sid) : null
      if (typeof sid === 'string' && !s)
        return jsonRpcError(reply, 404, 'Unknown or expired MCP session: initialise again')
      if (!s) {
        if (!isInitializeRequest(req.body))
          return jsonRpcError(reply, 400, 'No session: send an initialize request first')
        return openSession(b, req, reply)
      }
      attachAuth(req, refused)
      hijack(reply)
      await (s.transport as StreamableHTTPServerTransport).handleRequest(req.raw, reply.raw, req.body)
      return reply
    },
    mcpGet: async (req: FastifyRequest, reply: FastifyReply) => {
      const sid = req.headers['mcp-session-id']
      const s = typeof sid === 'string' ? find(req, sid) : null
      if (!s || !(s.transport instanceof StreamableHTTPServerTransport))
        return jsonRpcError(reply, 404, 'Unknown or expired MCP session')
      attachAuth(req)
      hijack(reply)
      await s.transport.handleRequest(req.raw, reply.raw)
      return reply
    },
    // Ends the session and frees its transport and server. A session is the account's own:
    // another account's id is a 404 exactly like an unknown one (as on POST and GET), so an id
    // can neither be ended nor probed from outside the account that opened it.
    mcpDelete: async (req: FastifyRequest, reply: FastifyReply) => {
      const sid = req.headers['mcp-session-id']
      const s = typeof sid === 'string' ? find(req, sid) : null
      if (!s) return jsonRpcError(reply, 404, 'Unknown or expired MCP session')
      close(s)
      return reply.code(200).header('Content-Type', 'application/json').send('{}')
    },
  }
}

/** An initialize request without a session: a new server and transport, registered once initialised. */
async function openSession(b: SessionBook, req: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
  const { sessions, principal, newServer, attachAuth, now } = b
  const p = principal(req)
  const server = newServer()
  const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
    sessionIdGenerator: () => newId('mcp'),
    onsessioninitialized: (id) => {
      sessions.set(id, {
        id,
        transport,
        server,
        accountId: p.accountId,
        environment: p.environment,
        lastSeen: now(),
      })
    },
  })
  transport.onclose = () => {
    if (transport.sessionId) sessions.delete(transport.sessionId)
  }
  await server.connect(transport)
  attachAuth(req)
  hijack(reply)
  await transport.handleRequest(req.raw, reply.raw, req.body)
  return reply
}

/** The SSE transport: the stream at /mcp/sse, and the messages posted to /mcp/messages. */
function sseHandlers(b: SessionBook) {
  const { sessions, now, principal, newServer, attachAuth, find, close } = b
  return {
    mcpSse: async (req: FastifyRequest, reply: FastifyReply) => {
      const p = principal(req)
      hijack(reply)
      const transport = new SSEServerTransport('/mcp/messages', reply.raw)
      const server = newServer()
      const s: Session = {
        id: transport.sessionId,
        transport,
        server,
        accountId: p.accountId,
        environment: p.environment,
        lastSeen: now(),
      }
      sessions.set(s.id, s)
      transport.onclose = () => sessions.delete(s.id)
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
      const s = find(req, sessionId)
      if (!s || !(s.transport instanceof SSEServerTransport))
        return jsonRpcError(reply, 404, 'Unknown or expired MCP session')
      attachAuth(req, refused)
      hijack(reply)
      await s.transport.handlePostMessage(req.raw, reply.raw, req.body)
      return reply
    },
  }
}
