import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { startTestApp, type TestApp } from '../helpers/test-app.ts'

// The first hour of a new user: `/` is a page, the data says what it is, the README's ticker works.
describe('front door: landing page, API reference, synthetic-data labels', () => {
  let t: TestApp
  let key: string
  before(async () => {
    t = await startTestApp({ env: { PUBLIC_URL: 'http://erm3.test/<b>"x"' } })
    key = await t.key(await t.account(10))
  })
  after(() => t?.close())

  const get = (url: string, headers: Record<string, string> = {}) =>
    t.app.fastify.inject({ method: 'GET', url, headers })

  test('GET / is an HTML page: what erm3 is, synthetic data and its data_as_of, keys, links, MCP URL', async () => {
    const r = await get('/')
    assert.equal(r.statusCode, 200)
    assert.equal(r.headers['content-type'], 'text/html; charset=utf-8')
    const csp = String(r.headers['content-security-policy'])
    assert.match(csp, /default-src 'none'/)
    assert.match(csp, /frame-ancestors 'none'/)
    assert.doesNotMatch(csp, /unsafe-inline|script-src/, 'the landing page runs no script')
    assert.equal(r.headers['x-content-type-options'], 'nosniff')
    const html = r.body
    assert.match(html, /<title>erm3/)
    assert.match(html, /equity risk decomposition/)
    assert.match(html, /<strong>Synthetic data<\/strong> — data as of <strong>2021-12-31<\/strong>/)
    assert.match(html, /SYNTHETIC data: a market erm3 generated itself \(seed 101\)/)
    for (const href of [
      '/docs/api',
      '/openapi.json',
      '/docs/methodology',
      '/llms.txt',
      '/pricing',
      '/health',
    ])
      assert.ok(html.includes(`href="${href}"`), href)
    for (const s of [
      'accounts create',
      'keys create',
      '/auth/login',
      '/auth/provision-free',
      '/metrics/AAPL',
    ])
      assert.ok(html.includes(s), s)
    // PUBLIC_URL is configuration, still escaped: never markup
    assert.ok(html.includes('http://erm3.test/&lt;b&gt;&quot;x&quot;/mcp'), 'MCP URL, escaped')
    assert.ok(!html.includes('<b>"x"'), 'raw value unescaped')
  })

  test('GET /docs/api: the reference page loads Swagger UI from this instance only; assets served, others 404', async () => {
    const r = await get('/docs/api')
    assert.equal(r.statusCode, 200)
    assert.equal(r.headers['content-type'], 'text/html; charset=utf-8')
    assert.match(String(r.headers['content-security-policy']), /script-src 'self'(;|$)/)
    const refs = [...r.body.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1] as string)
    assert.ok(refs.length >= 3)
    for (const u of refs) assert.ok(u.startsWith('/'), `${u} is served by erm3`)
    assert.doesNotMatch(r.body, /<script>/, 'no inline script')
    const js = await get('/docs/api/swagger-ui-bundle.js')
    assert.equal(js.statusCode, 200)
    assert.equal(js.headers['content-type'], 'text/javascript; charset=utf-8')
    assert.match(js.body, /SwaggerUIBundle/)
    const css = await get('/docs/api/swagger-ui.css')
    assert.equal(css.headers['content-type'], 'text/css; charset=utf-8')
    const init = await get('/docs/api/erm3-reference.js')
    assert.match(init.body, /url: '\/openapi\.json'/)
    assert.match(init.body, /validatorUrl: null/, 'no call to the public Swagger validator')
    for (const bad of ['package.json', '..%2Fpackage.json', 'index.html', 'swagger-initializer.js']) {
      const x = await get(`/docs/api/${bad}`)
      assert.equal(x.statusCode, 404, bad)
      assert.equal(JSON.parse(x.body).code, 'NOT_FOUND')
    }
  })

  test('the pages are operations of the contract (OpenAPI), free and without a key', async () => {
    const doc = JSON.parse((await get('/openapi.json')).body) as {
      paths: Record<string, { get?: { operationId: string; responses: Record<string, { content: object }> } }>
    }
    assert.equal(doc.paths['/']?.get?.operationId, 'getLanding')
    assert.equal(doc.paths['/docs/api']?.get?.operationId, 'getApiReference')
    const asset = doc.paths['/docs/api/{asset}']?.get
    assert.deepEqual(Object.keys(asset?.responses['200']?.content ?? {}), ['text/javascript', 'text/css'])
  })

  test('_metadata.dataset says synthetic with the seed (JSON data responses); /health too', async () => {
    const m = (await t.client.call('getMetrics', { key, params: { ticker: 'AAPL' } })).ok() as {
      ticker: string
      _metadata: { dataset: unknown }
    }
    assert.equal(m.ticker, 'AAPL')
    assert.deepEqual(m._metadata.dataset, { kind: 'synthetic', seed: 101 })
    const tr = (
      await t.client.call('getTickerReturns', { key, query: { ticker: 'MSFT', years: 1 } })
    ).ok() as {
      _metadata: { dataset: unknown }
    }
    assert.deepEqual(tr._metadata.dataset, { kind: 'synthetic', seed: 101 })
    const h = JSON.parse((await get('/health')).body) as { model: { dataset: unknown } }
    assert.deepEqual(h.model.dataset, { kind: 'synthetic', seed: 101 })
  })

  test('the store manifest says synthetic, with the seed and a notice', () => {
    const d = t.ctx.models.store('live').manifest.dataset
    assert.equal(d.kind, 'synthetic')
    assert.equal(d.seed, 101)
    assert.match(d.notice ?? '', /^SYNTHETIC DATA/)
  })

  test('MCP instructions say that this instance serves synthetic data', async () => {
    const origin = await t.listen()
    const client = new Client({ name: 'landing-test', version: '1' })
    await client.connect(
      new StreamableHTTPClientTransport(new URL('/mcp', origin), {
        requestInit: { headers: { authorization: `Bearer ${key}` } },
      }),
    )
    const instructions = client.getInstructions() ?? ''
    await client.close()
    assert.match(instructions, /_metadata\.dataset/)
    assert.match(
      instructions,
      /This instance serves SYNTHETIC data: a market erm3 generated itself \(seed 101\)/,
    )
  })
})
