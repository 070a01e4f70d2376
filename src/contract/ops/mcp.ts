import { Type } from 'typebox'
import { defineOperation } from '../operation.ts'

/**
 * MCP transports (Streamable HTTP and the older `/mcp/sse`; docs/decisions/mcp.md). Bodies are
 * JSON-RPC messages defined by the Model Context Protocol, not by this contract; tool input
 * schemas come from src/contract/tools.ts. Authenticated by a bearer key or OAuth access token; a 401 carries
 * `WWW-Authenticate` pointing at /.well-known/oauth-protected-resource.
 */
const jsonRpc = Type.Unknown({ description: 'A JSON-RPC 2.0 message (Model Context Protocol)' })
const MCP_ERRORS = [400, 401, 404, 406, 429]

const mcpPost = defineOperation({
  id: 'mcpPost',
  method: 'POST',
  path: '/mcp',
  summary: 'MCP Streamable HTTP: send a JSON-RPC message (initialize creates a session, Mcp-Session-Id)',
  tags: ['mcp'],
  auth: 'key',
  streaming: true,
  rateLimitInBand: true,
  body: jsonRpc,
  status: 200,
  response: jsonRpc,
  contentType: 'text/event-stream',
  errors: MCP_ERRORS,
})

const mcpGet = defineOperation({
  id: 'mcpGet',
  method: 'GET',
  path: '/mcp',
  summary: 'MCP Streamable HTTP: the server-to-client event stream of a session',
  tags: ['mcp'],
  auth: 'key',
  streaming: true,
  status: 200,
  response: jsonRpc,
  contentType: 'text/event-stream',
  errors: MCP_ERRORS,
})

const mcpDelete = defineOperation({
  id: 'mcpDelete',
  method: 'DELETE',
  path: '/mcp',
  summary: 'MCP Streamable HTTP: end a session',
  tags: ['mcp'],
  auth: 'key',
  streaming: true,
  status: 200,
  response: jsonRpc,
  contentType: 'application/json',
  errors: MCP_ERRORS,
})

const mcpSse = defineOperation({
  id: 'mcpSse',
  method: 'GET',
  path: '/mcp/sse',
  summary: 'MCP over SSE (older transport): opens the event stream and names the message endpoint',
  tags: ['mcp'],
  auth: 'key',
  streaming: true,
  status: 200,
  response: jsonRpc,
  contentType: 'text/event-stream',
  errors: MCP_ERRORS,
})

const mcpMessages = defineOperation({
  id: 'mcpMessages',
  method: 'POST',
  path: '/mcp/messages',
  summary: 'MCP over SSE: send a JSON-RPC message to the session named by ?sessionId=',
  tags: ['mcp'],
  auth: 'key',
  streaming: true,
  rateLimitInBand: true,
  querystring: Type.Object({ sessionId: Type.String({ maxLength: 200 }) }),
  body: jsonRpc,
  status: 202,
  response: jsonRpc,
  contentType: 'text/plain',
  errors: MCP_ERRORS,
})

export const MCP_OPS = { mcpPost, mcpGet, mcpDelete, mcpSse, mcpMessages } as const
