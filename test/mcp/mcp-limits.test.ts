import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js'
import { KEY_RULES, MAX_CONCURRENT, MAX_MCP_STREAMS } from '../../src/services/limits.ts'
import { BACKEND_PAIRS, type BackendPair, startTestApp, type TestApp } from '../helpers/test-app.ts'
import {
  exhaustRate,
  initializeRequest,
  MCP_TRANSPORTS,
  mcpTransport,
  onlyKeyId,
  openStream,
} from './clients.ts'

/**
 * Limits over MCP, through the SDK client on both transports: a tool call over the rate or
 * concurrency limit is a tool error carrying the code and when to retry, and costs nothing;
 * other MCP messages over the rate are refused with HTTP 429 (the limit holds for every message).
 */
/** A Streamable HTTP initialize POSTed by hand (to read a refusal's HTTP status and problem). */
const postInitialize = (base: string, key: string, clientName: string) =>
  fetch(new URL('/mcp', base), {
    method: 'POST',
    headers: {
      authorization: `Bearer ${key}`,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
    },
    body: JSON.stringify(initializeRequest(1, clientName)),
  })

/** Polls `ok` (a server-side effect, e.g. of a closed connection) for up to 5 s; whether it came. */
async function waitFor(ok: () => Promise<boolean>): Promise<boolean> {
  const deadline = Date.now() + 5000
  while (!(await ok())) {
    if (Date.now() > deadline) return false
    await new Promise((r) => setTimeout(r, 20))
  }
  return true
}

