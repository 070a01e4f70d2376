import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import type { InjectOptions, LightMyRequestResponse as InjectResponse } from 'fastify'
import { OPERATIONS } from '../../src/contract/operations.ts'
import { loadConfig } from '../../src/platform/config.ts'
import { BACKEND_PAIRS, type BackendPair, startTestApp, type TestApp } from '../helpers/test-app.ts'
import { mcpTransport } from '../mcp/clients.ts'

/**
 * Every response carries X-RateLimit-Limit/Remaining/Reset (docs/decisions/rate-limits.md).
 * Requests without an API key are limited per client address (ERM3_IP_RATE_*), requests with one
 * per key only.
 */

function assertRateHeaders(r: InjectResponse, what: string, limit?: string): void {
  const h = r.headers
  assert.match(String(h['x-ratelimit-limit']), /^[1-9]\d*$/, `${what}: X-RateLimit-Limit`)
  if (limit) assert.equal(h['x-ratelimit-limit'], limit, `${what}: X-RateLimit-Limit`)
  assert.match(String(h['x-ratelimit-remaining']), /^\d+$/, `${what}: X-RateLimit-Remaining`)
  const reset = Number(h['x-ratelimit-reset'])
  // Epoch seconds, not milliseconds and not a delta.
  assert.ok(
    Number.isInteger(reset) && reset >= Math.floor(Date.now() / 1000) - 1 && reset < Date.now() / 100,
    `${what}: X-RateLimit-Reset ${h['x-ratelimit-reset']}`,
  )
}

/** A request of each operation, as a client without a key might send it (its answer may be any status). */
function requestOf(op: (typeof OPERATIONS)[number], ip: string) {
  const url = op.path.replace(/:[A-Za-z_]+/g, 'x')
  const headers: Record<string, string> = { 'x-forwarded-for': ip }
  if (op.method !== 'POST') return { method: op.method, url, headers }
  if (op.bodyType) headers['content-type'] = op.bodyType
  else headers['content-type'] = 'application/json'
  return { method: op.method, url, headers, payload: op.bodyType ? 'x=1' : '{}' }
}

