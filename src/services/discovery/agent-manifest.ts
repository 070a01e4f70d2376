import type { Static } from 'typebox'
import { API_VERSION } from '../../contract/openapi.ts'
import type { OperationId } from '../../contract/operations.ts'
import type { agentManifestSchema } from '../../contract/ops/discovery.ts'
import { microsToUsd } from '../../contract/pricing.ts'
import { toolCatalogue } from '../../contract/tools.ts'
import { pricingView } from '../billing/views.ts'
import type { ServiceContext } from '../context.ts'
import { FREE_CREDIT_MICROS } from '../identity/provision.ts'
import { IP_RULES, KEY_RULES, MAX_CONCURRENT } from '../limits.ts'
import { ACCESS_TTL_S, REFRESH_TTL_MS } from '../oauth/common.ts'
import { authorizationServerMetadata } from '../oauth/metadata.ts'
import { type DiscoveryLinks, describeOp, SERVICE_DESCRIPTION } from './links.ts'

export type AgentManifest = Static<typeof agentManifestSchema>

/** The key formats of docs/decisions/keys-and-accounts.md, as src/contract/api-key.ts checks them. */
export const KEY_FORMATS = [
  'erm_agent_{live|test}_{32 base62}_{6 base62 CRC32}',
  'erm_user_{live|test}_{32 base62}_{6 base62 CRC32}',
]

/** Free documents besides the account operations /pricing lists. */
const FREE_DOCUMENTS: OperationId[] = [
  'getOpenApi',
  'getMethodologyDocs',
  'getMethodologyMarkdown',
  'getBillingDocs',
  'getErrorDocs',
  'getAgentManifest',
  'getMcpServerCard',
  'getAiPluginManifest',
  'getAgenticDisclosure',
  'getLlmsTxt',
  'getOAuthAuthorizationServerMetadata',
  'getOAuthProtectedResourceMetadata',
]

/** Per-caller limits of unauthenticated operations: which rule guards which operation, keyed by what. */
const PER_CALLER: { rule: keyof typeof IP_RULES; op: OperationId; per: string }[] = [
  { rule: 'provisionFree', op: 'provisionFree', per: 'client IP' },
  { rule: 'login', op: 'login', per: 'client IP' },
  { rule: 'loginEmail', op: 'login', per: 'e-mail address' },
  { rule: 'oauthRegister', op: 'oauthRegister', per: 'client IP' },
  { rule: 'oauthToken', op: 'oauthToken', per: 'client IP (shared with /oauth/revoke)' },
]

const usd = (micros: number) => `${microsToUsd(micros)} USD`

function agentFlow(l: DiscoveryLinks): string[] {
  return [
    `Fetch this manifest (${l.agentManifest}) or ${l.llmsTxt}.`,
    `Get a key: POST ${l.provisionFree} (anonymous, ${usd(FREE_CREDIT_MICROS)} of free credit), or sign in with POST ${l.login} (e-mailed link) and POST ${l.provision}, or OAuth 2.0 with PKCE (${l.oauthServer}).`,
    `Check GET ${l.balance}: status.can_make_requests must be true and balance_usd enough for the calls you plan (prices: ${l.pricing}; POST ${l.estimate} prices a call in advance).`,
    `Call the data endpoints (${l.openapi}) with Authorization: Bearer <key>, or the MCP tools at ${l.mcp}.`,
    'Monitor _agent.cost_usd in JSON bodies or the X-API-Cost-USD header, and the balance left in _agent.balance_usd or X-Balance-USD; an identical request within one data_as_of is served from the cache for free.',
  ]
}

export function buildAgentManifest(ctx: ServiceContext, l: DiscoveryLinks): AgentManifest {
  const tools = toolCatalogue()
  return {
    name: 'erm3',
    description: SERVICE_DESCRIPTION,
    version: API_VERSION,
    base_url: l.base,
    openapi_url: l.openapi,
    docs: {
      methodology: l.methodology,
      methodology_markdown: l.methodologyMarkdown,
      errors: l.errors,
      billing: l.billing,
      llms_txt: l.llmsTxt,
    },
    mcp: {
      streamable_http_url: l.mcp,
      sse_url: l.mcpSse,
      server_card_url: l.mcpServerCard,
      tools: tools.map((t) => t.name),
    },
    authentication: authenticationSection(ctx, l),
    pricing: pricingSection(l, tools),
    rate_limits: rateLimitsSection(ctx),
    agent_flow: agentFlow(l),
    links: {
      mcp_server_card: l.mcpServerCard,
      ai_plugin: l.aiPlugin,
      agentic_disclosure: l.disclosure,
      oauth_authorization_server: l.oauthServer,
      oauth_protected_resource: l.oauthResource,
      llms_txt: l.llmsTxt,
    },
  }
}

