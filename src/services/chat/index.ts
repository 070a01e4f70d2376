import type { Transport } from '../../contract/client.ts'
import { MAX_CHAT_CONTENT_BYTES } from '../../contract/ops/chat.ts'
import { type Capability, microsToUsd } from '../../contract/pricing.ts'
import type { ToolSpec } from '../../contract/tools.ts'
import type { LlmConfig } from '../../platform/config.ts'
import { AppError } from '../../platform/errors.ts'
import { type AgentMeta, agentMeta } from '../agent-meta.ts'
import { recordUsage } from '../billing/usage.ts'
import type { ServiceContext } from '../context.ts'
import type { Principal } from '../identity/keys.ts'
import { takeKeyToken } from '../limits.ts'
import { type ChatWallet, releaseWallet, reserveChat, settleChat, tokenCostMicros } from './budget.ts'
import { admitChat, chargeTokens } from './limits.ts'
import { SYSTEM_PROMPT } from './prompt.ts'
import {
  type ChatBody,
  type ChatProvider,
  createChatProvider,
  type ModelTurn,
  type ProviderToolCall,
} from './provider.ts'
import { createSandboxProvider, SANDBOX_NOTE } from './sandbox.ts'
import {
  type ChatToolCallSummary,
  chatTools,
  functionTools,
  parseArguments,
  refusedCall,
  runTool,
  type ToolOutcome,
} from './tools.ts'

/**
 * POST /chat: the model answers by calling erm3's tools with the caller's key, in rounds (a model
 * answer, then the tool calls it asked for), until it answers without tools or a bound stops it.
 * `prepareChat` does everything that can refuse the request cheaply (configuration, size, limits,
 * the worst-case reservation) before any byte of a streamed answer; `runChat` talks to the model.
 */

export interface ChatRequest {
  messages: { role: 'user' | 'assistant'; content: string }[]
  stream?: boolean
  max_tool_calls?: number
  max_tokens?: number
  /** Only these tools are offered to the model (default: all of them). */
  tools?: string[]
}

export interface PreparedChat {
  cfg: LlmConfig
  provider: ChatProvider
  principal: Principal
  bearer: string
  requestId: string
  startedAt: number
  transport: Transport
  capability: Capability
  tools: ToolSpec[]
  maxToolCalls: number
  maxTokens: number
  /** Input tokens this chat may use: request-body bytes over all rounds (reserved). */
  inputBound: number
  stream: boolean
  messages: Record<string, unknown>[]
  wallet: ChatWallet
}

/** No round starts that could end after this much time since the request arrived. */
const CHAT_DEADLINE_MS = 8 * 60_000

const providers = new WeakMap<LlmConfig, ChatProvider>()

function providerOf(cfg: LlmConfig): ChatProvider {
  let p = providers.get(cfg)
  if (!p) {
    p = createChatProvider(cfg)
    providers.set(cfg, p)
  }
  return p
}

function bodyOf(c: PreparedChat, toolsAllowed: boolean, stream: boolean): ChatBody {
  return {
    model: c.cfg.model,
    messages: c.messages,
    max_tokens: c.maxTokens,
    // No tool may be called at all: the definitions (about 20 KB for all) are not sent either.
    ...(c.maxToolCalls > 0 && c.tools.length > 0
      ? { tools: functionTools(c.tools), tool_choice: toolsAllowed ? 'auto' : 'none' }
      : {}),
    ...(stream ? { stream: true, stream_options: { include_usage: true } } : {}),
  }
}

const bytesOf = (body: ChatBody) => Buffer.byteLength(JSON.stringify(body), 'utf8')

/** The tools a request allows (all by default); an unknown name is a 400 listing the known ones. */
function offeredTools(names: string[] | undefined): ToolSpec[] {
  const all = chatTools()
  if (names === undefined) return all
  const unknown = names.filter((n) => !all.some((t) => t.name === n))
  if (unknown.length)
    throw new AppError(
      'INVALID_REQUEST',
      `Unknown tool${unknown.length > 1 ? 's' : ''} in tools: ${unknown.join(', ')}; the tools are ${all.map((t) => t.name).join(', ')}`,
    )
  return all.filter((t) => names.includes(t.name))
}

