import { Server } from '@modelcontextprotocol/sdk/server/index.js'
import {
  CallToolRequestSchema,
  type CallToolResult,
  ListResourcesRequestSchema,
  ListToolsRequestSchema,
  ReadResourceRequestSchema,
} from '@modelcontextprotocol/sdk/types.js'
import type { Transport } from '../contract/client.ts'
import { MCP_INSTRUCTIONS, MCP_RESOURCES } from '../contract/mcp-surface.ts'
import { API_VERSION } from '../contract/openapi.ts'
import { toolCatalogue, toolRequest } from '../contract/tools.ts'
import { AppError } from '../platform/errors.ts'
import { answerContents, answerRequest, toolResult } from './tool-result.ts'

/**
 * Set in `AuthInfo.extra` by the HTTP transports when the MCP message carrying a tools/call was
 * over the key's rate limit (the auth hook refused its token; see mcp/http.ts): the call is
 * answered with a RATE_LIMITED tool error and nothing runs.
 */
export const RATE_REFUSAL = 'erm3RateRefusal'
export interface RateRefusal {
  detail: string
  retryAfterSeconds: number
}

function toolError(
  code: string,
  detail: string,
  retryAfter: string | number | undefined,
  body: object,
): CallToolResult {
  const retry =
    retryAfter === undefined || retryAfter === ''
      ? ''
      : `${/[.!?]$/.test(detail) ? '' : '.'} Retry after ${retryAfter} s.`
  return {
    isError: true,
    content: [{ type: 'text', text: `${code}: ${detail}${retry}` }],
    structuredContent: body as Record<string, unknown>,
  }
}

export interface McpDeps {
  /** Where a tool call goes: in-process for `erm3 serve`, HTTP for `erm3 mcp` (stdio). */
  transport: Transport
  /** The caller's bearer credential for a request (from the MCP request's auth, or fixed for stdio). */
  bearerOf: (authToken: string | undefined) => string | null
  version?: string
  /** What this instance's data is (synthetic or imported), appended to the instructions of each new session. */
  dataNotice?: () => string
}

/** One MCP server (per session): tools and resources that are calls of the REST operations. */
export function createMcpServer(deps: McpDeps): Server {
  const tools = toolCatalogue()
  const byName = new Map(tools.map((t) => [t.name, t]))
  const server = new Server(
    { name: 'erm3', title: 'erm3 — equity risk decomposition', version: deps.version ?? API_VERSION },
    {
      capabilities: { tools: {}, resources: {} },
      instructions: deps.dataNotice ? `${MCP_INSTRUCTIONS}\n${deps.dataNotice()}` : MCP_INSTRUCTIONS,
    },
  )
  server.setRequestHandler(ListToolsRequestSchema, async () => ({
    tools: tools.map((t) => ({
      name: t.name,
      title: t.title,
      description: t.description,
      inputSchema: t.inputSchema as { type: 'object'; properties?: Record<string, object> },
      ...(t.outputSchema
        ? { outputSchema: t.outputSchema as { type: 'object'; properties?: Record<string, object> } }
        : {}),
      annotations: t.annotations,
      _meta: { 'erm3/pricing': t.pricing },
    })),
  }))
  server.setRequestHandler(CallToolRequestSchema, async (request, extra): Promise<CallToolResult> => {
    const tool = byName.get(request.params.name)
    if (!tool)
      return { isError: true, content: [{ type: 'text', text: `NOT_FOUND: no tool ${request.params.name}` }] }
    const bearer = deps.bearerOf(extra.authInfo?.token)
    if (!bearer)
      return { isError: true, content: [{ type: 'text', text: 'MISSING_CREDENTIALS: no API key' }] }
    const refused = extra.authInfo?.extra?.[RATE_REFUSAL] as RateRefusal | undefined
    if (refused) {
      const { detail, retryAfterSeconds } = refused
      const body = { code: 'RATE_LIMITED', status: 429, detail, retry_after_seconds: retryAfterSeconds }
      return toolError('RATE_LIMITED', detail, retryAfterSeconds, body)
    }
    let req: ReturnType<typeof toolRequest>
    try {
      req = toolRequest(tool, request.params.arguments ?? {}, bearer)
    } catch (err) {
      if (!(err instanceof AppError)) throw err
      return toolError(err.code, err.message, undefined, { code: err.code, status: 400, detail: err.message })
    }
    const res = await deps.transport(req)
    let body: Record<string, unknown> = {}
    try {
      body = JSON.parse(res.body) as Record<string, unknown>
    } catch {
      body = { detail: res.body.slice(0, 500) }
    }
    if (res.status >= 400) {
      const code = typeof body.code === 'string' ? body.code : `HTTP_${res.status}`
      return toolError(code, String(body.detail ?? body.title ?? ''), res.headers['retry-after'], body)
    }
    return toolResult(tool, request.params.arguments ?? {}, body)
  })
  server.setRequestHandler(ListResourcesRequestSchema, async () => ({
    resources: MCP_RESOURCES.map(({ path: _p, ...r }) => r),
  }))
  server.setRequestHandler(ReadResourceRequestSchema, async (request, extra) => {
    const bearer = deps.bearerOf(extra.authInfo?.token)
    const answer = bearer ? answerRequest(request.params.uri, byName, bearer) : null
    if (answer) {
      // The full answer of a call already made: the same request again, so it is not charged again.
      const res = await deps.transport(answer.request)
      if (res.status >= 400)
        throw new Error(`resource ${request.params.uri}: HTTP ${res.status} ${res.body.slice(0, 300)}`)
      return answerContents(request.params.uri, answer.format, res.body)
    }
    const r = MCP_RESOURCES.find((x) => x.uri === request.params.uri)
    if (!r) throw new Error(`unknown resource ${request.params.uri}`)
    const res = await deps.transport({ method: 'GET', url: r.path, headers: { accept: r.mimeType } })
    if (res.status >= 400) throw new Error(`resource ${r.uri} is unavailable (HTTP ${res.status})`)
    return { contents: [{ uri: r.uri, mimeType: r.mimeType, text: res.body }] }
  })
  return server
}
