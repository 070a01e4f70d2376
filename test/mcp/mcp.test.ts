import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
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
