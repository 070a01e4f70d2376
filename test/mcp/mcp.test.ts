import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { forgetKey } from '../../src/services/identity/keys.ts'
import { BACKEND_PAIRS, type BackendPair, startTestApp, type TestApp } from '../helpers/test-app.ts'
import { assertMeteredSession, initializeRequest, MCP_TRANSPORTS, mcpTransport } from './clients.ts'

/** MCP with the official SDK client over both transports, against a real listener, on each backend pair. */
function mcpSuite(backends: BackendPair) {
  describe(`MCP server: ${backends.name}`, { skip: backends.skip ?? undefined }, () => {
    let t: TestApp
    let base: string
    before(async () => {
      t = await startTestApp(backends)
      base = await t.listen()
    })
    after(() => t?.close())

    for (const transport of MCP_TRANSPORTS) {
      test(`${transport}: tools list, a paid call billed at the REST price, errors as tool errors`, async () => {
        const account = await t.account(0.0015)
        const key = await t.key(account)
        const client = new Client({ name: 'erm3-test', version: '1.0.0' })
        await client.connect(mcpTransport(transport, base, key))
        await assertMeteredSession(t, client, account)
        await client.close()
      })
    }

    test('cross-sectional tools: listed with their schemas, billed like REST, same answer as REST', async () => {
      const account = await t.account(1)
      const key = await t.key(account)
      const client = new Client({ name: 'erm3-cross', version: '1.0.0' })
      await client.connect(mcpTransport('streamable HTTP', base, key))
      const tools = new Map((await client.listTools()).tools.map((x) => [x.name, x]))
      for (const name of [
        'industry_panel',
        'universe_members',
        'etf_factor_returns',
        'residual_reversion',
        'rankings_screen',
        'rankings',
      ])
        assert.ok(tools.has(name), name)
      const members = tools.get('universe_members')
      assert.ok(members)
      assert.deepEqual((members.inputSchema as { required?: string[] }).required, ['universe'])
      const calls = [
        [
          'industry_panel',
          { level: 'sector', min_peers: 1 },
          0.02,
          'getIndustryPanel',
          { query: { level: 'sector', min_peers: 1 } },
        ],
        [
          'universe_members',
          { universe: 'uni_mc_50' },
          0.005,
          'getUniverseMembers',
          { params: { universe: 'uni_mc_50' } },
        ],
        [
          'etf_factor_returns',
          { tickers: 'SPY,XLK' },
          0.005,
          'getEtfFactorReturns',
          { query: { tickers: 'SPY,XLK' } },
        ],
        [
          'residual_reversion',
          { tickers: ['SPY'] },
          0.02,
          'residualReversionBasket',
          { body: { tickers: ['SPY'] } },
        ],
        [
          'rankings_screen',
          { metric: 'er_l3', limit: 5 },
          0.02,
          'rankingsScreen',
          { body: { metric: 'er_l3', limit: 5 } },
        ],
        ['rankings', { ticker: 'AAPL' }, 0.001, 'getRankings', { params: { ticker: 'AAPL' } }],
      ] as const
      let spent = 0
      for (const [name, args, price, op, rest] of calls) {
        const r = await client.callTool({ name, arguments: args })
        assert.ok(!r.isError, `${name}: ${JSON.stringify(r.content)}`)
        const body = r.structuredContent as Record<string, unknown> & { _agent: { cost_usd: number } }
        assert.equal(body._agent.cost_usd, price, name)
        spent += price
        const viaRest = (
          await t.client.call(op as 'getEtfFactorReturns', { key, ...(rest as object) })
        ).ok() as Record<string, unknown>
        const strip = (x: Record<string, unknown>) => ({ ...x, _agent: null })
        assert.deepEqual(strip(viaRest), strip(body), `${name} equals REST`)
      }
      const bad = await client.callTool({ name: 'etf_factor_returns', arguments: { tickers: 'QQQ' } })
      assert.ok(bad.isError)
      const bal = (await client.callTool({ name: 'balance', arguments: {} })).structuredContent as {
        balance_usd: number
      }
      assert.equal(Math.round(bal.balance_usd * 1e6), Math.round((1 - spent) * 1e6))
      await client.close()
    })

    test('correlation tools: one ticker 0.002, a batch call 0.005, as over REST', async () => {
      const account = await t.account(1)
      const key = await t.key(account)
      const client = new Client({ name: 'erm3-correlation', version: '1.0.0' })
      await client.connect(mcpTransport('streamable HTTP', base, key))
      const tools = new Set((await client.listTools()).tools.map((x) => x.name))
      assert.ok(tools.has('correlation') && tools.has('correlation_batch'))
      const calls = [
        ['correlation', { ticker: 'SPY', return_type: 'gross' }, 0.002],
        ['correlation_batch', { ticker: 'XLK', return_type: 'gross' }, 0.002],
        ['correlation_batch', { tickers: ['SPY', 'XLK', 'XLF'], return_type: 'gross' }, 0.005],
      ] as const
      let spent = 0
      for (const [name, args, price] of calls) {
        const r = await client.callTool({ name, arguments: args })
        assert.ok(!r.isError, `${name}: ${JSON.stringify(r.content)}`)
        assert.equal((r.structuredContent as { _agent: { cost_usd: number } })._agent.cost_usd, price, name)
        spent += price
      }
      const bal = (await client.callTool({ name: 'balance', arguments: {} })).structuredContent as {
        balance_usd: number
      }
      assert.equal(Math.round(bal.balance_usd * 1e6), Math.round((1 - spent) * 1e6))
      await client.close()
    })

    test('fundamentals tool: 0.005, the REST answer (rows, grid), bad options a free tool error', async () => {
      const key = await t.key(await t.account(1))
      const client = new Client({ name: 'erm3-fundamentals', version: '1.0.0' })
      await client.connect(mcpTransport('streamable HTTP', base, key))
      const ticker = t.ctx.models
        .store('live')
        .symbols.find((m) => m.asset_type === 'stock' && m.cik !== null)?.symbol as string
      const args = { ticker, periods: 3, grid: true, erp_grid: '0.04,0.06' }
      const r = await client.callTool({ name: 'fundamentals', arguments: args })
      assert.ok(!r.isError, JSON.stringify(r.content))
      const body = r.structuredContent as {
        rows: { period_end_date: string }[]
        sensitivity_grid: { erp_values: number[] } | null
        _agent: { cost_usd: number }
      }
      assert.equal(body._agent.cost_usd, 0.005)
      assert.equal(body.rows.length, 3)
      assert.deepEqual(body.sensitivity_grid?.erp_values, [0.04, 0.06])
      const rest = (
        await t.client.call('getFundamentals', {
          key,
          params: { ticker },
          query: { periods: '3', grid: 'true', erp_grid: '0.04,0.06' },
        } as never)
      ).ok() as unknown as { rows: unknown[] }
      assert.deepEqual(body.rows, rest.rows)
      const bad = await client.callTool({ name: 'fundamentals', arguments: { ticker, rf_tenor: '4m' } })
      assert.ok(bad.isError)
      const bal = (await client.callTool({ name: 'balance', arguments: {} })).structuredContent as {
        balance_usd: number
      }
      // The REST repeat was a cache HIT (free): one charge in all.
      assert.equal(Math.round(bal.balance_usd * 1e6), Math.round((1 - 0.005) * 1e6))
      await client.close()
    })

    test('snapshot tool: 0.25, the REST answer, a bad book a free tool error', async () => {
      const key = await t.key(await t.account(1))
      const client = new Client({ name: 'erm3-snapshot', version: '1.0.0' })
      await client.connect(mcpTransport('streamable HTTP', base, key))
      const store = t.ctx.models.store('live')
      const tickers = store.symbols
        .filter((m) => m.asset_type === 'stock' && m.tickers.some((w) => w.to === null))
        .slice(0, 3)
        .map((m) => m.symbol)
      const args = {
        type: 'portfolio',
        portfolio: tickers.map((ticker, i) => ({ ticker, weight: i + 1 })),
        lookback_days: 60,
        benchmark: 'SPY',
      }
      const r = await client.callTool({ name: 'snapshot', arguments: args })
      assert.ok(!r.isError, JSON.stringify(r.content))
      const body = r.structuredContent as {
        snapshot: { positions: { weight: number }[]; volatility_ann: number; benchmark_context_id: string }
        _agent: { cost_usd: number }
      }
      assert.equal(body._agent.cost_usd, 0.25)
      assert.equal(body.snapshot.positions.length, 3)
      assert.equal(body.snapshot.benchmark_context_id, 'bm_etf_spy')
      const rest = (await t.client.call('snapshot', { key, body: args } as never)).ok() as unknown as {
        snapshot: { volatility_ann: number }
      }
      assert.equal(rest.snapshot.volatility_ann, body.snapshot.volatility_ann)
      const bad = await client.callTool({
        name: 'snapshot',
        arguments: {
          type: 'portfolio',
          portfolio: [
            { ticker: tickers[0], weight: 1 },
            { ticker: tickers[1], shares: 5 },
          ],
        },
      })
      assert.ok(bad.isError)
      const bal = (await client.callTool({ name: 'balance', arguments: {} })).structuredContent as {
        balance_usd: number
      }
      // The REST repeat was a cache HIT (free): one charge in all.
      assert.equal(Math.round(bal.balance_usd * 1e6), Math.round((1 - 0.25) * 1e6))
      await client.close()
    })

    /**
     * The Python SDK ends a session with DELETE /mcp carrying `Content-Type: application/json`
     * and no body; so does this client (the header in requestInit goes on every request).
     */
    async function pythonLikeSession(key: string) {
      const transport = new StreamableHTTPClientTransport(new URL('/mcp', base), {
        requestInit: { headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' } },
      })
      const client = new Client({ name: 'erm3-terminate', version: '1.0.0' })
      await client.connect(transport)
      assert.ok(transport.sessionId)
      return { client, transport, id: transport.sessionId }
    }
    const deleteSession = (key: string, id: string) =>
      fetch(new URL('/mcp', base), {
        method: 'DELETE',
        headers: { authorization: `Bearer ${key}`, 'mcp-session-id': id, 'content-type': 'application/json' },
      })

    test('terminateSession() with Content-Type: application/json and no body ends the session', async () => {
      const key = await t.key(await t.account(1))
      const { client, transport, id } = await pythonLikeSession(key)
      const before = t.app.mcpSessions()
      await transport.terminateSession()
      assert.equal(transport.sessionId, undefined)
      assert.equal(t.app.mcpSessions(), before - 1)
      // Gone: the same id is now unknown.
      const again = await deleteSession(key, id)
      assert.equal(again.status, 404)
      await client.close()
    })

    test("raw DELETE /mcp (JSON content type, empty body): own session 200, unknown 404, another account's 404 and untouched", async () => {
      const mine = await t.key(await t.account(1))
      const theirs = await t.key(await t.account(1))
      const a = await pythonLikeSession(mine)
      const b = await pythonLikeSession(theirs)
      // Another account cannot end (or learn of) a session: 404 as for an unknown id.
      const foreign = await deleteSession(mine, b.id)
      assert.equal(foreign.status, 404, await foreign.text())
      const ok = (await b.client.callTool({ name: 'pricing', arguments: {} })) as { isError?: boolean }
      assert.ok(!ok.isError, "the other account's session still works")
      const unknown = await deleteSession(mine, 'mcp_nosuchsession')
      assert.equal(unknown.status, 404)
      const own = await deleteSession(mine, a.id)
      assert.equal(own.status, 200, await own.text())
      const after = await deleteSession(mine, a.id)
      assert.equal(after.status, 404)
      await a.client.close()
      await b.transport.terminateSession()
      await b.client.close()
    })

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

    test('a refused token: 401 with error="invalid_token" (RFC 6750 §3.1); none presented: no error code', async () => {
      const account = await t.account(1)
      const expired = await t.key(account, { expiresAt: Date.now() - 1000 })
      const revoked = await t.key(account)
      const [rec] = (await t.ctx.accounts.listKeys(account)).filter((k) => k.expiresAt === null)
      await t.ctx.accounts.revokeKey(rec?.id as string, Date.now())
      forgetKey(t.ctx, rec?.id as string)
      for (const [name, key, code] of [
        ['unknown', 'erm_user_live_0000000000000000000000000000000000000000000', 'INVALID_KEY'],
        ['expired', expired, 'EXPIRED_KEY'],
        ['revoked', revoked, 'REVOKED_KEY'],
      ] as const) {
        const r = await fetch(new URL('/mcp', base), {
          method: 'POST',
          headers: {
            authorization: `Bearer ${key}`,
            'content-type': 'application/json',
            accept: 'application/json, text/event-stream',
          },
          body: JSON.stringify(initializeRequest(1, 'refused')),
        })
        assert.equal(r.status, 401, name)
        assert.equal(((await r.json()) as { code: string }).code, code, name)
        const h = r.headers.get('www-authenticate') ?? ''
        assert.match(
          h,
          /^Bearer realm="erm3", resource_metadata="http:\/\/erm3\.test\/\.well-known\/oauth-protected-resource", error="invalid_token", error_description="[^"]+"$/,
          name,
        )
      }
      const none = await fetch(new URL('/mcp', base), { method: 'POST', body: '{}' })
      assert.doesNotMatch(none.headers.get('www-authenticate') ?? '', /error=/)
    })

    test('Origin (DNS rebinding): a foreign Origin is 403 on every MCP endpoint; none, PUBLIC_URL and configured origins pass', async () => {
      const key = await t.key(await t.account(1))
      const init = (origin?: string) =>
        fetch(new URL('/mcp', base), {
          method: 'POST',
          headers: {
            authorization: `Bearer ${key}`,
            'content-type': 'application/json',
            accept: 'application/json, text/event-stream',
            ...(origin ? { origin } : {}),
          },
          body: JSON.stringify(initializeRequest(1, 'origin')),
        })
      for (const foreign of [
        'http://evil.example',
        'http://127.0.0.1:1',
        'null',
        'http://erm3.test.evil.example',
      ]) {
        const r = await init(foreign)
        assert.equal(r.status, 403, foreign)
        assert.match(await r.text(), /may not call this MCP server/)
        const stream = await fetch(new URL('/mcp/sse', base), {
          headers: { authorization: `Bearer ${key}`, accept: 'text/event-stream', origin: foreign },
        })
        assert.equal(stream.status, 403, `SSE ${foreign}`)
        await stream.text()
      }
      for (const ok of [undefined, 'http://erm3.test']) {
        const r = await init(ok)
        assert.equal(r.status, 200, `${ok}: ${await r.clone().text()}`)
        await r.text()
      }
      // A configured origin (ERM3_MCP_ALLOWED_ORIGINS) on a node that allows it.
      const other = await startTestApp({ env: { ERM3_MCP_ALLOWED_ORIGINS: 'https://inspector.example' } })
      try {
        const res = await other.app.fastify.inject({
          method: 'POST',
          url: '/mcp',
          headers: {
            authorization: `Bearer ${await other.key(await other.account(1))}`,
            'content-type': 'application/json',
            accept: 'application/json, text/event-stream',
            origin: 'https://inspector.example',
          },
          payload: JSON.stringify(initializeRequest(1, 'inspector')),
        })
        assert.equal(res.statusCode, 200, res.body)
      } finally {
        await other.close()
      }
    })
  })
}

for (const b of BACKEND_PAIRS) mcpSuite(b)
