import { Server } from '@modelcontextprotocol/sdk/server/index.js'
import {
  CallToolRequestSchema,
  type CallToolResult,
  ListResourcesRequestSchema,
  ListToolsRequestSchema,
  ReadResourceRequestSchema,
} from '@modelcontextprotocol/sdk/types.js'
import type { Transport } from '../contract/client.ts'
import { API_VERSION } from '../contract/openapi.ts'
import { type ToolSpec, toolCatalogue, toolRequest } from '../contract/tools.ts'

export const MCP_INSTRUCTIONS = `erm3 decomposes US stocks' risk into market, sector and subsector layers and a residual.
Start by calling \`balance\` (status.can_make_requests must be true; test keys are free and read a sandbox market).
\`pricing\` lists what each tool costs and \`estimate\` prices a call in advance; every paid result reports its cost in _agent.cost_usd, and repeating an identical call within one data_as_of is free.
Typical flow: \`tickers_search\` to find a symbol, then \`metrics\` or \`decompose\` for its hedge ratios (dollars of ETF per $1 of stock) and explained-risk fractions.
Errors come back as tool errors whose text starts with the error code (e.g. INSUFFICIENT_BALANCE, RATE_LIMITED, TICKER_NOT_FOUND).`

/** Documents offered as MCP resources, read through the same transport as tools. Only what exists is offered. */
const RESOURCES = [
  {
    uri: 'erm3://docs/methodology',
    name: 'methodology',
    path: '/docs/methodology',
    mimeType: 'text/markdown',
    description: 'How every number is computed',
  },
  {
    uri: 'erm3://openapi.json',
    name: 'openapi',
    path: '/openapi.json',
    mimeType: 'application/json',
    description: 'The OpenAPI 3.1 document of the REST API',
  },
  // The agent manifest joins these once /.well-known/agent-manifest exists (issue 6, not yet built).
] as const

export interface McpDeps {
  /** Where a tool call goes: in-process for `erm3 serve`, HTTP for `erm3 mcp` (stdio). */
  transport: Transport
  /** The caller's bearer credential for a request (from the MCP request's auth, or fixed for stdio). */
  bearerOf: (authToken: string | undefined) => string | null
  version?: string
}

function summary(tool: ToolSpec, body: Record<string, unknown>): string {
  const agent = body._agent as { cost_usd?: number; cache_status?: string } | undefined
  const cost = agent ? ` Cost ${agent.cost_usd} USD (${agent.cache_status}).` : ''
  const what = ['ticker', 'symbol', 'teo', 'data_as_of']
    .filter((k) => typeof body[k] === 'string')
    .map((k) => `${k} ${body[k]}`)
  return `${tool.name}: ok${what.length ? ` — ${what.join(', ')}` : ''}.${cost} Full result in structuredContent.`
}

/** One MCP server (per session): tools and resources that are calls of the REST operations. */
export function createMcpServer(deps: McpDeps): Server {
  const tools = toolCatalogue()
  const byName = new Map(tools.map((t) => [t.name, t]))
  const server = new Server(
    { name: 'erm3', title: 'erm3 — equity risk decomposition', version: deps.version ?? API_VERSION },
    { capabilities: { tools: {}, resources: {} }, instructions: MCP_INSTRUCTIONS },
  )
  server.setRequestHandler(ListToolsRequestSchema, async () => ({
    tools: tools.map((t) => ({
      name: t.name,
      title: t.title,
      description: t.description,
      inputSchema: t.inputSchema as { type: 'object'; properties?: Record<string, object> },
      annotations: { readOnlyHint: true, openWorldHint: false },
    })),
  }))
  server.setRequestHandler(CallToolRequestSchema, async (request, extra): Promise<CallToolResult> => {
    const tool = byName.get(request.params.name)
    if (!tool)
      return { isError: true, content: [{ type: 'text', text: `NOT_FOUND: no tool ${request.params.name}` }] }
    const bearer = deps.bearerOf(extra.authInfo?.token)
    if (!bearer)
      return { isError: true, content: [{ type: 'text', text: 'MISSING_CREDENTIALS: no API key' }] }
    const res = await deps.transport(toolRequest(tool, request.params.arguments ?? {}, bearer))
    let body: Record<string, unknown> = {}
    try {
      body = JSON.parse(res.body) as Record<string, unknown>
    } catch {
      body = { detail: res.body.slice(0, 500) }
    }
    if (res.status >= 400) {
      const code = typeof body.code === 'string' ? body.code : `HTTP_${res.status}`
      const retry = res.headers['retry-after'] ? ` Retry after ${res.headers['retry-after']} s.` : ''
      return {
        isError: true,
        content: [{ type: 'text', text: `${code}: ${String(body.detail ?? body.title ?? '')}${retry}` }],
        structuredContent: body,
      }
    }
    return { content: [{ type: 'text', text: summary(tool, body) }], structuredContent: body }
  })
  server.setRequestHandler(ListResourcesRequestSchema, async () => ({
    resources: RESOURCES.map(({ path: _p, ...r }) => r),
  }))
  server.setRequestHandler(ReadResourceRequestSchema, async (request) => {
    const r = RESOURCES.find((x) => x.uri === request.params.uri)
    if (!r) throw new Error(`unknown resource ${request.params.uri}`)
    const res = await deps.transport({ method: 'GET', url: r.path, headers: { accept: r.mimeType } })
    if (res.status >= 400) throw new Error(`resource ${r.uri} is unavailable (HTTP ${res.status})`)
    return { contents: [{ uri: r.uri, mimeType: r.mimeType, text: res.body }] }
  })
  return server
}