/** Whether one of the key's MCP stream slots is free now: one is taken and given straight back. */
async function streamSlotFree(t: TestApp, keyId: string): Promise<boolean> {
  const c = t.ctx.limits.concurrency
  const d = await c.acquire(`mcp:${keyId}`, MAX_MCP_STREAMS, 1000, t.ctx.now())
  if (d.ok && d.leaseId) await c.release(`mcp:${keyId}`, d.leaseId)
  return d.ok
}

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
      test(`${transport}: over the rate, tools/call is a RATE_LIMITED tool error with Retry-After; protocol messages still answer`, async () => {
        const account = await t.account(1)
        const key = await t.key(account)
        const client = new Client({ name: 'erm3-limits', version: '1.0.0' })
        await client.connect(mcpTransport(transport, base, key))
        const clock = t.clock.offsetMs
        try {
          await exhaustRate(t, await onlyKeyId(t, account))
          const r = await client.callTool({ name: 'metrics', arguments: { ticker: 'AAPL' } })
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
          // Not tool calls: protocol messages take no token, so an SDK's implicit tools/list or a
          // ping never turns the limit into a transport exception.
          assert.ok((await client.listTools()).tools.length > 5)
          await client.ping()
        } finally {
          t.clock.offsetMs = clock
        }
        // Once the bucket has refilled (a minute later), the same session works and is billed.
        t.clock.offsetMs += 120_000
        try {
          const ok = await client.callTool({ name: 'metrics', arguments: { ticker: 'AAPL' } })
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
        const r = await client.callTool({ name: 'metrics', arguments: { ticker: 'AAPL' } })
        assert.equal(r.isError, true)
        assert.match(text(r), /^CONCURRENCY_LIMITED: .+ Retry after 1 s\.$/)
        assert.equal((await t.ctx.accounts.balance(account)).balanceMicros, 1_000_000)
        for (const l of leases) await t.ctx.limits.concurrency.release(`key:${id}`, l)
        const ok = await client.callTool({ name: 'metrics', arguments: { ticker: 'AAPL' } })
        assert.ok(!ok.isError, text(ok))
        await client.close()
      })
    }

    test(`at most ${MAX_MCP_STREAMS} open MCP event streams per key: the next is 429 CONCURRENCY_LIMITED; closing one frees it`, async () => {
      const account = await t.account(1)
      const key = await t.key(account)
      const id = await onlyKeyId(t, account)
      const open = []
      try {
        for (let i = 0; i < MAX_MCP_STREAMS; i++) {
          const s = await openStream(base, key)
          assert.equal(s.status, 200)
          open.push(s)
        }
        // Another stream is refused.
        const over = await openStream(base, key)
        assert.equal(over.status, 429)
        assert.equal(over.problem?.code, 'CONCURRENCY_LIMITED')
        assert.match(String(over.problem?.detail), new RegExp(`${MAX_MCP_STREAMS} open MCP event streams`))
        assert.ok(Number(over.headers.get('retry-after')) >= 1)
        assert.equal(over.problem?.retry_after_seconds, Number(over.headers.get('retry-after')))
        // Messages are not streams: a session is still opened and used at the cap.
        const init = await postInitialize(base, key, 'at-the-cap')
        assert.equal(init.status, 200, await init.clone().text())
        const sid = init.headers.get('mcp-session-id') as string
        await init.text()
        const list = await fetch(new URL('/mcp', base), {
          method: 'POST',
          headers: {
            authorization: `Bearer ${key}`,
            'content-type': 'application/json',
            accept: 'application/json, text/event-stream',
            'mcp-session-id': sid,
            'mcp-protocol-version': '2025-06-18',
          },
          body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list' }),
        })
        assert.equal(list.status, 200)
        assert.match(await list.text(), /"metrics"/)
        // The session's own event stream (Streamable HTTP GET /mcp) is one of the key's streams too.
        const session = { 'mcp-session-id': sid, 'mcp-protocol-version': '2025-06-18' }
        const overGet = await openStream(base, key, '/mcp', session)
        assert.equal(overGet.status, 429)
        assert.equal(overGet.problem?.code, 'CONCURRENCY_LIMITED')
        // The key's ten request slots are another cap: REST is not blocked by open streams.
        const rest = await t.client.call('getBalance', { key })
        assert.equal(rest.status, 200)
        // Another key of the account has its own streams.
        const other = await openStream(base, await t.key(account))
        assert.equal(other.status, 200)
        other.close()
        ;(open.shift() as { close(): void }).close()
        // The slot comes back once the server sees the connection close.
        assert.ok(await waitFor(() => streamSlotFree(t, id)), 'the closed stream gave its slot back')
        const again = await openStream(base, key, '/mcp', session)
        assert.equal(again.status, 200)
        open.push(again)
        assert.equal((await openStream(base, key)).status, 429, 'the GET /mcp stream took the freed slot')
      } finally {
        for (const s of open) s.close()
      }
    })

    test('an open stream keeps its slot past the lease TTL (renewed while open)', async (ctx) => {
      const account = await t.account(1)
      const key = await t.key(account)
      const id = await onlyKeyId(t, account)
      ctx.mock.timers.enable({ apis: ['setInterval'] })
      const clock = t.clock.offsetMs
      const open = []
      // Counts the stream leases of this key renewed (each open stream renews its own).
      const slots = t.ctx.limits.concurrency
      const renew = slots.renew
      let renewed = 0
      slots.renew = async (key, ...rest) => {
        const ok = await renew.call(slots, key, ...rest)
        if (ok && key === `mcp:${id}`) renewed++
        return ok
      }
      try {
        for (let i = 0; i < MAX_MCP_STREAMS; i++) open.push(await openStream(base, key))
        assert.ok(open.every((s) => s.status === 200))
        // 100 s on: the renewals (every 30 s) run; then past the first leases' 120 s TTL.
        t.clock.offsetMs += 100_000
        ctx.mock.timers.tick(30_000)
        assert.ok(
          await waitFor(async () => renewed >= MAX_MCP_STREAMS),
          'the open streams renewed their leases',
        )
        t.clock.offsetMs += 30_000
        const over = await openStream(base, key)
        assert.equal(over.status, 429, 'still counted after the TTL')
      } finally {
        slots.renew = renew
        for (const s of open) s.close()
        t.clock.offsetMs = clock
        ctx.mock.timers.reset()
      }
    })

    test('rate limits count tool calls: initialize, tools/list, ping, notifications and DELETE take no token, over the limit too', async () => {
      const account = await t.account(1)
      const key = await t.key(account)
      const post = (sid: string, body: unknown) =>
        fetch(new URL('/mcp', base), {
          method: 'POST',
          headers: {
            authorization: `Bearer ${key}`,
            'content-type': 'application/json',
            accept: 'application/json, text/event-stream',
            'mcp-session-id': sid,
            'mcp-protocol-version': '2025-06-18',
          },
          body: JSON.stringify(body),
        })
      const init = await postInitialize(base, key, 'counted')
      assert.equal(init.status, 200, await init.clone().text())
      const sid = init.headers.get('mcp-session-id') as string
      await init.text()
      const protocol = [
        { jsonrpc: '2.0', method: 'notifications/initialized' },
        { jsonrpc: '2.0', id: 2, method: 'tools/list' },
        { jsonrpc: '2.0', id: 3, method: 'ping' },
        { jsonrpc: '2.0', id: 4, method: 'resources/list' },
      ]
      for (const m of protocol) {
        const r = await post(sid, m)
        assert.ok(r.status === 200 || r.status === 202, `${m.method}: ${r.status}`)
        await r.text()
      }
      // The first tool call takes the first token of the full bucket: nothing before it took one.
      const call = await post(sid, {
        jsonrpc: '2.0',
        id: 5,
        method: 'tools/call',
        params: { name: 'pricing', arguments: {} },
      })
      assert.equal(call.status, 200)
      assert.equal(call.headers.get('x-ratelimit-remaining'), String(KEY_RULES.default.burst - 1))
      await call.text()
      const clock = t.clock.offsetMs
      try {
        await exhaustRate(t, await onlyKeyId(t, account))
        // Over the limit: a new session opens, is listed and pinged, and is closed.
        const again = await postInitialize(base, key, 'over-the-limit')
        assert.equal(again.status, 200, await again.clone().text())
        const sid2 = again.headers.get('mcp-session-id') as string
        await again.text()
        for (const m of protocol) {
          const r = await post(sid2, m)
          assert.ok(r.status === 200 || r.status === 202, `${m.method} over the limit: ${r.status}`)
          await r.text()
        }
        const refused = await post(sid2, {
          jsonrpc: '2.0',
          id: 9,
          method: 'tools/call',
          params: { name: 'metrics', arguments: { ticker: 'SPY' } },
        })
        assert.equal(refused.status, 200)
        assert.equal(refused.headers.get('x-ratelimit-remaining'), '0')
        assert.match(await refused.text(), /RATE_LIMITED: .+ Retry after \d+ s\./)
        for (const id of [sid, sid2]) {
          const del = await fetch(new URL('/mcp', base), {
            method: 'DELETE',
            headers: { authorization: `Bearer ${key}`, 'mcp-session-id': id },
          })
          assert.equal(del.status, 200, 'a session can always be closed')
        }
        assert.equal((await t.ctx.accounts.balance(account)).balanceMicros, 1_000_000)
      } finally {
        t.clock.offsetMs = clock
      }
    })
  })
}

for (const b of BACKEND_PAIRS) limitsSuite(b)