export async function prepareChat(
  ctx: ServiceContext,
  a: {
    principal: Principal
    bearer: string | null
    requestId: string
    startedAt: number
    transport: Transport
    capability: Capability
  },
  req: ChatRequest,
  stream: boolean,
): Promise<PreparedChat> {
  const cfg = ctx.config.llm
  if (!cfg)
    throw new AppError(
      'UNAVAILABLE',
      'Chat is not configured on this instance: the operator sets LLM_BASE_URL and LLM_MODEL ' +
        '(and LLM_API_KEY when the provider needs one) to an OpenAI-compatible Chat Completions provider',
    )
  if (!a.bearer) throw new AppError('MISSING_CREDENTIALS', 'No API key')
  const size = req.messages.reduce((n, m) => n + Buffer.byteLength(m.content, 'utf8'), 0)
  if (size > MAX_CHAT_CONTENT_BYTES)
    throw new AppError(
      'INVALID_REQUEST',
      `The messages hold ${size} bytes of content; at most ${MAX_CHAT_CONTENT_BYTES} per request`,
    )
  const tools = offeredTools(req.tools)
  const maxToolCalls = tools.length === 0 ? 0 : (req.max_tool_calls ?? 3)
  const maxTokens = req.max_tokens ?? 1024
  const chat: PreparedChat = {
    cfg,
    // Test keys never reach the operator's provider: erm3's own sandbox model answers them.
    provider: a.principal.environment === 'test' ? createSandboxProvider(ctx) : providerOf(cfg),
    principal: a.principal,
    bearer: a.bearer,
    requestId: a.requestId,
    startedAt: a.startedAt,
    transport: a.transport,
    capability: a.capability,
    tools,
    maxToolCalls,
    maxTokens,
    inputBound: cfg.maxInputTokens,
    stream,
    messages: [
      { role: 'system', content: SYSTEM_PROMPT },
      ...req.messages.map((m) => ({ role: m.role, content: m.content })),
    ],
    wallet: { llmReservation: null, llmReservedMicros: 0 },
  }
  const first = bytesOf(bodyOf(chat, maxToolCalls > 0, stream))
  if (first > cfg.maxInputTokens)
    throw new AppError(
      'INVALID_REQUEST',
      `The conversation and the tool definitions take ${first} bytes, more than this instance's chat input budget of ${cfg.maxInputTokens} tokens; send fewer or shorter messages`,
    )
  await admitChat(ctx, cfg, a.principal)
  const rounds = maxToolCalls + 1
  // One round only: its request is known, so its bytes are the input bound.
  if (rounds === 1) chat.inputBound = first
  const llmMicros = tokenCostMicros(a.capability, chat.inputBound, rounds * maxTokens)
  chat.wallet = await reserveChat(ctx, a.principal, llmMicros)
  return chat
}

export interface ChatEvents {
  onToolCall?: (s: ChatToolCallSummary) => void
  onDelta?: (text: string) => void
  /** True once the client went away: no new round or tool call starts. */
  aborted?: () => boolean
}

export interface ChatResult {
  message: { role: 'assistant'; content: string }
  tool_calls: ChatToolCallSummary[]
  finish_reason: string
  usage: { input_tokens: number; output_tokens: number }
  notes: string[]
  _agent: AgentMeta & { llm_cost_usd: number; tool_cost_usd: number; tool_calls: number }
}

/** Secrets the model must never read, even if a tool result or error echoed one. */
function scrub(c: PreparedChat, text: string): string {
  let out = text.replaceAll(c.bearer, '[redacted]')
  if (c.cfg.apiKey) out = out.replaceAll(c.cfg.apiKey, '[redacted]')
  return out
}

interface Tally {
  input: number
  output: number
  toolMicros: number
  calls: ChatToolCallSummary[]
  executed: number
  /** Why the balance stopped the tools (a call refused 402), once it has. */
  broke: string | null
}

