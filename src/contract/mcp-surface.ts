import { getAgentManifest } from './ops/discovery.ts'
import { getMethodologyMarkdown, getOpenApi } from './ops/docs.ts'

/**
 * What the MCP server offers besides its tools (those come from tools.ts): the documents it
 * serves as resources and its `instructions`. Kept in the contract so the MCP adapter and the
 * discovery manifests (services) read one list.
 */
export interface McpResource {
  uri: string
  name: string
  /** The REST path the resource is read from (same transport, same answer). */
  path: string
  mimeType: string
  description: string
}

/** Only documents that exist are offered (test/mcp reads every one). */
export const MCP_RESOURCES: readonly McpResource[] = [
  {
    uri: 'erm3://docs/methodology',
    name: 'methodology',
    path: getMethodologyMarkdown.path,
    mimeType: 'text/markdown',
    description: 'How every number is computed',
  },
  {
    uri: 'erm3://openapi.json',
    name: 'openapi',
    path: getOpenApi.path,
    mimeType: 'application/json',
    description: 'The OpenAPI 3.1 document of the REST API',
  },
  {
    uri: 'erm3://.well-known/agent-manifest',
    name: 'agent-manifest',
    path: getAgentManifest.path,
    mimeType: 'application/json',
    description: 'The agent manifest: endpoints, MCP tools, authentication, prices and limits',
  },
]

export const MCP_INSTRUCTIONS = `erm3 decomposes US stocks' risk into market, sector and subsector layers and a residual.
Start by calling \`balance\` (status.can_make_requests must be true; test keys are free and read a sandbox market).
\`pricing\` lists what each tool costs (each description starts with its price) and \`estimate\` prices a call in advance; every paid result reports its cost in _agent.cost_usd and the balance left in _agent.balance_usd, and repeating an identical call within one data_as_of is free.
Each result's text summarises the answer (key numbers with units, series newest first); a long answer is a preview whose text says what was left out, with a resource link to the whole that costs nothing more.
Typical flow: \`tickers_search\` to find a symbol, then \`metrics\` or \`decompose\` for its hedge ratios (dollars of ETF per $1 of stock) and explained-risk fractions.
Errors come back as tool errors whose text starts with the error code (e.g. INSUFFICIENT_BALANCE, RATE_LIMITED, TICKER_NOT_FOUND).
Check _metadata.dataset in every result: kind "synthetic" means erm3's generated demo market, not market data — say so whenever you report its numbers.`
