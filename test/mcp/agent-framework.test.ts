import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import {
  Agent,
  MCPServerStreamableHttp,
  OpenAIChatCompletionsModel,
  run,
  setTracingDisabled,
} from '@openai/agents'
import OpenAI from 'openai'
import { type FakeLlm, startFakeLlm } from '../helpers/fake-llm.ts'
import { guardEgress } from '../helpers/no-egress.ts'
import { startTestApp, type TestApp } from '../helpers/test-app.ts'

/**
 * An off-the-shelf agent framework (the OpenAI Agents SDK for TypeScript) connected to erm3's MCP
 * server over Streamable HTTP with a bearer key, its model a scripted local Chat Completions
 * provider (test/helpers/fake-llm.ts). The framework's default hands the model only the text
 * content of a tool result (structured content is opt-in), so the tool message it sends must
 * already carry what the model needs (docs/agents.md): the numbers, the date, the dataset, the
 * cost and the balance. The expected values come from the same answer read over REST.
 */

const sig6 = (x: number) => String(Number(x.toPrecision(6)))

interface MetricsBody {
  ticker: string
  metrics: Record<string, number | null>
  _metadata: { data_as_of: string; dataset: { kind: string } }
}

describe('an agent framework reads erm3 tool results as text', () => {
  // Tracing is off and every connection is checked: the run talks to loopback only.
  const guard = guardEgress()
  let t: TestApp
  let base: string
  let fake: FakeLlm
  before(async () => {
    setTracingDisabled(true)
    fake = await startFakeLlm()
    t = await startTestApp()
    base = await t.listen()
  })
  after(async () => {
    await t?.close()
    await fake?.close()
    guard.restore()
  })

  test('metrics for AAPL: the tool message the model receives carries the answer', async () => {
    const account = await t.account(1)
    const key = await t.key(account)
    const mcp = new MCPServerStreamableHttp({
      url: new URL('/mcp', base).href,
      name: 'erm3',
      requestInit: { headers: { authorization: `Bearer ${key}` } },
    })
    await mcp.connect()
    fake.script(
      { kind: 'tools', calls: [{ name: 'metrics', arguments: '{"ticker":"AAPL"}', id: 'call_m1' }] },
      { kind: 'text', content: 'AAPL: hedge ratios read.' },
    )
    const n0 = fake.requests.length
    const client = new OpenAI({ baseURL: fake.url, apiKey: 'sk-fake-agent-model', maxRetries: 0 })
    const agent = new Agent({
      name: 'risk analyst',
      instructions: 'Answer with erm3 numbers.',
      model: new OpenAIChatCompletionsModel(client, 'fake-model'),
      mcpServers: [mcp],
    })
    const result = await run(agent, 'What are the hedge ratios of AAPL?', { maxTurns: 3 }).finally(() =>
      mcp.close(),
    )
    assert.equal(result.finalOutput, 'AAPL: hedge ratios read.')
    assert.equal(fake.requests.length, n0 + 2, 'two model turns')
    const offered = fake.requests[n0]?.body.tools?.map((x) => x.function.name) ?? []
    assert.ok(offered.includes('metrics'), `tools offered: ${offered.join(', ')}`)

    // What the framework sent the model as the tool's result.
    const toolMsg = fake.requests[n0 + 1]?.body.messages.find((m) => m.role === 'tool')
    assert.equal(toolMsg?.tool_call_id, 'call_m1')
    const text = String(toolMsg?.content)
    assert.doesNotMatch(text, /"structuredContent"/, 'the model gets the text, not the structure')

    // The same answer read directly over REST (a cache hit: free, same numbers).
    const res = await fetch(new URL('/metrics/AAPL', base), { headers: { authorization: `Bearer ${key}` } })
    assert.equal(res.status, 200)
    const body = (await res.json()) as MetricsBody
    assert.equal(body.ticker, 'AAPL')
    assert.ok(text.includes(`data as of ${body._metadata.data_as_of}`), text)
    assert.equal(body._metadata.dataset.kind, 'synthetic')
    assert.match(text, /SYNTHETIC/)
    // Every hedge ratio the answer has, and the market and residual shares of variance.
    const shown = Object.entries(body.metrics).filter(
      (e): e is [string, number] => typeof e[1] === 'number' && /_hr$|^l3_(mkt|res)_er$/.test(e[0]),
    )
    assert.ok(shown.filter(([k]) => k.endsWith('_hr')).length >= 3, JSON.stringify(body.metrics))
    for (const [k, v] of shown)
      assert.ok(text.includes(`metrics.${k} = ${sig6(v)} (`), `${k} = ${v} in the tool message:\n${text}`)
    assert.ok(text.includes('(USD of ETF per USD 1 of stock)'), text)
    // One paid call (0.001 USD) out of 1 USD; the REST read was a free hit.
    const left = (await t.ctx.accounts.balance(account)).balanceMicros
    assert.equal(left, 999_000)
    assert.ok(text.includes(`Cost 0.001 USD (MISS); balance after the call ${sig6(left / 1e6)} USD.`), text)
    assert.deepEqual(
      guard.attempts.filter((a) => !a.passed),
      [],
      'no connection beyond loopback',
    )
  })
})
