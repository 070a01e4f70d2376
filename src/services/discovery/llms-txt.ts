import type { AgentManifest } from './agent-manifest.ts'
import { type DiscoveryLinks, describeOp } from './links.ts'

type Priced = AgentManifest['pricing']['capabilities'][number]

const UNIT: Record<string, string> = {
  per_request: 'per call',
  per_position: 'per position',
  per_token: 'per kilotoken',
}

/** "`GET /lstar` — lstar: 0.02 USD per call. Dispatch-level (Lstar) series" */
function pricingLine(c: Priced): string {
  const min = c.min_charge === null ? '' : `, minimum ${c.min_charge} USD`
  if (c.model === 'per_token')
    return `- \`${c.method} ${c.path}\` — ${c.capability_id}: ${c.cost_usd} USD ${UNIT[c.model]}. That is 1k input tokens; 1k output tokens cost ${c.output_cost_per_1k_tokens_usd ?? '?'} USD; each tool call costs its own price. ${c.description}`
  return `- \`${c.method} ${c.path}\` — ${c.capability_id}: ${c.cost_usd} USD ${UNIT[c.model] ?? c.model}${min}. ${c.description}`
}

/**
 * /llms.txt (llmstxt.org): an H1, a blockquote summary, then sections of links. Built from the
 * agent manifest, so both name the same endpoints and prices.
 */
export function buildLlmsTxt(m: AgentManifest, l: DiscoveryLinks): string {
  const p = m.pricing
  const o = m.authentication.oauth2
  return `# erm3

> ${m.description}

Base URL: ${m.base_url} (interface version ${m.version}). Authenticate with \`Authorization: Bearer <key>\`; keys look like \`${m.authentication.bearer.key_formats.join('` or `')}\`, and an OAuth 2.0 access token works wherever a key does. Start with \`${describeOp('getBalance')}\` (\`status.can_make_requests\` must be true); every paid JSON answer reports its cost in \`_agent.cost_usd\` and the \`X-API-Cost-USD\` header. Errors are \`application/problem+json\` with a \`code\`.

## Documentation

- [OpenAPI 3.1 document](${m.openapi_url}): every operation, its schemas and \`x-pricing\`
- [Methodology](${m.docs.methodology}): how every number is computed
- [Methodology as Markdown](${m.docs.methodology_markdown}): the same document, as its Markdown source
- [Errors](${m.docs.errors}): every error code, its status and meaning
- [Billing](${m.docs.billing}): what is charged, prices, and how to top up

## Agents

- [Agent manifest](${l.agentManifest}): endpoints, MCP, authentication, prices and limits in one JSON document
- [MCP over Streamable HTTP](${m.mcp.streamable_http_url}): ${m.mcp.tools.length} tools, one per data capability plus the account tools
- [MCP over SSE](${m.mcp.sse_url}): the older transport
- [MCP server card](${m.mcp.server_card_url}): transports, authentication, tools and resources
- [OAuth authorization server metadata](${o.authorization_server_metadata_url}): dynamic registration, authorization code with PKCE (${o.code_challenge_methods.join(', ')})
- [OAuth protected resource metadata](${o.protected_resource_metadata_url})
- [Plugin manifest](${l.aiPlugin})
- [Agentic disclosure](${l.disclosure}): what this instance stores, for how long, and who it shares with

## Getting a key

${m.authentication.provisioning.map((e) => `- ${e.method} ${e.url}: ${e.description}`).join('\n')}

## Pricing

USD, charged per successful call against a prepaid balance (minimum top-up ${p.min_top_up_usd} USD); errors, test keys and cached repeats cost nothing.

${p.capabilities.map(pricingLine).join('\n')}

Free: ${p.free_endpoints.map((e) => `\`${e}\``).join(', ')}.

## Optional

- [Prices as JSON](${p.pricing_url})
- [Service health](${l.health})
`
}
