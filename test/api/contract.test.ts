import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { WIRE_ERRORS } from '../../src/contract/errors.ts'
import { CAPABILITIES } from '../../src/contract/pricing.ts'
import { startTestApp, type TestApp } from '../helpers/test-app.ts'

/** Public-surface pins: literals here, never imported expectations. A red pin = deliberate change: update it. */
describe('contract pins', () => {
  let t: TestApp
  before(async () => {
    t = await startTestApp()
  })
  after(() => t.close())

  test('the error table', () => {
    assert.deepEqual(
      Object.entries(WIRE_ERRORS).map(([code, e]) => `${e.status} ${code}`),
      [
        '400 INVALID_REQUEST',
        '400 TOO_MANY_TICKERS',
        '400 INVALID_TICKER',
        '401 MISSING_CREDENTIALS',
        '401 INVALID_KEY',
        '401 REVOKED_KEY',
        '401 EXPIRED_KEY',
        '402 INSUFFICIENT_BALANCE',
        '402 SPEND_CAP_REACHED',
        '403 FORBIDDEN',
        '403 ACCOUNT_REQUIRED',
        '404 TICKER_NOT_FOUND',
        '404 NOT_FOUND',
        '404 DATE_NOT_AVAILABLE',
        '405 METHOD_NOT_ALLOWED',
        '406 NOT_ACCEPTABLE',
        '408 REQUEST_TIMEOUT',
        '409 CONFLICT',
        '409 RELINK_REQUIRED',
        '413 PAYLOAD_TOO_LARGE',
        '415 UNSUPPORTED_MEDIA_TYPE',
        '429 RATE_LIMITED',
        '429 CONCURRENCY_LIMITED',
        '500 INTERNAL',
        '502 UPSTREAM_ERROR',
        '503 MODEL_NOT_READY',
        '503 UNAVAILABLE',
        '504 UPSTREAM_TIMEOUT',
      ],
    )
  })

  test('the OpenAPI document lists exactly the routes the server has', async () => {
    const doc = (await t.client.call('getOpenApi')).json as {
      openapi: string
      info: { version: string }
      paths: Record<string, Record<string, { operationId: string; 'x-pricing'?: Record<string, unknown> }>>
    }
    assert.equal(doc.openapi, '3.1.0')
    assert.equal(doc.info.version, '3.0.0-agent')
    const documented = Object.entries(doc.paths)
      .flatMap(([p, methods]) => Object.keys(methods).map((m) => `${m.toUpperCase()} ${p}`))
      .sort()
    const served = t.app.routes
      .filter((r) => !r.startsWith('HEAD '))
      .map((r) => r.replace(/:(\w+)/g, '{$1}'))
      .sort()
    assert.deepEqual(served, documented, 'routes and the OpenAPI document differ')
    // HEAD exists exactly as the twin of each GET.
    assert.deepEqual(
      t.app.routes
        .filter((r) => r.startsWith('HEAD '))
        .map((r) => r.slice(5))
        .sort(),
      t.app.routes
        .filter((r) => r.startsWith('GET '))
        .map((r) => r.slice(4))
        .sort(),
    )
    assert.deepEqual(documented, [
      'DELETE /account/keys/{id}',
      'DELETE /account/oauth-grants/{client_id}',
      'DELETE /account/webhooks/{id}',
      'DELETE /mcp',
      'DELETE /plaid/items/{id}',
      'GET /',
      'GET /.well-known/agent-manifest',
      'GET /.well-known/agentic-disclosure.json',
      'GET /.well-known/ai-plugin.json',
      'GET /.well-known/mcp.json',
      'GET /.well-known/oauth-authorization-server',
      'GET /.well-known/oauth-protected-resource',
      'GET /account/audit',
      'GET /account/balance-alert',
      'GET /account/keys',
      'GET /account/ledger',
      'GET /account/oauth-grants',
      'GET /account/settings',
      'GET /account/usage',
      'GET /account/webhooks',
      'GET /account/webhooks/{id}',
      'GET /account/webhooks/{id}/deliveries',
      'GET /app',
      'GET /app/assets/{asset}',
      'GET /auth/callback',
      'GET /auth/session',
      'GET /balance',
      'GET /data/benchmark/{id}',
      'GET /docs/api',
      'GET /docs/api/{asset}',
      'GET /docs/billing',
      'GET /docs/errors',
      'GET /docs/methodology',
      'GET /docs/methodology.md',
      'GET /docs/model-quality',
      'GET /docs/webhooks',
      'GET /etf-returns',
      'GET /etf/factor-returns',
      'GET /fundamentals/{ticker}',
      'GET /health',
      'GET /industry-panel',
      'GET /invoices',
      'GET /l3-decomposition',
      'GET /llms.txt',
      'GET /lstar',
      'GET /mcp',
      'GET /mcp/sse',
      'GET /metrics-prom',
      'GET /metrics/{ticker}',
      'GET /metrics/{ticker}/correlation',
      'GET /oauth/authorize',
      'GET /openapi.json',
      'GET /plaid/holdings',
      'GET /plaid/items',
      'GET /pricing',
      'GET /rankings/{ticker}',
      'GET /returns',
      'GET /returns-decomposition',
      'GET /ticker-returns',
      'GET /tickers',
      'GET /universe/{universe}/members',
      'PATCH /account/keys/{id}',
      'PATCH /account/settings',
      'POST /account/balance-alert',
      'POST /account/keys',
      'POST /account/keys/{id}/rotate',
      'POST /account/webhooks',
      'POST /account/webhooks/{id}',
      'POST /account/webhooks/{id}/deliveries/{delivery_id}/redeliver',
      'POST /account/webhooks/{id}/rotate-secret',
      'POST /account/webhooks/{id}/test',
      'POST /auth/callback',
      'POST /auth/dashboard-key',
      'POST /auth/login',
      'POST /auth/logout',
      'POST /auth/logout-all',
      'POST /auth/provision',
      'POST /auth/provision-free',
      'POST /batch/analyze',
      'POST /batch/lstar',
      'POST /billing/checkout',
      'POST /billing/stripe/webhook',
      'POST /chat',
      'POST /correlation',
      'POST /decompose',
      'POST /estimate',
      'POST /mcp',
      'POST /mcp/messages',
      'POST /oauth/authorize',
      'POST /oauth/register',
      'POST /oauth/revoke',
      'POST /oauth/token',
      'POST /plaid/exchange',
      'POST /plaid/link-token',
      'POST /rankings/screen',
      'POST /signals/residual-reversion/basket',
      'POST /snapshot',
      'POST /v4/decompose',
    ])
    assert.deepEqual(doc.paths['/metrics/{ticker}']?.get?.['x-pricing'], {
      capability_id: 'metrics',
      tier: 'baseline',
      model: 'per_request',
      cost_usd: 0.001,
      billing_code: 'metrics_v3',
    })
  })

  test('prices of the seed table (USD per call or per position)', () => {
    const price = Object.fromEntries(
      CAPABILITIES.map((c) => [c.id, [c.unitMicros / 1e6, c.minChargeMicros, c.billingCode]]),
    )
    assert.deepEqual(price.metrics, [0.001, null, 'metrics_v3'])
    assert.deepEqual(price.decompose, [0.001, null, 'metrics_v3'])
    assert.deepEqual(price.ticker_returns, [0.005, null, 'ticker_returns_v1'])
    assert.deepEqual(price.lstar, [0.02, null, 'lstar_v1'])
    assert.deepEqual(price.batch_lstar, [0.005, 10000, 'batch_lstar_v1'])
    assert.deepEqual(price.returns_decomposition, [0.02, null, 'returns_decomposition_v1'])
    assert.deepEqual(price.industry_panel, [0.02, null, 'industry_panel_v1'])
    assert.deepEqual(price.rankings_screen, [0.02, null, 'rankings_screen_v1'])
    assert.deepEqual(price.snapshot, [0.25, null, 'snapshot_v1'])
    assert.deepEqual(price.correlation, [0.002, null, 'correlation_v1'])
    // POST /correlation: one ticker 0.002, a batch call (2–50 tickers) 0.005 whatever its size.
    assert.deepEqual(price.correlation_batch, [0.002, null, 'correlation_v1'])
    const batch = CAPABILITIES.find((c) => c.id === 'correlation_batch')
    assert.equal(batch?.batchUnitMicros, 5000)
    // POST /chat: 0.001 / 0.002 per 1k input / output tokens (plus the tools' own prices).
    assert.deepEqual(price.chat, [0.001, null, 'chat_v1'])
    assert.equal(CAPABILITIES.find((c) => c.id === 'chat')?.outputUnitMicros, 2000)
  })
})
