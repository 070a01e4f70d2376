import assert from 'node:assert/strict'
import type { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js'
import { KEY_RULES } from '../../src/services/limits.ts'
import type { TestApp } from '../helpers/test-app.ts'

export const MCP_TRANSPORTS = ['streamable HTTP', 'SSE'] as const
export type McpTransportName = (typeof MCP_TRANSPORTS)[number]

/** One of the server's two MCP transports, as the SDK client opens it with a bearer key. */
export function mcpTransport(name: McpTransportName, base: string, key: string): Transport {
  if (name === 'streamable HTTP')
    return new StreamableHTTPClientTransport(new URL('/mcp', base), {
      requestInit: { headers: { authorization: `Bearer ${key}` } },
    })
  return new SSEClientTransport(new URL('/mcp/sse', base), {
    requestInit: { headers: { authorization: `Bearer ${key}` } },
    eventSourceInit: {
      fetch: (u, init) =>
        fetch(u, { ...init, headers: { ...(init?.headers ?? {}), authorization: `Bearer ${key}` } }),
    },
  })
}

/**
 * A raw GET of an MCP event stream (the SSE transport's `/mcp/sse`, or `/mcp` with a session id),
 * held open until `close()`; a refusal is read whole and its problem returned.
 */
export async function openStream(
  base: string,
  key: string,
  path = '/mcp/sse',
  headers: Record<string, string> = {},
): Promise<{
  status: number
  problem: Record<string, unknown> | null
  headers: Headers
  response: Response
  close(): void
}> {
  const ac = new AbortController()
  const r = await fetch(new URL(path, base), {
    headers: { authorization: `Bearer ${key}`, accept: 'text/event-stream', ...headers },
    signal: ac.signal,
  })
  const problem = r.ok ? null : ((await r.json()) as Record<string, unknown>)
  // The response is kept: undici cancels (closes) the unread body of a response it collects.
  return { status: r.status, problem, headers: r.headers, response: r, close: () => ac.abort() }
}

/** The id of the one key of an account (the limiter's bucket is `key:<id>`). */
export async function onlyKeyId(t: TestApp, accountId: string): Promise<string> {
  const keys = await t.ctx.accounts.listKeys(accountId)
  if (keys.length !== 1 || !keys[0]) throw new Error(`expected one key, found ${keys.length}`)
  return keys[0].id
}

/**
 * Empties a default-tier key's bucket, then moves the service clock back a minute so that no
 * token refills while the test runs (the bucket is full again one minute of real time later).
 */
export async function exhaustRate(t: TestApp, keyId: string): Promise<void> {
  for (let i = 0; i <= KEY_RULES.default.burst; i++) {
    const d = await t.ctx.limits.rate.take(`key:${keyId}`, KEY_RULES.default, t.ctx.now())
    if (!d.allowed) break
  }
  t.clock.offsetMs -= 60_000
}

/** A JSON-RPC initialize request, for clients written by hand (raw HTTP, piped stdio). */
export function initializeRequest(id: number, clientName: string) {
  return {
    jsonrpc: '2.0',
    id,
    method: 'initialize',
    params: {
      protocolVersion: '2025-06-18',
      capabilities: {},
      clientInfo: { name: clientName, version: '1' },
    },
  }
}

/**
 * The session every MCP surface must serve alike, on an account funded with exactly 0.0015 USD:
 * instructions and tools; `balance`; an unknown ticker as a free TICKER_NOT_FOUND tool error; a
 * paid call billed at the REST price (0.001 USD) to the account; then a call the balance cannot
 * cover as a free INSUFFICIENT_BALANCE tool error; and every resource offered readable.
 */
export async function assertMeteredSession(t: TestApp, client: Client, accountId: string): Promise<void> {
  assert.match(client.getInstructions() ?? '', /balance/)
  const tools = (await client.listTools()).tools.map((x) => x.name)
  for (const n of ['metrics', 'decompose', 'balance', 'pricing', 'estimate'])
    assert.ok(tools.includes(n), `${n} in ${tools.join(',')}`)
  const balance = async () =>
    ((await client.callTool({ name: 'balance', arguments: {} })).structuredContent as { balance_usd: number })
      .balance_usd
  assert.equal(await balance(), 0.0015)
  const nf = await client.callTool({ name: 'metrics', arguments: { ticker: 'ZZZZZQ' } })
  assert.equal(nf.isError, true)
  assert.match(JSON.stringify(nf.content), /"TICKER_NOT_FOUND: /)
  const m = await client.callTool({ name: 'metrics', arguments: { ticker: 'AAPL' } })
  assert.ok(!m.isError, JSON.stringify(m.content))
  assert.equal((m.structuredContent as { _agent: { cost_usd: number } })._agent.cost_usd, 0.001)
  assert.equal((await t.ctx.accounts.balance(accountId)).balanceMicros, 500)
  assert.equal(await balance(), 0.0005)
  const poor = await client.callTool({ name: 'decompose', arguments: { ticker: 'AAPL' } })
  assert.equal(poor.isError, true)
  assert.match(JSON.stringify(poor.content), /"INSUFFICIENT_BALANCE: /)
  assert.equal((poor.structuredContent as { code: string }).code, 'INSUFFICIENT_BALANCE')
  assert.equal((await t.ctx.accounts.balance(accountId)).balanceMicros, 500)
  // Every resource offered can be read (none points at a document that does not exist).
  for (const r of (await client.listResources()).resources) {
    const c = await client.readResource({ uri: r.uri })
    assert.ok(String((c.contents[0] as { text?: string }).text ?? '').length > 100, r.uri)
  }
  const docs = await client.readResource({ uri: 'erm3://openapi.json' })
  assert.match(JSON.stringify(docs.contents[0]), /3\.0\.0-agent/)
}
