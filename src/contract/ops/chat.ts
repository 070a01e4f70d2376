import { Type } from 'typebox'
import { defineOperation } from '../operation.ts'
import { agentMetaSchema, Nullable } from '../schemas.ts'

/**
 * POST /chat: a model answers risk questions by calling erm3's own data
 * tools with the caller's key. Priced per token plus the tools' own prices (pricing.ts `chat`);
 * docs/billing "Chat" states the reservation and settlement rules.
 */

const MAX_CHAT_MESSAGES = 50
/** Bytes of UTF-8 content over all messages of one request. */
export const MAX_CHAT_CONTENT_BYTES = 32 * 1024
export const MAX_CHAT_TOOL_CALLS = 10
export const MAX_CHAT_OUTPUT_TOKENS = 4096

const chatMessageSchema = Type.Object(
  {
    role: Type.Union([Type.Literal('user'), Type.Literal('assistant')], {
      description:
        "Conversation turns; erm3's own system prompt always comes first (no client system messages)",
    }),
    content: Type.String({ maxLength: MAX_CHAT_CONTENT_BYTES }),
  },
  { additionalProperties: false },
)

const chatRequestSchema = Type.Object(
  {
    messages: Type.Array(chatMessageSchema, { minItems: 1, maxItems: MAX_CHAT_MESSAGES }),
    stream: Type.Optional(
      Type.Boolean({ description: 'Answer Server-Sent Events (also when Accept: text/event-stream)' }),
    ),
    max_tool_calls: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: MAX_CHAT_TOOL_CALLS,
        default: 3,
        description: 'Most tool executions of this chat (parallel ones included); lowers the reservation',
      }),
    ),
    max_tokens: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: MAX_CHAT_OUTPUT_TOKENS,
        default: 1024,
        description: 'Most output tokens of each model answer',
      }),
    ),
    tools: Type.Optional(
      Type.Array(Type.String({ minLength: 1, maxLength: 64 }), {
        maxItems: 64,
        uniqueItems: true,
        description:
          'Only these tools (MCP tool names, e.g. ["ticker_returns", "metrics"]) are offered to the model: fewer definitions sent each round, fewer input tokens. Default: all. An unknown name is a 400; [] offers none',
      }),
    ),
  },
  { additionalProperties: false },
)

const chatToolCallSummarySchema = Type.Object(
  {
    tool: Type.String(),
    capability: Nullable(Type.String({ description: 'null for free tools' })),
    cost_usd: Type.Number(),
    latency_ms: Type.Integer(),
    error: Nullable(Type.String({ description: 'CODE: detail of a refused or failed call' })),
  },
  { $id: 'ChatToolCallSummary' },
)

const chatAgentMetaSchema = Type.Object(
  {
    ...agentMetaSchema.properties,
    llm_cost_usd: Type.Number({ description: 'The model tokens of this chat' }),
    tool_cost_usd: Type.Number({ description: 'Σ the tool calls’ own cost_usd' }),
    tool_calls: Type.Integer(),
  },
  { $id: 'ChatAgentMeta', description: 'AgentMeta with the chat fields; cost_usd = llm + tools' },
)

const chatResponseSchema = Type.Object(
  {
    message: Type.Object({ role: Type.Literal('assistant'), content: Type.String() }),
    tool_calls: Type.Array(chatToolCallSummarySchema),
    finish_reason: Type.String({
      description:
        'stop, length (max_tokens reached), tool_call_limit (max_tool_calls used up), input_budget (the input budget could not fit another round) or time_budget (no time left for another round within 8 minutes)',
    }),
    usage: Type.Object({ input_tokens: Type.Integer(), output_tokens: Type.Integer() }),
    notes: Type.Array(Type.String(), { description: 'Why the chat stopped early, when it did' }),
    _agent: chatAgentMetaSchema,
  },
  { $id: 'ChatResponse' },
)

const chat = defineOperation({
  id: 'chat',
  method: 'POST',
  path: '/chat',
  summary: "Ask a model about risk; it answers by calling erm3's data tools with your key",
  description:
    'Tools: the MCP catalogue (read-only, each call made with your key through the REST path, so it costs what the ' +
    'endpoint costs and fails as it does; a tool error goes back to the model). Price: 0.001 / 0.002 USD per 1k ' +
    'input / output tokens as reported by the provider, plus the tool calls. Before the model is called the worst ' +
    'case is reserved (the input-token budget, max_tokens per round, max_tool_calls × the dearest tool): 402 if the ' +
    'balance cannot cover it — lower max_tool_calls or max_tokens. Per key: ERM3_CHAT_RPM requests and ERM3_CHAT_TPM ' +
    'tokens per minute (429). stream=true (or Accept: text/event-stream) answers Server-Sent Events: `tool_call` ' +
    '(a ChatToolCallSummary per finished tool call), `delta` ({content}), `done` (the whole response body) or ' +
    '`error` (a problem object). 503 UNAVAILABLE when no provider is configured; 502/504 when the provider fails.',
  tags: ['data'],
  auth: 'key',
  body: chatRequestSchema,
  status: 200,
  response: chatResponseSchema,
  errors: [400, 401, 402, 403, 413, 415, 429, 502, 503, 504],
})

export const CHAT_OPS = { chat } as const
