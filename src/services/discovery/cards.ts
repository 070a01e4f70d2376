import type { Static } from 'typebox'
import { MCP_INSTRUCTIONS, MCP_RESOURCES } from '../../contract/mcp-surface.ts'
import { API_VERSION } from '../../contract/openapi.ts'
import type { aiPluginSchema, mcpServerCardSchema } from '../../contract/ops/discovery.ts'
import { toolCatalogue } from '../../contract/tools.ts'
import { SCOPE } from '../oauth/common.ts'
import { KEY_FORMATS } from './agent-manifest.ts'
import { type DiscoveryLinks, describeOp, SERVICE_DESCRIPTION } from './links.ts'

export type McpServerCard = Static<typeof mcpServerCardSchema>
export type AiPluginManifest = Static<typeof aiPluginSchema>

/**
 * The MCP server card at /.well-known/mcp.json (shaped after the MCP "server card" proposal,
 * SEP-1649): what an MCP client needs before it connects. The capabilities are those the server
 * announces at initialize (src/mcp/server.ts); the test compares them with a live session.
 */
export function buildMcpServerCard(l: DiscoveryLinks): McpServerCard {
  return {
    serverInfo: { name: 'erm3', title: 'erm3 — equity risk decomposition', version: API_VERSION },
    description: SERVICE_DESCRIPTION,
    documentationUrl: l.llmsTxt,
    transports: [
      { type: 'streamable-http', url: l.mcp },
      { type: 'sse', url: l.mcpSse, messagesUrl: l.mcpMessages },
    ],
    capabilities: { tools: {}, resources: {} },
    authentication: {
      required: true,
      schemes: ['bearer', 'oauth2'],
      bearerKeyFormats: KEY_FORMATS,
      protectedResourceMetadataUrl: l.oauthResource,
      authorizationServerMetadataUrl: l.oauthServer,
      scopes: [SCOPE],
    },
    instructions: MCP_INSTRUCTIONS,
    tools: toolCatalogue().map((t) => ({ name: t.name, title: t.title, description: t.description })),
    resources: MCP_RESOURCES.map(({ path, ...r }) => ({ ...r, url: `${l.base}${path}` })),
  }
}

/**
 * The ai-plugin.json v1 manifest. Auth is `user_http` bearer: the user supplies an erm3 key (the
 * OAuth flow of this server uses dynamic registration, which that manifest format cannot express).
 * No logo_url and no contact_email: this server has no logo and no configured contact address, and
 * the manifest names nothing that does not exist. legal_info_url points at the disclosure.
 */
export function buildAiPlugin(l: DiscoveryLinks): AiPluginManifest {
  return {
    schema_version: 'v1',
    name_for_human: 'erm3 equity risk',
    name_for_model: 'erm3',
    description_for_human: 'Market, sector, subsector and residual risk of US stocks, with ETF hedge ratios.',
    description_for_model:
      `${SERVICE_DESCRIPTION} Start with ${describeOp('getBalance')} (status.can_make_requests must be true), ` +
      `find symbols with ${describeOp('getTickers')}, then call ${describeOp('getMetrics')} or ${describeOp('decompose')} ` +
      'for hedge ratios (dollars of ETF per $1 of stock) and explained-risk fractions. Prices are in ' +
      `${describeOp('getPricing')}; every paid answer reports its cost in _agent.cost_usd. Errors are ` +
      'application/problem+json with a `code`.',
    auth: { type: 'user_http', authorization_type: 'bearer' },
    api: { type: 'openapi', url: l.openapi },
    legal_info_url: l.disclosure,
  }
}
