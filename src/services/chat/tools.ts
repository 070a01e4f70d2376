import type { Transport } from '../../contract/client.ts'
import { microsToUsd, usdToMicros } from '../../contract/pricing.ts'
import { type ToolSpec, toolCatalogue, toolRequest } from '../../contract/tools.ts'
import { AppError } from '../../platform/errors.ts'
import type { ProviderToolCall } from './provider.ts'
import { chatToolContent } from './result-text.ts'

/**
 * The tools a chat offers: the MCP catalogue (read-only data and account views; chat itself is
 * not in it), as Chat Completions function tools. A call runs as the REST request it stands for,
 * with the caller's own key, through the in-process transport: auth, prices, metering and errors
 * are the REST ones.
 */

/** Tool results fed back to the model fit here (bytes of UTF-8): newest rows kept, a note on the rest. */
const TOOL_RESULT_MAX_BYTES = 12 * 1024

export interface ChatToolCallSummary {
  tool: string
  capability: string | null
  cost_usd: number
  latency_ms: number
  error: string | null
}

export interface ToolOutcome {
  summary: ChatToolCallSummary
  costMicros: number
  /** What the model reads as the tool message. */
  content: string
}

export function chatTools(): ToolSpec[] {
  return toolCatalogue()
}

/** The first sentence of `text`, at most `max` characters (cut on a word, with an ellipsis). */
function firstSentence(text: string, max: number): string {
  const m = /^(.+?[.!?])(\s|$)/.exec(text)
  const first = (m?.[1] ?? text).trim()
  if (first.length <= max) return first
  return `${first.slice(0, max - 1).replace(/\s+\S*$/, '')}…`
}

/** Keywords a model needs to call a tool right; the rest (patterns, formats, long prose) is the server's to check. */
const SCHEMA_KEPT = new Set([
  'type',
  'properties',
  'required',
  'items',
  'enum',
  'const',
  'minimum',
  'maximum',
  'minItems',
  'maxItems',
  'default',
  'anyOf',
  'oneOf',
  'additionalProperties',
])

function compactSchema(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(compactSchema)
  if (schema === null || typeof schema !== 'object') return schema
  const out: Record<string, unknown> = {}
  // A union of string constants is an enum, in a quarter of the bytes.
  const any = (schema as { anyOf?: { type?: string; const?: unknown }[] }).anyOf
  if (any?.length && any.every((x) => x.type === 'string' && typeof x.const === 'string'))
    out.enum = any.map((x) => x.const)
  for (const [k, v] of Object.entries(schema as Record<string, unknown>)) {
    if (k === 'properties' && v && typeof v === 'object')
      out[k] = Object.fromEntries(Object.entries(v).map(([name, p]) => [name, compactSchema(p)]))
    else if (k === 'description' && typeof v === 'string') out[k] = firstSentence(v, 60)
    else if (k === 'anyOf' && out.enum) out.type = 'string'
    else if (SCHEMA_KEPT.has(k)) out[k] = compactSchema(v)
  }
  return out
}

/**
 * The price that starts a tool's description (contract/tools.ts: `FREE.` or `PAID: …; ….`, with an
 * `EXPENSIVE: ….` notice on the dearest tools), and what the tool does after it.
 */
const PRICE_PREFIX = /^(FREE\.|PAID: .*?\.(?= |$))( EXPENSIVE: .*?\.(?= |$))?\s*/
function splitPrice(description: string): { price: string; what: string } {
  const m = PRICE_PREFIX.exec(description)
  return m ? { price: m[0].trim(), what: description.slice(m[0].length) } : { price: '', what: description }
}

/**
 * The tools as Chat Completions function definitions, compact: sent to the provider every round,
 * they cost input tokens, so each says what it does in one sentence and its price, and its
 * parameters keep their types, bounds and a one-sentence description (the full documentation is
 * the MCP catalogue's and the OpenAPI document's).
 */
export function functionTools(tools: readonly ToolSpec[]) {
  return tools.map((t) => {
    const { price, what } = splitPrice(t.description)
    return {
      type: 'function' as const,
      function: {
        name: t.name,
        description: price ? `${firstSentence(what, 160)} ${price}` : firstSentence(what, 160),
        parameters: compactSchema(t.inputSchema) as Record<string, unknown>,
      },
    }
  })
}

/** A call that is not run (unknown tool, malformed arguments, over the limit): the model reads why. */
export function refusedCall(
  call: ProviderToolCall,
  tool: ToolSpec | undefined,
  code: string,
  detail: string,
) {
  return {
    summary: {
      tool: call.name.slice(0, 100),
      capability: tool?.capability?.id ?? null,
      cost_usd: 0,
      latency_ms: 0,
      error: `${code}: ${detail}`,
    },
    costMicros: 0,
    content: JSON.stringify({ error: { code, detail } }),
  } satisfies ToolOutcome
}

/** Parses the model's arguments: a JSON object, or the reason it is not one. */
export function parseArguments(text: string): Record<string, unknown> | string {
  let v: unknown
  try {
    v = JSON.parse(text === '' ? '{}' : text)
  } catch {
    return 'the arguments are not valid JSON'
  }
  if (v === null || typeof v !== 'object' || Array.isArray(v)) return 'the arguments must be a JSON object'
  return v as Record<string, unknown>
}

/** Runs one tool call as its REST request, with the caller's own key; never throws for a tool's error. */
export async function runTool(
  transport: Transport,
  tool: ToolSpec,
  args: Record<string, unknown>,
  bearer: string,
  requestId: string,
): Promise<ToolOutcome> {
  const started = performance.now()
  let req: ReturnType<typeof toolRequest>
  try {
    req = toolRequest(tool, args, bearer)
  } catch (err) {
    // A path parameter that is not valid (`..`): refused before any request, like a 400.
    if (!(err instanceof AppError)) throw err
    const base = { tool: tool.name, capability: tool.capability?.id ?? null, latency_ms: 0 }
    return {
      summary: { ...base, cost_usd: 0, error: `${err.code}: ${err.message}` },
      costMicros: 0,
      content: JSON.stringify({ error: { code: err.code, status: 400, detail: err.message } }),
    }
  }
  req.headers['x-request-id'] = requestId
  const res = await transport(req)
  const latency_ms = Math.max(0, Math.round(performance.now() - started))
  let body: Record<string, unknown> = {}
  try {
    body = JSON.parse(res.body) as Record<string, unknown>
  } catch {
    body = { detail: res.body.slice(0, 500) }
  }
  const base = { tool: tool.name, capability: tool.capability?.id ?? null, latency_ms }
  if (res.status >= 400) {
    const code = typeof body.code === 'string' ? body.code : `HTTP_${res.status}`
    const detail = String(body.detail ?? body.title ?? '')
    return {
      summary: { ...base, cost_usd: 0, error: `${code}: ${detail}` },
      costMicros: 0,
      content: JSON.stringify({ error: { code, status: res.status, detail } }),
    }
  }
  const agent = body._agent as { cost_usd?: number } | undefined
  const costMicros = usdToMicros(typeof agent?.cost_usd === 'number' ? agent.cost_usd : 0)
  return {
    summary: { ...base, cost_usd: microsToUsd(costMicros), error: null },
    costMicros,
    content: chatToolContent(tool.name, res.body, TOOL_RESULT_MAX_BYTES),
  }
}
