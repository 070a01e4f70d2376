import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js'
import { MAX_CONCURRENT } from '../../src/services/limits.ts'
import { BACKEND_PAIRS, type BackendPair, startTestApp, type TestApp } from '../helpers/test-app.ts'
import { exhaustRate, initializeRequest, MCP_TRANSPORTS, mcpTransport, onlyKeyId } from './clients.ts'

/**
 * Limits over MCP, through the SDK client on both transports: a tool call over the rate or
 * concurrency limit is a tool error carrying the code and when to retry, and costs nothing;
 * other MCP messages over the rate are refused with HTTP 429 (the limit holds for every message).
 */
const text = (r: unknown) => ((r as CallToolResult).content[0] as { text: string }).text

function limitsSuite(backends: BackendPair) {
  describe(`MCP limits: ${backends.name}`, { skip: backends.skip ?? undefined }, () => {
    let t: TestApp
    let base: string
    before(async () => {
      t = await startTestApp(backends)
      base = await t.listen()
    })
    after(() => t?.close())

    for (const transport of MCP_TRANSPORTS) {
      test(`${transport}: over the rate, tools/call is a RATE_LIMITED tool error with Retry-After, other messages get 429`, async () => {
        const account = await t.account(1)
        const key = await t.key(account)
        const client = new Client({ name: 'erm3-limits', version: '1.0.0' })
        await client.connect(mcpTransport(transport, base, key))
        const clock = t.clock.offsetMs
        try {
          await exhaustRate(t, await onlyKeyId(t, account))
          const r = await client.callTool({ name: 'metrics', arguments: { ticker: 'SPY' } })
          assert.equal(r.isError, true, JSON.stringify(r))
          const m = /^RATE_LIMITED: .+ Retry after (\d+) s\.$/.exec(text(r))
          assert.ok(m, text(r))
          assert.ok(Number(m[1]) >= 60, text(r))
          assert.deepEqual(
            { code: 'RATE_LIMITED', status: 429, retry_after_seconds: Number(m[1]) },
            {
              code: (r.structuredContent as { code: string }).code,
              status: (r.structuredContent as { status: number }).status,
              retry_after_seconds: (r.structuredContent as { retry_after_seconds: number })
                .retry_after_seconds,
            },
          )
          assert.equal((await t.ctx.accounts.balance(account)).balanceMicros, 1_000_000)
          // Not a tool call: the MCP message itself is refused at the HTTP level.
          await assert.rejects(client.listTools(), /429/)
        } finally {
          t.clock.offsetMs = clock
        }
        // Once the bucket has refilled (a minute later), the same session works and is billed.
        t.clock.offsetMs += 120_000
        try {
          const ok = await client.callTool({ name: 'metrics', arguments: { ticker: 'SPY' } })
          assert.ok(!ok.isError, text(ok))
          assert.equal((await t.ctx.accounts.balance(account)).balanceMicros, 999_000)
        } finally {
          t.clock.offsetMs = clock
          await client.close()
        }
      })

      test(`${transport}: over the concurrency cap, a CONCURRENCY_LIMITED tool error; free again once a slot is`, async () => {
        const account = await t.account(1)
        const key = await t.key(account)
        const id = await onlyKeyId(t, account)
        const client = new Client({ name: 'erm3-limits', version: '1.0.0' })
        await client.connect(mcpTransport(transport, base, key))
        const leases: string[] = []
        for (let i = 0; i < MAX_CONCURRENT; i++) {
          const l = await t.ctx.limits.concurrency.acquire(`key:${id}`, MAX_CONCURRENT, 60_000, t.ctx.now())
          if (l.leaseId) leases.push(l.leaseId)
        }
        const r = await client.callTool({ name: 'metrics', arguments: { ticker: 'SPY' } })
        assert.equal(r.isError, true)
        assert.match(text(r), /^CONCURRENCY_LIMITED: .+ Retry after 1 s\.$/)
        assert.equal((await t.ctx.accounts.balance(account)).balanceMicros, 1_000_000)
        for (const l of leases) await t.ctx.limits.concurrency.release(`key:${id}`, l)
        const ok = await client.callTool({ name: 'metrics', arguments: { ticker: 'SPY' } })
        assert.ok(!ok.isError, text(ok))
        await client.close()
      })
    }

    test('over the rate, an initialize (or any non-tool message) is HTTP 429 problem+json with Retry-After', async () => {
      const account = await t.account(1)
      const key = await t.key(account)
      const clock = t.clock.offsetMs
      try {
        await exhaustRate(t, await onlyKeyId(t, account))
        const r = await fetch(new URL('/mcp', base), {
          method: 'POST',
          headers: {
            authorization: `Bearer ${key}`,
            'content-type': 'application/json',
            accept: 'application/json, text/event-stream',
          },
          body: JSON.stringify(initializeRequest(1, 'raw')),
        })
        assert.equal(r.status, 429)
        assert.match(r.headers.get('content-type') ?? '', /^application\/problem\+json/)
        assert.equal(((await r.json()) as { code: string }).code, 'RATE_LIMITED')
        assert.ok(Number(r.headers.get('retry-after')) >= 60)
        assert.equal(r.headers.get('x-ratelimit-remaining'), '0')
      } finally {
        t.clock.offsetMs = clock
      }
    })
  })
}

for (const b of BACKEND_PAIRS) limitsSuite(b)
