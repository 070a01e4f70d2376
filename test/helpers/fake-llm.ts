import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'

/**
 * A local OpenAI-compatible Chat Completions server for the chat tests: `POST /v1/chat/completions`
 * in the real wire format (a JSON `chat.completion` with `usage`, or with `stream: true` SSE
 * `chat.completion.chunk`s, `data: [DONE]`, and a final usage chunk when
 * `stream_options.include_usage`). Scripted per test by a queue of steps; records every request
 * body (raw text and parsed) and its Authorization header.
 */

export interface FakeUsage {
  prompt_tokens: number
  completion_tokens: number
}

export type FakeStep =
  | { kind: 'text'; content: string; usage?: FakeUsage | null; finish?: string; chunkDelayMs?: number }
  | {
      kind: 'tools'
      calls: { name: string; arguments: string; id?: string }[]
      content?: string
      usage?: FakeUsage | null
      chunkDelayMs?: number
    }
  | { kind: 'error'; status: number; message?: string }
  /** Never answers (until the server closes): the client's timeout must fire. */
  | { kind: 'hang' }

export interface FakeRequest {
  raw: string
  body: {
    model: string
    messages: { role: string; content: string | null; tool_calls?: unknown[]; tool_call_id?: string }[]
    max_tokens: number
    stream?: boolean
    tools?: { type: string; function: { name: string } }[]
    tool_choice?: string
    stream_options?: { include_usage?: boolean }
  }
  authorization: string | null
}

export interface FakeLlm {
  /** Base URL to configure as LLM_BASE_URL (ends in /v1). */
  url: string
  requests: FakeRequest[]
  /** Steps still to play; when empty, the server answers `ok` with DEFAULT_USAGE. */
  queue: FakeStep[]
  script(...steps: FakeStep[]): void
  /** Resolves once the n-th request (1-based) has been answered completely (or failed). */
  answered(n: number): Promise<void>
  close(): Promise<void>
}

export const DEFAULT_USAGE: FakeUsage = { prompt_tokens: 100, completion_tokens: 10 }

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

function completion(step: Exclude<FakeStep, { kind: 'error' | 'hang' }>, model: string) {
  const calls =
    step.kind === 'tools'
      ? step.calls.map((c, i) => ({
          id: c.id ?? `call_${i + 1}`,
          type: 'function',
          function: { name: c.name, arguments: c.arguments },
        }))
      : undefined
  const usage = step.usage === undefined ? DEFAULT_USAGE : step.usage
  return {
    id: 'chatcmpl-fake',
    object: 'chat.completion',
    created: Math.floor(Date.now() / 1000),
    model,
    choices: [
      {
        index: 0,
        message: {
          role: 'assistant',
          content: step.kind === 'text' ? step.content : (step.content ?? null),
          ...(calls ? { tool_calls: calls } : {}),
        },
        finish_reason: step.kind === 'tools' ? 'tool_calls' : (step.finish ?? 'stop'),
      },
    ],
    ...(usage ? { usage: { ...usage, total_tokens: usage.prompt_tokens + usage.completion_tokens } } : {}),
  }
}

async function streamStep(
  res: ServerResponse,
  step: Exclude<FakeStep, { kind: 'error' | 'hang' }>,
  req: FakeRequest,
): Promise<void> {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' })
  const base = { id: 'chatcmpl-fake', object: 'chat.completion.chunk', created: 1, model: req.body.model }
  const write = async (choices: unknown[], extra: Record<string, unknown> = {}) => {
    if (res.destroyed) return
    res.write(`data: ${JSON.stringify({ ...base, choices, ...extra })}\n\n`)
    if (step.chunkDelayMs) await sleep(step.chunkDelayMs)
  }
  await write([{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }])
  const text = step.kind === 'text' ? step.content : (step.content ?? '')
  // Several fragments, split on spaces, so a client sees more than one delta.
  for (const piece of text.match(/\S+\s*|\s+/g) ?? [])
    await write([{ index: 0, delta: { content: piece }, finish_reason: null }])
  if (step.kind === 'tools') {
    for (const [i, c] of step.calls.entries()) {
      const half = Math.floor(c.arguments.length / 2)
      await write([
        {
          index: 0,
          delta: {
            tool_calls: [
              {
                index: i,
                id: c.id ?? `call_${i + 1}`,
                type: 'function',
                function: { name: c.name, arguments: c.arguments.slice(0, half) },
              },
            ],
          },
          finish_reason: null,
        },
      ])
      await write([
        {
          index: 0,
          delta: { tool_calls: [{ index: i, function: { arguments: c.arguments.slice(half) } }] },
          finish_reason: null,
        },
      ])
    }
  }
  await write([{ index: 0, delta: {}, finish_reason: step.kind === 'tools' ? 'tool_calls' : 'stop' }])
  const usage = step.usage === undefined ? DEFAULT_USAGE : step.usage
  if (usage && req.body.stream_options?.include_usage)
    await write([], { usage: { ...usage, total_tokens: usage.prompt_tokens + usage.completion_tokens } })
  if (!res.destroyed) res.end('data: [DONE]\n\n')
}

export async function startFakeLlm(): Promise<FakeLlm> {
  const requests: FakeRequest[] = []
  const queue: FakeStep[] = []
  const done: (() => void)[] = []
  const finished: boolean[] = []
  const waiters = new Map<number, () => void>()
  const mark = (n: number) => {
    finished[n] = true
    waiters.get(n)?.()
  }
  const server = createServer(async (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = []
    for await (const c of req) chunks.push(c as Buffer)
    if (req.method !== 'POST' || req.url !== '/v1/chat/completions') {
      res.writeHead(404, { 'content-type': 'application/json' })
      res.end(JSON.stringify({ error: { message: `no route ${req.method} ${req.url}` } }))
      return
    }
    const raw = Buffer.concat(chunks).toString('utf8')
    const rec: FakeRequest = {
      raw,
      body: JSON.parse(raw) as FakeRequest['body'],
      authorization: req.headers.authorization ?? null,
    }
    requests.push(rec)
    const n = requests.length
    const step: FakeStep = queue.shift() ?? { kind: 'text', content: 'ok' }
    try {
      if (step.kind === 'hang') {
        await new Promise<void>((r) => {
          done.push(r)
          res.once('close', () => r())
        })
        return
      }
      if (step.kind === 'error') {
        res.writeHead(step.status, { 'content-type': 'application/json' })
        res.end(
          JSON.stringify({
            error: { message: step.message ?? 'fake provider failure', type: 'server_error' },
          }),
        )
        return
      }
      if (rec.body.stream) {
        await streamStep(res, step, rec)
        return
      }
      res.writeHead(200, { 'content-type': 'application/json' })
      res.end(JSON.stringify(completion(step, rec.body.model)))
    } finally {
      mark(n)
    }
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}/v1`,
    requests,
    queue,
    script(...steps) {
      queue.push(...steps)
    },
    answered(n) {
      if (finished[n]) return Promise.resolve()
      return new Promise((r) => waiters.set(n, r))
    },
    async close() {
      for (const r of done) r()
      server.closeAllConnections()
      await new Promise<void>((r) => server.close(() => r()))
    },
  }
}