/** One round's reported usage, capped at the round's bounds (request bytes, max_tokens). */
function countUsage(ctx: ServiceContext, t: Tally, turn: ModelTurn, bytes: number, maxTokens: number): void {
  if (!turn.usage) {
    ctx.log.warn('chat: the model provider reported no usage for a round; it is not charged')
    return
  }
  const input = Math.max(0, Math.min(turn.usage.input, bytes))
  const output = Math.max(0, Math.min(turn.usage.output, maxTokens))
  if (input < turn.usage.input || output < turn.usage.output)
    ctx.log.warn(
      { reported: turn.usage, bound: { input: bytes, output: maxTokens } },
      'chat: the provider reported more tokens than the bound; charged the bound',
    )
  t.input += input
  t.output += output
}

/**
 * A tool call takes a token of the key's general rate limit, as the REST call it stands for does
 * (the in-process transport skips the auth hook's one). Null when allowed, else why not.
 */
async function rateRefusal(ctx: ServiceContext, p: Principal): Promise<string | null> {
  try {
    await takeKeyToken(ctx, p)
    return null
  } catch (e) {
    if (e instanceof AppError && e.code === 'RATE_LIMITED') return e.message
    throw e
  }
}

/** One tool call the model asked for: refused (and why) or run as its REST request. */
async function outcomeOf(
  ctx: ServiceContext,
  c: PreparedChat,
  call: ProviderToolCall,
  t: Tally,
  ev: ChatEvents,
): Promise<ToolOutcome> {
  const tool = c.tools.find((x) => x.name === call.name)
  if (!tool)
    return refusedCall(
      call,
      undefined,
      'UNKNOWN_TOOL',
      `no tool named ${JSON.stringify(call.name.slice(0, 100))}`,
    )
  const args = parseArguments(call.arguments)
  if (typeof args === 'string') return refusedCall(call, tool, 'INVALID_ARGUMENTS', args)
  if (t.executed >= c.maxToolCalls)
    return refusedCall(
      call,
      tool,
      'TOOL_CALL_LIMIT',
      `tool call limit reached (max_tool_calls ${c.maxToolCalls})`,
    )
  if (ev.aborted?.()) return refusedCall(call, tool, 'ABORTED', 'the client went away')
  if (t.broke)
    return refusedCall(
      call,
      tool,
      'INSUFFICIENT_BALANCE',
      `not run: an earlier tool call of this chat was refused (${t.broke})`,
    )
  const limited = await rateRefusal(ctx, c.principal)
  if (limited) return refusedCall(call, tool, 'RATE_LIMITED', limited)
  t.executed++
  // The tool reserves its own price before it runs (its metered REST path); a 402 stops the tools.
  const out = await runTool(c.transport, tool, args, c.bearer, `${c.requestId.slice(0, 56)}.t${t.executed}`)
  if (/^(INSUFFICIENT_BALANCE|SPEND_CAP_REACHED): /.test(out.summary.error ?? '')) t.broke = out.summary.error
  return out
}

async function runCalls(ctx: ServiceContext, c: PreparedChat, turn: ModelTurn, t: Tally, ev: ChatEvents) {
  for (const call of turn.toolCalls) {
    const out = await outcomeOf(ctx, c, call, t, ev)
    t.toolMicros += out.costMicros
    t.calls.push(out.summary)
    ev.onToolCall?.(out.summary)
    c.messages.push({ role: 'tool', tool_call_id: call.id, content: scrub(c, out.content) })
  }
}

function agentOf(ctx: ServiceContext, c: PreparedChat, t: Tally, llmMicros: number): ChatResult['_agent'] {
  const failed = t.calls.filter((x) => x.error !== null).length
  const share = t.calls.length ? 1 - failed / t.calls.length : 1
  const meta = agentMeta({
    costMicros: llmMicros + t.toolMicros,
    startedAt: c.startedAt,
    now: performance.now(),
    requestId: c.requestId,
    confidence: { overall: share, factors: { tool_success: share } },
    dataAsOf: ctx.models.store(c.principal.environment).dataAsOf,
    billingCode: c.capability.billingCode,
    cacheStatus: 'BYPASS',
  })
  return {
    ...meta,
    llm_cost_usd: microsToUsd(llmMicros),
    tool_cost_usd: microsToUsd(t.toolMicros),
    tool_calls: t.calls.length,
  }
}

const brokeNote = (why: string) =>
  `The balance could not cover a tool call (${why}); no further tool ran. The tokens and the tools that ran are charged; top up to continue.`