/** Bearer keys (and how to get one), and OAuth 2.0 for agent clients. */
function authenticationSection(ctx: ServiceContext, l: DiscoveryLinks): AgentManifest['authentication'] {
  const oauth = authorizationServerMetadata(ctx)
  return {
    bearer: {
      header: 'Authorization: Bearer <API_KEY>',
      key_formats: KEY_FORMATS,
      test_keys: '_test_ keys read a sandbox market and never move the balance (X-Environment: test)',
    },
    provisioning: [
      {
        method: 'POST',
        url: l.provisionFree,
        description: `Anonymous account with a live key and ${usd(FREE_CREDIT_MICROS)} of free credit; no sign-in`,
      },
      {
        method: 'POST',
        url: l.login,
        description:
          'E-mails a one-time sign-in link; POST its token as JSON to /auth/callback for a session JWT (a browser follows the link)',
      },
      {
        method: 'POST',
        url: l.provision,
        description: 'A key for the signed-in account (Authorization: Bearer <SESSION_JWT>)',
      },
    ],
    oauth2: {
      authorization_server_metadata_url: l.oauthServer,
      protected_resource_metadata_url: l.oauthResource,
      registration_endpoint: oauth.registration_endpoint,
      authorization_endpoint: oauth.authorization_endpoint,
      token_endpoint: oauth.token_endpoint,
      revocation_endpoint: oauth.revocation_endpoint,
      grant_types: oauth.grant_types_supported,
      code_challenge_methods: oauth.code_challenge_methods_supported,
      token_endpoint_auth_methods: oauth.token_endpoint_auth_methods_supported,
      scopes: oauth.scopes_supported,
      access_token_lifetime_s: ACCESS_TTL_S,
      refresh_token_lifetime_s: REFRESH_TTL_MS / 1000,
    },
  }
}

/** Prices per capability (with the MCP tool that calls it) and what is free. */
function pricingSection(
  l: DiscoveryLinks,
  tools: ReturnType<typeof toolCatalogue>,
): AgentManifest['pricing'] {
  const pricing = pricingView()
  return {
    currency: pricing.currency,
    pricing_url: l.pricing,
    estimate_url: l.estimate,
    cached_responses_free: pricing.cached_responses_free,
    min_top_up_usd: pricing.min_top_up_usd,
    capabilities: pricing.capabilities.map((c) => ({
      ...c,
      mcp_tool: tools.find((t) => t.capability?.id === c.capability_id)?.name ?? null,
    })),
    free_endpoints: [...new Set([...pricing.free, ...FREE_DOCUMENTS.map(describeOp)])],
  }
}

/** Per-key rate tiers and concurrency, and the per-caller limits of what a key does not cover. */
function rateLimitsSection(ctx: ServiceContext): AgentManifest['rate_limits'] {
  return {
    per_key: Object.entries(KEY_RULES).map(([tier, r]) => ({
      tier,
      requests_per_minute: Math.round((r.limit * 60_000) / r.periodMs),
      burst: r.burst,
    })),
    max_concurrent_per_key: MAX_CONCURRENT,
    headers: ['X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset', 'Retry-After'],
    per_caller: [
      // The general limit of everything not authenticated by a key (X-RateLimit-* headers on all).
      {
        operation: 'every request without an API key',
        per: 'client IP',
        limit: ctx.config.ipRate.perMinute,
        period_s: 60,
      },
      ...PER_CALLER.map(({ rule, op, per }) => ({
        operation: describeOp(op),
        per,
        limit: IP_RULES[rule].limit,
        period_s: IP_RULES[rule].periodMs / 1000,
      })),
    ],
  }
}