function suite(backends: BackendPair) {
  describe(`X-RateLimit-* on every response: ${backends.name}`, { skip: backends.skip ?? undefined }, () => {
    let t: TestApp
    before(async () => {
      t = await startTestApp({ ...backends, env: { TRUST_PROXY: 'loopback' } })
    })
    after(() => t?.close())
    const inject = (r: InjectOptions) => t.app.fastify.inject(r)

    test('every operation without a key, an unknown path, a wrong method, a bad URL and a refused key', async () => {
      const ip = '198.51.100.1'
      const free = OPERATIONS.filter((o) => o.auth !== 'key')
      assert.ok(free.length >= 20, 'the contract lists the unauthenticated operations')
      for (const op of free) {
        const r = await inject(requestOf(op, ip) as InjectOptions)
        assertRateHeaders(r, `${op.method} ${op.path} → ${r.statusCode}`)
        if (['provisionFree', 'login', 'oauthRegister', 'oauthToken', 'oauthRevoke'].includes(op.id)) continue
        // The general limit (600/min by default).
        assert.equal(r.headers['x-ratelimit-limit'], '600', op.id)
      }
      const others = [
        { method: 'GET', url: '/no/such/path' },
        {
          method: 'POST',
          url: '/no/such/path',
          payload: '{}',
          headers: { 'content-type': 'application/json' },
        },
        { method: 'DELETE', url: '/health' },
        { method: 'GET', url: '/metrics/%E0%A4%A' },
        { method: 'GET', url: '/balance' },
        { method: 'GET', url: '/balance', headers: { authorization: 'Bearer erm_agent_live_short' } },
      ] as const
      for (const o of others) {
        const r = await inject({
          ...o,
          headers: { ...('headers' in o ? o.headers : {}), 'x-forwarded-for': ip },
        } as InjectOptions)
        assert.ok(r.statusCode >= 400 && r.statusCode < 500, `${o.method} ${o.url}: ${r.statusCode}`)
        assertRateHeaders(r, `${o.method} ${o.url} → ${r.statusCode}`, '600')
      }
    })

    test('an operation with its own per-IP limit reports that one; a key request reports its key', async () => {
      const ip = '198.51.100.2'
      const headers = { 'x-forwarded-for': ip, 'content-type': 'application/json' }
      const first = await inject({ method: 'POST', url: '/auth/provision-free', headers, payload: '{}' })
      assert.equal(first.statusCode, 201, first.body)
      assertRateHeaders(first, 'provision-free', '3')
      assert.equal(first.headers['x-ratelimit-remaining'], '2')
      const key = JSON.parse(first.body).api_key as string
      const own = await inject({
        method: 'GET',
        url: '/balance',
        headers: { 'x-forwarded-for': ip, authorization: `Bearer ${key}` },
      })
      assert.equal(own.statusCode, 200)
      assertRateHeaders(own, 'GET /balance with a key', '60')
      assert.equal(own.headers['x-ratelimit-remaining'], '99')
    })
  })

  describe(`per-IP limit: ${backends.name}`, { skip: backends.skip ?? undefined }, () => {
    let t: TestApp
    before(async () => {
      t = await startTestApp({
        ...backends,
        env: { TRUST_PROXY: 'loopback', ERM3_IP_RATE_PER_MINUTE: '6', ERM3_IP_RATE_BURST: '3' },
      })
    })
    after(() => t?.close())
    const from = (ip: string, url = '/health', headers: Record<string, string> = {}) =>
      t.app.fastify.inject({ method: 'GET', url, headers: { ...headers, 'x-forwarded-for': ip } })

    test('exhausted: 429 RATE_LIMITED problem with Retry-After; another address and keys unaffected', async () => {
      const ip = '203.0.113.7'
      for (const left of ['2', '1', '0']) {
        const r = await from(ip)
        assert.equal(r.statusCode, 200)
        assertRateHeaders(r, 'GET /health', '6')
        assert.equal(r.headers['x-ratelimit-remaining'], left)
      }
      for (const url of ['/health', '/pricing', '/no/such/path', '/balance']) {
        const r = await from(ip, url)
        assert.equal(r.statusCode, 429, `${url}: ${r.body}`)
        assert.match(String(r.headers['content-type']), /^application\/problem\+json/)
        const p = JSON.parse(r.body)
        assert.equal(p.code, 'RATE_LIMITED')
        assert.equal(p.status, 429)
        const retry = Number(r.headers['retry-after'])
        assert.ok(retry >= 1 && retry <= 10, `Retry-After ${retry}`)
        assert.equal(p.retry_after_seconds, retry)
        assert.equal(r.headers['x-ratelimit-remaining'], '0')
        assertRateHeaders(r, url, '6')
      }
      // OAuth endpoints say it in their own error form, with the same headers.
      const token = await t.app.fastify.inject({
        method: 'POST',
        url: '/oauth/token',
        headers: { 'x-forwarded-for': ip, 'content-type': 'application/x-www-form-urlencoded' },
        payload: 'grant_type=refresh_token&refresh_token=x',
      })
      assert.equal(token.statusCode, 429)
      assert.equal(JSON.parse(token.body).error, 'rate_limited')
      assert.ok(Number(token.headers['retry-after']) >= 1)
      assertRateHeaders(token, 'POST /oauth/token', '6')
      // Another address has its own bucket.
      const other = await from('203.0.113.8')
      assert.equal(other.statusCode, 200)
      assert.equal(other.headers['x-ratelimit-remaining'], '2')
      // A key is limited per key only, from the exhausted address too.
      const key = await t.key(await t.account(1))
      const keyed = await from(ip, '/balance', { authorization: `Bearer ${key}` })
      assert.equal(keyed.statusCode, 200, keyed.body)
      assertRateHeaders(keyed, 'GET /balance with a key', '60')
    })

    test('MCP tools and resources that read free documents take no address token', async () => {
      const base = await t.listen()
      const key = await t.key(await t.account(1))
      const client = new Client({ name: 'erm3-rate', version: '1.0.0' })
      await client.connect(mcpTransport('streamable HTTP', base, key))
      for (let i = 0; i < 5; i++) {
        const r = await client.callTool({ name: 'pricing', arguments: {} })
        assert.ok(!r.isError, JSON.stringify(r.content))
        await client.readResource({ uri: 'erm3://openapi.json' })
      }
      await client.close()
    })
  })
}

for (const b of BACKEND_PAIRS) suite(b)

describe('per-IP limit configuration', () => {
  test('defaults 600/min with a burst of 200; both variables validated', () => {
    assert.deepEqual(loadConfig({}).server.ipRate, { perMinute: 600, burst: 200 })
    assert.deepEqual(
      loadConfig({ ERM3_IP_RATE_PER_MINUTE: '6000', ERM3_IP_RATE_BURST: '50' }).server.ipRate,
      { perMinute: 6000, burst: 50 },
    )
    for (const [name, value] of [
      ['ERM3_IP_RATE_PER_MINUTE', '0'],
      ['ERM3_IP_RATE_PER_MINUTE', '2.5'],
      ['ERM3_IP_RATE_PER_MINUTE', '2001'],
      ['ERM3_IP_RATE_PER_MINUTE', '60001'],
      ['ERM3_IP_RATE_BURST', '0'],
      ['ERM3_IP_RATE_BURST', 'lots'],
    ] as const)
      assert.throws(() => loadConfig({ [name]: value }), new RegExp(name))
  })
})
