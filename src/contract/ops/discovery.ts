import { type TProperties, Type } from 'typebox'
import { defineOperation } from '../operation.ts'
import { Nullable } from '../schemas.ts'
import { pricingEntrySchema } from './account.ts'

/**
 * Discovery documents: served at the site origin, no auth, free. Every URL in
 * them is absolute from PUBLIC_URL; prices, tools and limits are derived from the contract, never
 * written twice (test/api/discovery.test.ts fails on a name or price that does not exist).
 */

const url = Type.String({ description: 'Absolute URL' })
const strings = Type.Array(Type.String())
/** Closed objects: a field the schema does not name would be dropped by the serialiser, so name them all. */
const obj = <P extends TProperties>(p: P) => Type.Object(p, { additionalProperties: false })

const endpoint = obj({ method: Type.String(), url, description: Type.String() })

export const agentManifestSchema = Type.Object(
  {
    name: Type.String(),
    description: Type.String(),
    version: Type.String({ description: 'Interface version (X-API-Version)' }),
    base_url: url,
    openapi_url: url,
    docs: obj({ methodology: url, methodology_markdown: url, errors: url, billing: url, llms_txt: url }),
    mcp: obj({
      streamable_http_url: url,
      sse_url: url,
      server_card_url: url,
      tools: Type.Array(Type.String(), { description: 'MCP tool names (tools/list)' }),
    }),
    authentication: obj({
      bearer: obj({ header: Type.String(), key_formats: strings, test_keys: Type.String() }),
      provisioning: Type.Array(endpoint),
      oauth2: obj({
        authorization_server_metadata_url: url,
        protected_resource_metadata_url: url,
        registration_endpoint: url,
        authorization_endpoint: url,
        token_endpoint: url,
        revocation_endpoint: url,
        grant_types: strings,
        code_challenge_methods: strings,
        token_endpoint_auth_methods: strings,
        scopes: strings,
        access_token_lifetime_s: Type.Integer(),
        refresh_token_lifetime_s: Type.Integer(),
      }),
    }),
    pricing: obj({
      currency: Type.Literal('USD'),
      pricing_url: url,
      estimate_url: url,
      cached_responses_free: Type.Boolean(),
      min_top_up_usd: Type.Number(),
      capabilities: Type.Array(obj({ ...pricingEntrySchema.properties, mcp_tool: Nullable(Type.String()) }), {
        description: 'Every priced operation this server serves (the same entries as GET /pricing)',
      }),
      free_endpoints: Type.Array(Type.String(), {
        description: '"METHOD /path" of operations that cost nothing',
      }),
    }),
    rate_limits: obj({
      per_key: Type.Array(
        obj({ tier: Type.String(), requests_per_minute: Type.Integer(), burst: Type.Integer() }),
      ),
      max_concurrent_per_key: Type.Integer(),
      headers: strings,
      per_caller: Type.Array(
        obj({
          operation: Type.String(),
          per: Type.String(),
          limit: Type.Integer(),
          period_s: Type.Integer(),
        }),
        { description: 'Limits of unauthenticated operations, per client IP or per e-mail address' },
      ),
    }),
    agent_flow: Type.Array(Type.String()),
    links: obj({
      mcp_server_card: url,
      ai_plugin: url,
      agentic_disclosure: url,
      oauth_authorization_server: url,
      oauth_protected_resource: url,
      llms_txt: url,
    }),
  },
  { $id: 'AgentManifest', additionalProperties: false },
)

export const mcpServerCardSchema = Type.Object(
  {
    serverInfo: obj({ name: Type.String(), title: Type.String(), version: Type.String() }),
    description: Type.String(),
    documentationUrl: url,
    transports: Type.Array(obj({ type: Type.String(), url, messagesUrl: Type.Optional(url) })),
    capabilities: obj({ tools: obj({}), resources: obj({}) }),
    authentication: obj({
      required: Type.Boolean(),
      schemes: strings,
      bearerKeyFormats: strings,
      protectedResourceMetadataUrl: url,
      authorizationServerMetadataUrl: url,
      scopes: strings,
    }),
    instructions: Type.String(),
    tools: Type.Array(obj({ name: Type.String(), title: Type.String(), description: Type.String() })),
    resources: Type.Array(
      obj({
        uri: Type.String(),
        name: Type.String(),
        mimeType: Type.String(),
        description: Type.String(),
        url,
      }),
    ),
  },
  { $id: 'McpServerCard', additionalProperties: false },
)