/** The rounds, then the settlement. Provider failures answer 502/504 stating what was charged. */
export async function runChat(
  ctx: ServiceContext,
  c: PreparedChat,
  ev: ChatEvents = {},
): Promise<ChatResult> {
  const t: Tally = { input: 0, output: 0, toolMicros: 0, calls: [], executed: 0, broke: null }
  const notes: string[] = c.principal.environment === 'test' ? [SANDBOX_NOTE] : []
  const rounds = c.maxToolCalls + 1
  let inputUsed = 0
  let content = ''
  let finish = 'stop'
  const settle = async () => {
    const llm = await settleChat(
      ctx,
      c.wallet,
      c.principal,
      c.capability,
      tokenCostMicros(c.capability, t.input, t.output),
      c.requestId,
    )
    recordUsage(ctx, c.principal, c.capability, llm, false)
    await chargeTokens(ctx, c.cfg, c.principal, t.input + t.output).catch((e: Error) =>
      ctx.log.warn({ err: e.message }, 'chat: could not count tokens against the key limit'),
    )
    return llm
  }
  try {
    for (let round = 0; round < rounds; round++) {
      if (ev.aborted?.()) {
        notes.push('The client went away; no further round was started.')
        break
      }
      // A round that could outlive the chat deadline does not start (reservations older than ten
      // minutes are taken for a crashed node's and released by the ledger reconcile).
      if (round > 0 && performance.now() - c.startedAt + c.cfg.timeoutMs > CHAT_DEADLINE_MS) {
        finish = 'time_budget'
        notes.push('The chat ran out of time for another round; this is the answer so far.')
        break
      }
      const toolsAllowed = t.executed < c.maxToolCalls && round < rounds - 1 && t.broke === null
      const body = bodyOf(c, toolsAllowed, c.stream)
      const bytes = bytesOf(body)
      if (inputUsed + bytes > c.inputBound) {
        finish = 'input_budget'
        notes.push('The conversation grew past the chat input budget; this is the answer so far.')
        break
      }
      inputUsed += bytes
      const turn = await c.provider.complete(body, c.stream ? (ev.onDelta ?? (() => undefined)) : undefined)
      countUsage(ctx, t, turn, bytes, c.maxTokens)
      content = turn.content
      finish = turn.finishReason
      if (turn.toolCalls.length === 0) break
      if (!toolsAllowed) {
        finish = 'tool_call_limit'
        if (t.broke === null)
          notes.push(`The tool call limit (max_tool_calls ${c.maxToolCalls}) was reached.`)
        break
      }
      c.messages.push({
        role: 'assistant',
        content: turn.content === '' ? null : turn.content,
        tool_calls: turn.toolCalls.map((x) => ({
          id: x.id,
          type: 'function',
          function: { name: x.name, arguments: x.arguments },
        })),
      })
      await runCalls(ctx, c, turn, t, ev)
    }
  } catch (err) {
    // The failed call is not charged; rounds before it were served and are.
    const llm = await settle().catch(async (e: unknown) => {
      await releaseWallet(ctx, c.wallet)
      throw e
    })
    if (err instanceof AppError && (err.code === 'UPSTREAM_ERROR' || err.code === 'UPSTREAM_TIMEOUT')) {
      const charged = llm + t.toolMicros
      throw new AppError(
        err.code,
        `${err.message}. Charged for this chat: ${microsToUsd(charged)} USD (${microsToUsd(llm)} for the tokens of earlier rounds, ${microsToUsd(t.toolMicros)} for tool calls); the failed model call costs nothing.`,
        {
          extra: {
            charged_usd: microsToUsd(charged),
            llm_cost_usd: microsToUsd(llm),
            tool_cost_usd: microsToUsd(t.toolMicros),
            tool_calls: t.calls,
          },
        },
      )
    }
    throw err
  }
  if (t.broke !== null) notes.push(brokeNote(t.broke))
  const llm = await settle()
  return {
    message: { role: 'assistant', content },
    tool_calls: t.calls,
    finish_reason: finish,
    usage: { input_tokens: t.input, output_tokens: t.output },
    notes,
    _agent: agentOf(ctx, c, t, llm),
  }
}
