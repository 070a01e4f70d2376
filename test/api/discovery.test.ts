import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { OPERATIONS } from '../../src/contract/operations.ts'
import { createDiscovery } from '../../src/services/discovery/index.ts'
import { assertResponseShape } from '../helpers/history-checks.ts'
import { checkDiscovery, type Documents, referencedPaths, type Truth } from '../helpers/manifest-check.ts'
import { startTestApp, type TestApp } from '../helpers/test-app.ts'

/**
 * Discovery documents: served at the site origin without auth and for free, each in
 * its declared schema, and — the point of the issue — naming no endpoint, tool or price that
 * the server does not really have. The checker itself is shown to catch a tampered document.
 */
const BASE = 'http://erm3.test'
const JSON_DOCS = {
  '/.well-known/agent-manifest': 'getAgentManifest',
  '/.well-known/mcp.json': 'getMcpServerCard',
  '/.well-known/ai-plugin.json': 'getAiPluginManifest',
  '/.well-known/agentic-disclosure.json': 'getAgenticDisclosure',
} as const

describe('discovery documents', () => {
  let t: TestApp
  let docs: Documents
  let truth: Truth
  let mcp: Client
  before(async () => {
    t = await startTestApp()
    const get = async (url: string) => (await t.app.fastify.inject({ method: 'GET', url })).body
    docs = {
      agentManifest: JSON.parse(await get('/.well-known/agent-manifest')),
      mcpServerCard: JSON.parse(await get('/.well-known/mcp.json')),
      aiPlugin: JSON.parse(await get('/.well-known/ai-plugin.json')),
      disclosure: JSON.parse(await get('/.well-known/agentic-disclosure.json')),
      llmsTxt: await get('/llms.txt'),
    }
    // What the server really offers: its MCP surface as the official client sees it over HTTP.
    const base = await t.listen()
    const key = await t.key(await t.account(1))
    mcp = new Client({ name: 'erm3-discovery-test', version: '1.0.0' })
    await mcp.connect(
      new StreamableHTTPClientTransport(new URL('/mcp', base), {
        requestInit: { headers: { authorization: `Bearer ${key}` } },
      }),
    )
    truth = {
      publicUrl: BASE,
      routes: t.app.routes,
      tools: (await mcp.listTools()).tools.map((x) => x.name),
      resources: (await mcp.listResources()).resources.map((r) => r.uri),
      pricing: JSON.parse(await get('/pricing')).capabilities,
      openapi: JSON.parse(await get('/openapi.json')),
    }
  })
  after(async () => {
    await mcp?.close()
    await t?.close()
  })

  test('each is served without auth, free and without a key rate token, with its content type', async () => {
    const account = await t.account(1)
    const key = await t.key(account)
    const paths = [...Object.keys(JSON_DOCS), '/llms.txt']
    for (const url of paths) {
      for (const headers of [{}, { authorization: `Bearer ${key}` }]) {
        const r = await t.app.fastify.inject({ method: 'GET', url, headers })
        assert.equal(r.statusCode, 200, `${url}: ${r.body.slice(0, 200)}`)
        const type = url === '/llms.txt' ? 'text/plain; charset=utf-8' : 'application/json; charset=utf-8'
        assert.equal(r.headers['content-type'], type, url)
        assert.equal(r.headers['cache-control'], 'public, max-age=3600', url)
        for (const h of ['x-api-cost-usd', 'x-environment'])
          assert.equal(r.headers[h], undefined, `${url} ${h}`)
        // Limited per client address (every response carries the headers), key or not.
        assert.equal(r.headers['x-ratelimit-limit'], '600', url)
      }
    }
    assert.equal((await t.ctx.accounts.balance(account)).balanceMicros, 1_000_000)
    // Fetching the documents with the key took no token: the first authenticated call finds the bucket full.
    const bal = await t.app.fastify.inject({
      method: 'GET',
      url: '/balance',
      headers: { authorization: `Bearer ${key}` },
    })
    const limits = JSON.parse(bal.body).limits as { burst: number }
    assert.equal(Number(bal.headers['x-ratelimit-remaining']), limits.burst - 1)
    for (const op of OPERATIONS.filter((o) => o.tags.includes('discovery')))
      assert.equal(op.auth, 'none', op.id)
  })

  test('each JSON document has its declared schema and is what the service built', async () => {
    const built = createDiscovery(t.ctx)
    const expected: Record<string, unknown> = {
      getAgentManifest: built.agentManifest,
      getMcpServerCard: built.mcpServerCard,
      getAiPluginManifest: built.aiPlugin,
      getAgenticDisclosure: built.disclosure(),
    }
    for (const [url, id] of Object.entries(JSON_DOCS)) {
      const body = JSON.parse((await t.app.fastify.inject({ method: 'GET', url })).body)
      assertResponseShape(id, body)
      assert.deepEqual(
        body,
        JSON.parse(JSON.stringify(expected[id])),
        `${url}: the serialiser dropped or changed a field`,
      )
    }
    assert.equal(docs.llmsTxt, built.llmsTxt)
    assert.match(docs.llmsTxt, /^# erm3\n\n> \S/)
  })

  test('no document names an endpoint, tool, resource or price that does not exist', async () => {
    assert.deepEqual(checkDiscovery(docs, truth), [])
    // Every URL the documents name answers: GET operations without auth are fetched.
    const paths = referencedPaths(docs, BASE)
    assert.ok(paths.length >= 15, paths.join(' '))
    for (const path of paths) {
      const op = OPERATIONS.find((o) => o.method === 'GET' && o.auth === 'none' && o.path === path)
      if (!op) continue
      const r = await t.app.fastify.inject({ method: 'GET', url: path })
      assert.ok(r.statusCode !== 404 && r.statusCode < 500, `${path} → ${r.statusCode}`)
    }
  })

  test('the MCP card and the agent manifest agree with a live MCP session and /balance', async () => {
    const card = docs.mcpServerCard as {
      serverInfo: { name: string; version: string }
      instructions: string
      capabilities: Record<string, unknown>
    }
    // A session's instructions are the card's plus one line on what this instance's data is.
    const [, notice] = (mcp.getInstructions() ?? '').split(card.instructions)
    assert.match(
      notice ?? '',
      /^\nThis instance serves SYNTHETIC data: a market erm3 generated itself \(seed 101\)\./,
    )
    assert.deepEqual(
      { name: card.serverInfo.name, version: card.serverInfo.version },
      { name: mcp.getServerVersion()?.name, version: mcp.getServerVersion()?.version },
    )
    assert.deepEqual(
      Object.keys(card.capabilities).sort(),
      Object.keys(mcp.getServerCapabilities() ?? {}).sort(),
    )
    const key = await t.key(await t.account(1))
    const bal = JSON.parse(
      (
        await t.app.fastify.inject({
          method: 'GET',
          url: '/balance',
          headers: { authorization: `Bearer ${key}` },
        })
      ).body,
    )
    const m = docs.agentManifest as {
      rate_limits: {
        per_key: { tier: string; requests_per_minute: number; burst: number }[]
        max_concurrent_per_key: number
      }
    }
    const def = m.rate_limits.per_key.find((x) => x.tier === 'default')
    assert.deepEqual(
      {
        requests_per_minute: def?.requests_per_minute,
        burst: def?.burst,
        max_concurrent: m.rate_limits.max_concurrent_per_key,
      },
      bal.limits,
    )
  })

  test('the disclosure describes this instance: its backends and the source of its market data', () => {
    const d = docs.disclosure as {
      training_on_request_data: boolean
      automated_processing: { llm_in_the_loop: boolean }
      third_party_sharing: { processors: string[] }
      data_stored: { category: string; where: string }[]
      market_data: { this_instance: string }
    }
    assert.equal(d.training_on_request_data, false)
    assert.equal(d.automated_processing.llm_in_the_loop, false)
    // Fixture: SQLite, in-process limits, the embedded outbox mailer and a synthetic store.
    assert.deepEqual(d.third_party_sharing.processors, [])
    assert.match(d.data_stored.find((x) => x.category === 'ledger')?.where ?? '', /SQLite/)
    assert.match(d.data_stored.find((x) => x.category === 'response cache')?.where ?? '', /memory/)
    assert.ok(d.data_stored.some((x) => x.category.startsWith('mail outbox')))
    assert.equal(d.market_data.this_instance, 'synthetic')
  })

  test('the disclosure with chat configured: a language model in the loop, its provider a processor', async () => {
    const withLlm = await startTestApp({
      env: { LLM_BASE_URL: 'http://127.0.0.1:9/v1', LLM_MODEL: 'disclosed-model' },
    })
    try {
      const r = await withLlm.app.fastify.inject({
        method: 'GET',
        url: '/.well-known/agentic-disclosure.json',
      })
      assert.equal(r.statusCode, 200)
      const d = JSON.parse(r.body) as {
        automated_processing: { llm_in_the_loop: boolean; description: string }
        third_party_sharing: { processors: string[] }
        market_data: { description: string }
      }
      assert.equal(d.automated_processing.llm_in_the_loop, true)
      assert.match(
        d.automated_processing.description,
        /POST \/chat .* 127\.0\.0\.1:9 \(model disclosed-model/,
      )
      assert.equal(d.third_party_sharing.processors.length, 1)
      assert.match(
        d.third_party_sharing.processors[0] ?? '',
        /language model provider .*127\.0\.0\.1:9.*conversation/,
      )
      assert.doesNotMatch(JSON.stringify(d), /Answering a request never calls a third party/)
    } finally {
      await withLlm.close()
    }
  })

  test('the checker reports a fake path, tool, resource and price (it can fail)', () => {
    const bad = structuredClone(docs) as Documents & {
      agentManifest: {
        mcp: { tools: string[] }
        links: Record<string, string>
        pricing: { capabilities: Record<string, unknown>[]; free_endpoints: string[] }
      }
      mcpServerCard: { resources: { uri: string }[] }
    }
    const caps = bad.agentManifest.pricing.capabilities
    const lstar = caps.find((c) => c.capability_id === 'lstar') as Record<string, unknown>
    lstar.cost_usd = 0.01
    caps.push({ ...lstar, capability_id: 'ghost', path: '/ghost/{ticker}', cost_usd: 1 })
    const dropped = caps.splice(0, 1)[0] as { capability_id: string }
    bad.agentManifest.mcp.tools.push('ghost_tool')
    bad.agentManifest.links.ai_plugin = `${BASE}/.well-known/nothing`
    bad.agentManifest.pricing.free_endpoints.push('GET /lstar')
    bad.mcpServerCard.resources.pop()
    bad.llmsTxt = bad.llmsTxt
      .replace('lstar: 0.02 USD', 'lstar: 0.002 USD')
      .concat(`\n- [Old](${BASE}/v3/metrics)\n- POST /auth/token: tokens\n`)
    const problems = checkDiscovery(bad, truth)
    for (const expected of [
      'capability lstar: cost_usd differs from /pricing',
      'capability lstar: cost_usd differs from x-pricing',
      'capability ghost is not in /pricing',
      'capability ghost has no x-pricing',
      'endpoint GET /ghost/{ticker} is not a route',
      `capability ${dropped.capability_id} is missing from the agent manifest`,
      'agent-manifest tool ghost_tool does not exist',
      `URL ${BASE}/.well-known/nothing is not a route`,
      'GET /lstar is listed free but priced',
      'mcp.json resource erm3://.well-known/agent-manifest is missing',
      'llms.txt lstar: cost_usd differs from /pricing',
      `URL ${BASE}/v3/metrics is not a route`,
      'endpoint POST /auth/token is not a route',
    ])
      assert.ok(problems.includes(expected), `${expected} not reported; got:\n${problems.join('\n')}`)
  })
})