export const aiPluginSchema = Type.Object(
  {
    schema_version: Type.Literal('v1'),
    name_for_human: Type.String(),
    name_for_model: Type.String(),
    description_for_human: Type.String(),
    description_for_model: Type.String(),
    auth: obj({ type: Type.Literal('user_http'), authorization_type: Type.Literal('bearer') }),
    api: obj({ type: Type.Literal('openapi'), url }),
    legal_info_url: url,
  },
  { $id: 'AiPluginManifest', additionalProperties: false },
)

const storedItem = obj({
  category: Type.String(),
  fields: strings,
  purpose: Type.String(),
  where: Type.String(),
  retention: Type.String(),
})

export const agenticDisclosureSchema = Type.Object(
  {
    service: Type.String(),
    version: Type.String(),
    base_url: url,
    operator: obj({ url, contact: Nullable(Type.String()), note: Type.String() }),
    software: obj({ name: Type.String(), license: Type.String(), self_hostable: Type.Boolean() }),
    automated_processing: obj({
      llm_in_the_loop: Type.Boolean(),
      automated_decisions_about_people: Type.Boolean(),
      description: Type.String(),
    }),
    training_on_request_data: Type.Boolean(),
    third_party_sharing: obj({
      sells_or_shares_data: Type.Boolean(),
      processors: Type.Array(Type.String(), { description: 'Services this instance hands data to' }),
    }),
    data_stored: Type.Array(storedItem),
    not_stored: strings,
    market_data: obj({
      description: Type.String(),
      this_instance: Type.Union(
        [
          Type.Literal('synthetic'),
          Type.Literal('imported'),
          Type.Literal('vendor'),
          Type.Literal('unknown'),
          Type.Literal('not_built'),
        ],
        { description: 'Source of the model store live keys read, at the time of the request' },
      ),
    }),
    links: obj({ agent_manifest: url, methodology: url, openapi: url }),
  },
  { $id: 'AgenticDisclosure', additionalProperties: false },
)

const discovery = { tags: ['discovery'], auth: 'none' as const, status: 200 as const, errors: [] as number[] }

export const getAgentManifest = defineOperation({
  ...discovery,
  id: 'getAgentManifest',
  method: 'GET',
  path: '/.well-known/agent-manifest',
  summary: 'Agent manifest: endpoints, MCP, authentication, prices (from the pricing table) and limits',
  response: agentManifestSchema,
})

const getMcpServerCard = defineOperation({
  ...discovery,
  id: 'getMcpServerCard',
  method: 'GET',
  path: '/.well-known/mcp.json',
  summary: 'MCP server card: transports, authentication, tools, resources and instructions',
  response: mcpServerCardSchema,
})

const getAiPluginManifest = defineOperation({
  ...discovery,
  id: 'getAiPluginManifest',
  method: 'GET',
  path: '/.well-known/ai-plugin.json',
  summary: 'Plugin manifest (ai-plugin.json v1): bearer-key auth and the OpenAPI document',
  response: aiPluginSchema,
})

const getAgenticDisclosure = defineOperation({
  ...discovery,
  id: 'getAgenticDisclosure',
  method: 'GET',
  path: '/.well-known/agentic-disclosure.json',
  summary: 'What this instance stores and for how long, who it shares with, and how results are produced',
  response: agenticDisclosureSchema,
})

const getLlmsTxt = defineOperation({
  ...discovery,
  id: 'getLlmsTxt',
  method: 'GET',
  path: '/llms.txt',
  summary: 'llms.txt: a Markdown overview for language models, with links and prices',
  response: Type.String(),
  contentType: 'text/plain; charset=utf-8',
})

export const DISCOVERY_OPS = {
  getAgentManifest,
  getMcpServerCard,
  getAiPluginManifest,
  getAgenticDisclosure,
  getLlmsTxt,
} as const
