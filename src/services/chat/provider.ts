import type OpenAI from 'openai'
import type { LlmConfig } from '../../platform/config.ts'
import { AppError } from '../../platform/errors.ts'

/**
 * The model provider: any OpenAI-compatible Chat Completions server, through the official SDK
 * with `baseURL`. Retries are off (maxRetries 0): a failed call is reported, never silently
 * repeated (and paid twice). Each call is bounded by LLM_TIMEOUT_MS, streamed or not.
 */

export interface ProviderToolCall {
  id: string
  name: string
  /** The model's JSON text, unparsed (it may be malformed). */
  arguments: string
}

/** One model answer and the usage the provider reported for it (null: it reported none). */
export interface ModelTurn {
  content: string
  toolCalls: ProviderToolCall[]
  finishReason: string
  usage: { input: number; output: number } | null
}

/** A Chat Completions request body, exactly as sent (its bytes bound the input tokens). */
export type ChatBody = Record<string, unknown> & { messages: unknown[]; max_tokens: number }

export interface ChatProvider {
  /** `onDelta` given: streams (`stream_options.include_usage`), passing each text fragment on. */
  complete(body: ChatBody, onDelta?: (text: string) => void): Promise<ModelTurn>
}

type Sdk = typeof import('openai')

/** What went wrong, for the client: the provider's status and a short message, never a credential. */
function providerError(
  { APIConnectionError, APIError, APIUserAbortError }: Sdk,
  err: unknown,
  timedOut: boolean,
  timeoutMs: number,
): AppError {
  if (timedOut || err instanceof APIUserAbortError)
    return new AppError('UPSTREAM_TIMEOUT', `The model provider did not answer within ${timeoutMs} ms`)
  if (err instanceof APIConnectionError)
    return new AppError('UPSTREAM_ERROR', 'The model provider could not be reached')
  if (err instanceof APIError) {
    const msg = typeof err.message === 'string' ? err.message.slice(0, 300) : ''
    return new AppError('UPSTREAM_ERROR', `The model provider answered ${err.status ?? 'an error'}: ${msg}`)
  }
  return new AppError('UPSTREAM_ERROR', 'The model provider answered something that is not a chat completion')
}

export function createChatProvider(cfg: LlmConfig): ChatProvider {
  // The SDK is loaded on first use: an instance without chat never pays its start-up.
  let sdk: Promise<{ sdk: Sdk; client: OpenAI }> | null = null
  const load = () => {
    sdk ??= import('openai').then((m) => ({
      sdk: m,
      client: new m.default({
        baseURL: cfg.baseUrl,
        // Local servers take no key; the SDK insists on one, so an inert placeholder goes instead.
        apiKey: cfg.apiKey ?? 'none',
        maxRetries: 0,
        timeout: cfg.timeoutMs,
      }),
    }))
    return sdk
  }
  return {
    async complete(body, onDelta) {
      const { sdk, client } = await load()
      const ac = new AbortController()
      let timedOut = false
      const timer = setTimeout(() => {
        timedOut = true
        ac.abort()
      }, cfg.timeoutMs)
      try {
        if (!onDelta) {
          const res = await client.chat.completions.create(
            body as unknown as OpenAI.ChatCompletionCreateParamsNonStreaming,
            { signal: ac.signal },
          )
          const choice = res.choices?.[0]
          if (!choice) throw new Error('no choice')
          return {
            content: choice.message?.content ?? '',
            toolCalls: (choice.message?.tool_calls ?? []).flatMap((c) =>
              c.type === 'function'
                ? [{ id: c.id, name: c.function.name, arguments: c.function.arguments ?? '' }]
                : [],
            ),
            finishReason: choice.finish_reason ?? 'stop',
            usage: res.usage ? { input: res.usage.prompt_tokens, output: res.usage.completion_tokens } : null,
          }
        }
        const stream = await client.chat.completions.create(
          body as unknown as OpenAI.ChatCompletionCreateParamsStreaming,
          { signal: ac.signal },
        )
        let content = ''
        let finishReason = 'stop'
        let usage: ModelTurn['usage'] = null
        const calls = new Map<number, ProviderToolCall>()
        for await (const chunk of stream) {
          if (chunk.usage) usage = { input: chunk.usage.prompt_tokens, output: chunk.usage.completion_tokens }
          const choice = chunk.choices?.[0]
          if (!choice) continue
          const text = choice.delta?.content
          if (text) {
            content += text
            onDelta(text)
          }
          for (const d of choice.delta?.tool_calls ?? []) {
            const c = calls.get(d.index) ?? { id: '', name: '', arguments: '' }
            if (d.id) c.id = d.id
            if (d.function?.name) c.name += d.function.name
            if (d.function?.arguments) c.arguments += d.function.arguments
            calls.set(d.index, c)
          }
          if (choice.finish_reason) finishReason = choice.finish_reason
        }
        const toolCalls = [...calls.entries()].sort((a, b) => a[0] - b[0]).map(([, c]) => c)
        return { content, toolCalls, finishReason, usage }
      } catch (err) {
        throw providerError(sdk, err, timedOut, cfg.timeoutMs)
      } finally {
        clearTimeout(timer)
      }
    },
  }
}
