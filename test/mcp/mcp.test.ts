import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { BACKEND_PAIRS, type BackendPair, startTestApp, type TestApp } from '../helpers/test-app.ts'
import { assertMeteredSession, MCP_TRANSPORTS, mcpTransport } from './clients.ts'

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
  })
}

for (const b of BACKEND_PAIRS) mcpSuite(b)
