import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { startTestApp, type TestApp } from '../helpers/test-app.ts'

/** MCP with the official SDK client over both transports, against a real listener. */
describe('MCP server', () => {
  let t: TestApp
  let base: string
  before(async () => {
    t = await startTestApp()
    base = await t.app.fastify.listen({ port: 0, host: '127.0.0.1' })
  })
  after(() => t?.close())

  const transports = {
    'streamable HTTP': (key: string) =>
      new StreamableHTTPClientTransport(new URL('/mcp', base), {
        requestInit: { headers: { authorization: `Bearer ${key}` } },
      }),
    SSE: (key: string) =>
      new SSEClientTransport(new URL('/mcp/sse', base), {
        requestInit: { headers: { authorization: `Bearer ${key}` } },
        eventSourceInit: {
          fetch: (u, init) =>
            fetch(u, { ...init, headers: { ...(init?.headers ?? {}), authorization: `Bearer ${key}` } }),
        },
      }),
  }

  for (const [name, make] of Object.entries(transports)) {
    test(`${name}: tools list, a paid call billed at the REST price, errors as tool errors`, async () => {
      const account = await t.account(0.0015)
      const key = await t.key(account)
      const client = new Client({ name: 'erm3-test', version: '1.0.0' })
      await client.connect(make(key))
      assert.match(client.getInstructions() ?? '', /balance/)
      const tools = (await client.listTools()).tools.map((x) => x.name)
      for (const n of ['metrics', 'balance', 'pricing', 'estimate'])
        assert.ok(tools.includes(n), `${n} in ${tools.join(',')}`)
      const bal = await client.callTool({ name: 'balance', arguments: {} })
      assert.equal((bal.structuredContent as { balance_usd: number }).balance_usd, 0.0015)
      const nf = await client.callTool({ name: 'metrics', arguments: { ticker: 'ZZZZZQ' } })
      assert.equal(nf.isError, true)
      assert.match(JSON.stringify(nf.content), /TICKER_NOT_FOUND/)
      const m = await client.callTool({ name: 'metrics', arguments: { ticker: 'SPY' } })
      assert.ok(!m.isError, JSON.stringify(m.content))
      assert.equal((m.structuredContent as { _agent: { cost_usd: number } })._agent.cost_usd, 0.001)
      assert.equal((await t.ctx.accounts.balance(account)).balanceMicros, 500)
      const poor = await client.callTool({ name: 'decompose', arguments: { ticker: 'SPY' } })
      assert.equal(poor.isError, true)
      assert.match(JSON.stringify(poor.content), /INSUFFICIENT_BALANCE/)
      // Every resource offered can be read (none points at a document that does not exist).
      for (const r of (await client.listResources()).resources) {
        const c = await client.readResource({ uri: r.uri })
        assert.ok(String((c.contents[0] as { text?: string }).text ?? '').length > 100, r.uri)
      }
      const docs = await client.readResource({ uri: 'erm3://openapi.json' })
      assert.match(JSON.stringify(docs.contents[0]), /3\.0\.0-agent/)
      await client.close()
    })
  }

  test('without a key: 401 with WWW-Authenticate pointing at the protected-resource metadata', async () => {
    const r = await fetch(new URL('/mcp', base), {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: '{}',
    })
    assert.equal(r.status, 401)
    assert.match(
      r.headers.get('www-authenticate') ?? '',
      /resource_metadata="http:\/\/erm3\.test\/\.well-known\/oauth-protected-resource"/,
    )
  })
})
