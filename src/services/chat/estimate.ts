import { MAX_CHAT_OUTPUT_TOKENS, MAX_CHAT_TOOL_CALLS } from '../../contract/ops/chat.ts'
import { type Capability, microsToUsd } from '../../contract/pricing.ts'
import { tokenCostMicros } from './budget.ts'
import { SYSTEM_PROMPT } from './prompt.ts'
import { chatTools, functionTools } from './tools.ts'

/** Typical English text and JSON run about this many UTF-8 bytes a token (an estimate, never a bound). */
export const BYTES_PER_TOKEN = 4

function int(v: unknown, lo: number, hi: number, dflt: number): number {
  return typeof v === 'number' && Number.isInteger(v) && v >= lo && v <= hi ? v : dflt
}

/**
 * POST /estimate for `chat`: the tokens of one model answer to `params.messages` (the system
 * prompt, the messages and, when tools may be called, their definitions, which every round
 * sends) and its cost. Tool rounds and tool prices come on top; the note says how.
 */
export function estimateChat(c: Capability, params: Record<string, unknown>) {
  const messages = Array.isArray(params.messages) ? params.messages : []
  const maxToolCalls = int(params.max_tool_calls, 0, MAX_CHAT_TOOL_CALLS, 3)
  const maxTokens = int(params.max_tokens, 1, MAX_CHAT_OUTPUT_TOKENS, 1024)
  const tools = maxToolCalls > 0 ? Buffer.byteLength(JSON.stringify(functionTools(chatTools()))) : 0
  const bytes = Buffer.byteLength(JSON.stringify(messages)) + Buffer.byteLength(SYSTEM_PROMPT) + tools
  const input = Math.ceil(bytes / BYTES_PER_TOKEN)
  return {
    estimated_cost_usd: microsToUsd(tokenCostMicros(c, input, maxTokens)),
    capability: c.id,
    pricing_model: c.model,
    note:
      `${microsToUsd(c.unitMicros)} / ${microsToUsd(c.outputUnitMicros ?? 0)} USD per 1k input / output tokens as the ` +
      'provider reports them, plus each tool call at its own price. This estimate is one model answer ' +
      `(about ${BYTES_PER_TOKEN} bytes a token, max_tokens of output); each tool round costs about as much ` +
      'again plus the tool. Before the model is called its tokens are reserved (the input budget, max_tokens ' +
      'per round); each tool call reserves its own price when it runs; only what is used is charged.',
    // The specification's integer total, its split beside it, and the bytes the input was counted from.
    estimated_tokens: input + maxTokens,
    estimated_tokens_split: { input, output: maxTokens },
    estimated_bytes: bytes,
    unit_cost_usd: microsToUsd(c.unitMicros),
  }
}
