import { resolveTicker } from '../analytics/tickers.ts'
import type { ServiceContext } from '../context.ts'
import { BYTES_PER_TOKEN } from './estimate.ts'
import type { ChatBody, ChatProvider, ModelTurn } from './provider.ts'
import { DATA_MARK } from './result-text.ts'

/**
 * The model of test keys: erm3 answers itself, deterministically, and never calls the operator's
 * provider (test keys are free, so a provider's tokens would be the operator's cost). It plays
 * the same rounds a model does, so a client can build against the flow: when the last user
 * message names a ticker of the sandbox market and tools may be called, the first round calls the
 * `metrics` tool for it (run, free, like any tool call of a test key); the answer then says what
 * came back. Every answer starts with SANDBOX_PREFIX. Its usage is estimated as POST /estimate
 * does (BYTES_PER_TOKEN) from the messages it read (tool definitions aside: it reads none) and the
 * answer, so test keys' token limit holds for it as for a model.
 */
const SANDBOX_PREFIX = '[sandbox]'

/** The note of every test key's chat (`notes`), for clients that read it rather than the text. */
export const SANDBOX_NOTE =
  "Sandbox: test keys chat with erm3's deterministic sandbox model; no language model provider was called."

const SANDBOX_TOOL = 'metrics'
const WORD = /[A-Z][A-Z0-9.-]{0,11}/g

interface Message {
  role: string
  content: string | null
  tool_call_id?: string
}

/** The first word of `text` that is a ticker of the sandbox market, as asked. */
function tickerIn(ctx: ServiceContext, text: string): string | null {
  const store = ctx.models.store('test')
  for (const [word] of text.matchAll(WORD)) {
    try {
      return resolveTicker(store, word).ticker
    } catch {
      // Not a ticker of the sandbox: the next word.
    }
  }
  return null
}

const tokens = (text: string) => Math.ceil(Buffer.byteLength(text, 'utf8') / BYTES_PER_TOKEN)

function usageOf(body: ChatBody, answer: string): NonNullable<ModelTurn['usage']> {
  return { input: tokens(JSON.stringify(body.messages)), output: tokens(answer) }
}

function reply(body: ChatBody, content: string, onDelta?: (text: string) => void): ModelTurn {
  onDelta?.(content)
  return { content, toolCalls: [], finishReason: 'stop', usage: usageOf(body, content) }
}

/** What the sandbox says of a tool result: its error code, or whose data came back, as of when. */
function described(result: string): string {
  let r: { error?: { code?: string }; symbol?: unknown; teo?: unknown } = {}
  try {
    const at = result.indexOf(DATA_MARK)
    r = JSON.parse(at < 0 ? result : result.slice(at + DATA_MARK.length)) as typeof r
  } catch {
    // A result cut to the tool-result limit is not JSON any more: data all the same.
  }
  if (r.error) return `failed with ${r.error.code ?? 'an error'}`
  const of = typeof r.symbol === 'string' ? ` for ${r.symbol}` : ''
  const asOf = typeof r.teo === 'string' ? ` as of ${r.teo}` : ''
  return `answered with the sandbox market's data${of}${asOf}`
}

export function createSandboxProvider(ctx: ServiceContext): ChatProvider {
  return {
    async complete(body, onDelta) {
      const messages = body.messages as Message[]
      const lastUser = messages.findLastIndex((m) => m.role === 'user')
      const results = messages.slice(lastUser + 1).filter((m) => m.role === 'tool')
      const intro =
        `${SANDBOX_PREFIX} This is erm3's sandbox chat for test keys: no language model was asked, ` +
        'and this deterministic reply was written by erm3 itself.'
      if (results.length > 0)
        return reply(
          body,
          `${intro} The ${SANDBOX_TOOL} tool ${described(results[0]?.content ?? '')}.`,
          onDelta,
        )
      const offered = ((body.tools ?? []) as { function: { name: string } }[]).some(
        (t) => t.function.name === SANDBOX_TOOL,
      )
      const ticker = tickerIn(ctx, messages[lastUser]?.content ?? '')
      if (ticker !== null && offered && body.tool_choice === 'auto') {
        const call = { id: 'sandbox_call_1', name: SANDBOX_TOOL, arguments: JSON.stringify({ ticker }) }
        const usage = usageOf(body, call.arguments)
        return { content: '', toolCalls: [call], finishReason: 'tool_calls', usage }
      }
      const hint =
        ticker === null
          ? ' Name a ticker of the sandbox market (GET /tickers with a test key lists them) to see a tool call.'
          : ''
      return reply(body, `${intro}${hint}`, onDelta)
    },
  }
}
