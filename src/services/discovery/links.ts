import { openApiPath } from '../../contract/operation.ts'
import { OPS, type OperationId } from '../../contract/operations.ts'

/** One line describing the service, shared by every discovery document. */
export const SERVICE_DESCRIPTION =
  "Equity risk decomposition of US stocks: each stock's risk split into market (L1), sector (L2), " +
  'subsector (L3) and residual layers, with ETF hedge ratios, hierarchical betas, explained-risk ' +
  'fractions, daily factor/residual returns and the dispatched level (Lstar). Metered against a ' +
  'prepaid balance; identical repeats within one data_as_of are free.'

/** "GET /metrics/{ticker}": how documents name an operation. */
export function describeOp(id: OperationId): string {
  const op = OPS[id]
  return `${op.method} ${openApiPath(op.path)}`
}

/**
 * Absolute URLs of the operations the documents point at, from PUBLIC_URL (never the Host
 * header) and the contract's paths, so a renamed path cannot leave a stale link behind.
 */
export function discoveryLinks(publicUrl: string) {
  const at = (id: OperationId) => `${publicUrl}${OPS[id].path}`
  return {
    base: publicUrl,
    openapi: at('getOpenApi'),
    methodology: at('getMethodologyDocs'),
    methodologyMarkdown: at('getMethodologyMarkdown'),
    billing: at('getBillingDocs'),
    errors: at('getErrorDocs'),
    llmsTxt: at('getLlmsTxt'),
    agentManifest: at('getAgentManifest'),
    mcpServerCard: at('getMcpServerCard'),
    aiPlugin: at('getAiPluginManifest'),
    disclosure: at('getAgenticDisclosure'),
    oauthServer: at('getOAuthAuthorizationServerMetadata'),
    oauthResource: at('getOAuthProtectedResourceMetadata'),
    mcp: at('mcpPost'),
    mcpSse: at('mcpSse'),
    mcpMessages: at('mcpMessages'),
    pricing: at('getPricing'),
    estimate: at('estimate'),
    balance: at('getBalance'),
    health: at('getHealth'),
    tickers: at('getTickers'),
    login: at('login'),
    provision: at('provision'),
    provisionFree: at('provisionFree'),
  }
}

export type DiscoveryLinks = ReturnType<typeof discoveryLinks>
