import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { after, before, describe, test } from 'node:test'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { clusterRoot, type Nginx, removeRoot, startNginx } from '../helpers/cluster.ts'
import { BACKEND_PAIRS, startTestApp, type TestApp } from '../helpers/test-app.ts'
import { initializeRequest } from '../mcp/clients.ts'

/**
 * MCP sessions across nodes: two nodes over one PostgreSQL and one Redis, behind nginx (round
 * robin). A session opened on one node is continued and ended on the other, directly and through
 * the balancer with the official SDK client.
 */
const scaleOut = BACKEND_PAIRS.find((b) => b.limits === 'redis')
const hasNginx =
  existsSync('/usr/sbin/nginx') ||
  spawnSync('sh', ['-c', 'command -v nginx'], { stdio: 'ignore' }).status === 0
const skip = scaleOut?.skip ?? (hasNginx ? false : 'nginx is not installed (.ci/run installs it)')

const headers = (key: string, sid?: string) => ({
  authorization: `Bearer ${key}`,
  'content-type': 'application/json',
  accept: 'application/json, text/event-stream',
  'mcp-protocol-version': '2025-06-18',
  ...(sid ? { 'mcp-session-id': sid } : {}),
})

describe('MCP sessions on two nodes behind nginx', { skip }, () => {
  let t: TestApp
  let b: Awaited<ReturnType<TestApp['anotherNode']>>
  let nodeA: string
  let nodeB: string
  let root: string
  let nginx: Nginx
  before(async () => {
    t = await startTestApp({ db: 'postgres', limits: 'redis' })
    b = await t.anotherNode()
    nodeA = await t.listen()
    nodeB = await b.listen()
    root = clusterRoot()
    nginx = await startNginx(root, [Number(new URL(nodeA).port), Number(new URL(nodeB).port)])
  })
  after(async () => {
    await nginx?.stop()
    await b?.close()
    await t?.close()
    if (root) removeRoot(root)
  })

  test('initialised on node A, a tool called on node B; ended on B, unknown on A', async () => {
    const account = await t.account(1)
    const key = await t.key(account)
    const init = await fetch(new URL('/mcp', nodeA), {
      method: 'POST',
      headers: headers(key),
      body: JSON.stringify(initializeRequest(1, 'two-nodes')),
    })
    assert.equal(init.status, 200)
    const sid = init.headers.get('mcp-session-id') as string
    assert.ok(sid)
    await init.text()
    const call = await fetch(new URL('/mcp', nodeB), {
      method: 'POST',
      headers: headers(key, sid),
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 2,
        method: 'tools/call',
        params: { name: 'metrics', arguments: { ticker: 'AAPL' } },
      }),
    })
    assert.equal(call.status, 200)
    const text = await call.text()
    assert.match(text, /"structuredContent"/)
    assert.doesNotMatch(text, /"isError":true/)
    assert.equal((await t.ctx.accounts.balance(account)).balanceMicros, 999_000)
    // Another account cannot use the session on either node.
    const stranger = await t.key(await t.account(1))
    for (const node of [nodeA, nodeB]) {
      const r = await fetch(new URL('/mcp', node), {
        method: 'POST',
        headers: headers(stranger, sid),
        body: JSON.stringify({ jsonrpc: '2.0', id: 3, method: 'tools/list' }),
      })
      assert.equal(r.status, 404)
      await r.text()
    }
    const del = await fetch(new URL('/mcp', nodeB), { method: 'DELETE', headers: headers(key, sid) })
    assert.equal(del.status, 200)
    const after = await fetch(new URL('/mcp', nodeA), {
      method: 'POST',
      headers: headers(key, sid),
      body: JSON.stringify({ jsonrpc: '2.0', id: 4, method: 'tools/list' }),
    })
    assert.equal(after.status, 404, 'ended on B is ended on A')
    await after.text()
  })

  test('the SDK client through nginx: every request on either node, one session, billed once per call', async () => {
    const account = await t.account(1)
    const key = await t.key(account)
    const before = [t.app.mcpSessions(), b.app.mcpSessions()]
    const transport = new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${nginx.port}/mcp`), {
      requestInit: { headers: { authorization: `Bearer ${key}` } },
    })
    const client = new Client({ name: 'erm3-two-nodes', version: '1.0.0' })
    await client.connect(transport)
    try {
      assert.match(client.getInstructions() ?? '', /SYNTHETIC/)
      for (let i = 0; i < 4; i++) {
        const r = await client.callTool({ name: 'metrics', arguments: { ticker: 'AAPL' } })
        assert.ok(!r.isError, JSON.stringify(r.content))
        assert.ok((await client.listTools()).tools.length > 5)
      }
      // Both nodes served the session (round robin), which each came to know.
      assert.ok(t.app.mcpSessions() > (before[0] as number), 'node A served the session')
      assert.ok(b.app.mcpSessions() > (before[1] as number), 'node B served the session')
      // Every debit is one call's price, and the balance is what the debits say (nothing lost or doubled).
      const debits = (
        await t.ctx.accounts.entries(account, { from: 0, to: Date.now() + 1000, limit: 20 })
      ).filter((e) => e.kind === 'debit')
      assert.ok(debits.length >= 1 && debits.length <= 4, `${debits.length} debits`)
      assert.ok(debits.every((d) => d.amountMicros === -1000))
      assert.equal((await t.ctx.accounts.balance(account)).balanceMicros, 1_000_000 - 1000 * debits.length)
    } finally {
      await transport.terminateSession().catch(() => {})
      await client.close()
    }
  })
})
