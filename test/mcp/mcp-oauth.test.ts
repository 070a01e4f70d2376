import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { after, before, describe, test } from 'node:test'
import { auth, type OAuthClientProvider, UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import type {
  OAuthClientInformationMixed,
  OAuthClientMetadata,
  OAuthTokens,
} from '@modelcontextprotocol/sdk/shared/auth.js'
import { approveInBrowser, freePort } from '../helpers/oauth-browser.ts'
import { startTestApp, type TestApp } from '../helpers/test-app.ts'

/**
 * Acceptance test: the MCP SDK client's own OAuth (`auth()`) against the server, over a real
 * listener whose PUBLIC_URL is its origin. The SDK discovers the protected-resource and
 * authorization-server metadata, registers itself, builds the PKCE authorization URL and exchanges
 * the code; the provider below is the app around it (storage, and a browser that signs in with the
 * mailed link and approves the consent page).
 */
const REDIRECT = 'http://127.0.0.1:53682/callback'

class TestProvider implements OAuthClientProvider {
  client: OAuthClientInformationMixed | undefined
  saved: OAuthTokens | undefined
  verifier = ''
  expectedState = ''
  /** The code the browser brought back to the redirect URI. */
  code: string | null = null
  discovery: { resourceMetadataUrl?: string; authorizationServerUrl?: string } = {}
  constructor(
    private readonly t: TestApp,
    private readonly email: string,
  ) {}
  get redirectUrl() {
    return REDIRECT
  }
  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: 'MCP SDK auth() test',
      redirect_uris: [REDIRECT],
      token_endpoint_auth_method: 'none',
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
    }
  }
  state() {
    this.expectedState = randomBytes(12).toString('base64url')
    return this.expectedState
  }
  clientInformation() {
    return this.client
  }
  saveClientInformation(info: OAuthClientInformationMixed) {
    this.client = info
  }
  tokens() {
    return this.saved
  }
  saveTokens(tokens: OAuthTokens) {
    this.saved = tokens
  }
  saveCodeVerifier(v: string) {
    this.verifier = v
  }
  codeVerifier() {
    return this.verifier
  }
  saveDiscoveryState(s: { resourceMetadataUrl?: string; authorizationServerUrl: string }) {
    this.discovery = s
  }
  async redirectToAuthorization(url: URL) {
    const back = await approveInBrowser(this.t, url, this.email)
    assert.equal(back.origin + back.pathname, REDIRECT)
    assert.equal(back.searchParams.get('state'), this.expectedState)
    this.code = back.searchParams.get('code')
  }
}

describe('MCP with the SDK client’s own OAuth', () => {
  let t: TestApp
  let origin: string
  let mcpUrl: URL
  before(async () => {
    const port = await freePort()
    origin = `http://127.0.0.1:${port}`
    mcpUrl = new URL('/mcp', origin)
    t = await startTestApp({ env: { PUBLIC_URL: origin } })
    await t.app.fastify.listen({ port, host: '127.0.0.1' })
  })
  after(() => t?.close())

  const balanceOf = async (client: Client) =>
    (await client.callTool({ name: 'balance', arguments: {} })).structuredContent as {
      account_id: string
      balance_usd: number
    }

  test('auth(): discovery, registration, sign-in and consent, code exchange; tools billed to the user', async () => {
    const email = 'sdk-auth@example.com'
    const accountId = await t.account(3, email)
    const provider = new TestProvider(t, email)

    assert.equal(await auth(provider, { serverUrl: mcpUrl }), 'REDIRECT')
    assert.match(String(provider.client?.client_id), /^client_/)
    assert.equal(provider.discovery.authorizationServerUrl, origin)
    assert.ok(provider.code, 'the browser came back with a code')
    assert.equal(await auth(provider, { serverUrl: mcpUrl, authorizationCode: provider.code }), 'AUTHORIZED')
    const access = provider.saved?.access_token ?? ''
    assert.match(access, /^erm_user_live_/)
    assert.equal(provider.saved?.token_type.toLowerCase(), 'bearer')
    assert.ok(provider.saved?.refresh_token)

    // The transport puts the provider's token on every request, both transports.
    const client = new Client({ name: 'erm3-oauth', version: '1.0.0' })
    await client.connect(new StreamableHTTPClientTransport(mcpUrl, { authProvider: provider }))
    const bal = await balanceOf(client)
    assert.equal(bal.account_id, accountId)
    assert.equal(bal.balance_usd, 3)
    const m = await client.callTool({ name: 'metrics', arguments: { ticker: 'AAPL' } })
    assert.ok(!m.isError, JSON.stringify(m.content))
    assert.equal((await balanceOf(client)).balance_usd, 2.999)
    assert.equal((await t.ctx.accounts.balance(accountId)).balanceMicros, 2_999_000)
    await client.close()

    const sse = new Client({ name: 'erm3-oauth-sse', version: '1.0.0' })
    await sse.connect(new SSEClientTransport(new URL('/mcp/sse', origin), { authProvider: provider }))
    assert.equal((await balanceOf(sse)).account_id, accountId)
    await sse.close()

    // With the refresh token, auth() renews without the browser; the old access token is not needed.
    provider.code = null
    assert.equal(await auth(provider, { serverUrl: mcpUrl }), 'AUTHORIZED')
    assert.equal(provider.code, null, 'no second trip through the browser')
    assert.notEqual(provider.saved?.access_token, access)
  })

  test('connecting without a token: the 401 WWW-Authenticate starts the flow, finishAuth completes it', async () => {
    const email = 'sdk-401@example.com'
    const accountId = await t.account(1, email)
    const provider = new TestProvider(t, email)
    const first = new StreamableHTTPClientTransport(mcpUrl, { authProvider: provider })
    await assert.rejects(
      new Client({ name: 'erm3-oauth', version: '1.0.0' }).connect(first),
      (e) => e instanceof UnauthorizedError,
    )
    // Discovery started from the resource_metadata of the 401, not from a guessed path.
    assert.equal(provider.discovery.resourceMetadataUrl, `${origin}/.well-known/oauth-protected-resource`)
    assert.ok(provider.code)
    await first.finishAuth(provider.code)
    assert.match(provider.saved?.access_token ?? '', /^erm_user_live_/)

    const client = new Client({ name: 'erm3-oauth', version: '1.0.0' })
    await client.connect(new StreamableHTTPClientTransport(mcpUrl, { authProvider: provider }))
    const bal = await balanceOf(client)
    assert.equal(bal.account_id, accountId)
    assert.equal(bal.balance_usd, 1)
    await client.close()
  })
})
