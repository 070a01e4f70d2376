import { after } from 'node:test'
import { newId } from '../../src/platform/ids.ts'
import { issueKey } from '../../src/services/identity/keys.ts'
import { signSession } from '../../src/services/identity/session.ts'
import { encryptSecret } from '../../src/services/webhooks/crypto.ts'
import { startFakeLlm } from '../helpers/fake-llm.ts'
import { startFakePlaid } from '../helpers/fake-plaid.ts'
import { startFakeStripe } from '../helpers/fake-stripe.ts'
import { BACKEND_PAIRS, type TestApp } from '../helpers/test-app.ts'
import { type SecurityCase, securitySuite } from './security-suite.ts'
import {
  type SessionCaseScope,
  type SessionSecurityCase,
  sessionCase,
  sessionSecuritySuite,
} from './session-security-suite.ts'

/** Every authenticated operation so far; later routes add their case here. */
const CASES: SecurityCase[] = [
  { op: 'getBalance', input: {}, metered: false },
  {
    op: 'getInvoices',
    input: { query: { period: 'month' } },
    metered: false,
    invalid: { query: { period: 'decade' as 'month' } },
  },
  {
    op: 'getMetrics',
    input: { params: { ticker: 'AAPL' } },
    metered: true,
    invalid: { params: { ticker: 'NO SUCH!' } },
  },
  {
    op: 'decompose',
    input: { body: { ticker: 'AAPL' } },
    metered: true,
    invalid: { body: { ticker: 'AAPL', extra: 1 } },
  },
  { op: 'decomposeV4', input: { body: { ticker: 'AAPL' } }, metered: true, invalid: { body: {} } },
  {
    op: 'getTickerReturns',
    input: { query: { ticker: 'AAPL', years: 1 } },
    metered: true,
    invalid: { query: { ticker: 'AAPL', years: 16 } },
  },
  {
    op: 'getEtfReturns',
    input: { query: { ticker: 'SPY' } },
    metered: true,
    invalid: { query: { ticker: 'SPY', years: 16 } },
  },
  { op: 'getTickers', input: { query: { search: 'S' } }, metered: false, invalid: { query: { limit: 0 } } },
  {
    op: 'getLstar',
    input: { query: { ticker: 'AAPL', years: 1 } },
    metered: true,
    invalid: { query: { ticker: 'AAPL', threshold: 0.6 } },
  },
  {
    op: 'getReturnsDecomposition',
    input: { query: { ticker: 'AAPL' } },
    metered: true,
    invalid: { query: { ticker: 'AAPL', years: 16 } },
  },
  {
    op: 'getL3Decomposition',
    input: { query: { ticker: 'AAPL' } },
    metered: true,
    invalid: { query: { ticker: 'AAPL', years: 0 } },
  },
  {
    op: 'batchLstar',
    input: { body: { tickers: ['AAPL'] } },
    metered: true,
    invalid: { body: { tickers: [] } },
  },
  {
    op: 'batchAnalyze',
    input: { body: { tickers: ['AAPL'], metrics: ['returns'] } },
    metered: true,
    invalid: { body: { tickers: ['AAPL'], metrics: ['prices'] } },
  },
  {
    op: 'getIndustryPanel',
    input: { query: { level: 'sector' } },
    metered: true,
    invalid: { query: { level: 'industry' } },
  },
  {
    op: 'rankingsScreen',
    input: { body: { metric: 'gross_return' } },
    metered: true,
    invalid: { body: { metric: 'alpha' } },
  },
  {
    op: 'getRankings',
    input: { params: { ticker: 'AAPL' } },
    metered: true,
    invalid: { params: { ticker: 'NO SUCH!' } },
  },
  {
    op: 'getCorrelation',
    input: { params: { ticker: 'AAPL' }, query: { return_type: 'gross' } },
    metered: true,
    invalid: { params: { ticker: 'AAPL' }, query: { factors: 'carry' } },
  },
  {
    op: 'postCorrelation',
    input: { body: { ticker: 'AAPL', return_type: 'gross' } },
    metered: true,
    invalid: { body: { tickers: ['AAPL'] } },
  },
  {
    op: 'getUniverseMembers',
    input: { params: { universe: 'uni_mc_50' } },
    metered: true,
    invalid: { params: { universe: 'uni_mc_42' } },
  },
  {
    op: 'getEtfFactorReturns',
    input: { query: { tickers: 'SPY' } },
    metered: true,
    invalid: { query: { tickers: 'QQQ' } },
  },
  {
    op: 'getFundamentals',
    input: { params: { ticker: 'AAPL' }, query: { periods: '2' } },
    metered: true,
    invalid: { params: { ticker: 'AAPL' }, query: { rf_tenor: '4m' } },
  },
  {
    op: 'snapshot',
    input: { body: { type: 'ticker', ticker: 'AAPL', lookback_days: 60 } },
    metered: true,
    invalid: { body: { type: 'portfolio', portfolio: [{ ticker: 'AAPL', weight: 1, shares: 2 }] } },
  },
  {
    op: 'getBenchmark',
    input: { params: { id: 'bm_etf_spy' } },
    metered: false,
    invalid: { params: { id: '60:SPY,30:XLK' } },
  },
  {
    op: 'residualReversionBasket',
    input: { body: { tickers: ['AAPL'] } },
    metered: true,
    invalid: { body: { tickers: [] } },
  },
  // Self-service reads: the account's own keys may read them.
  { op: 'listAccountKeys', input: {}, metered: false },
  {
    op: 'getAccountUsage',
    input: { query: { from: '2026-01-01', to: '2026-01-31' } },
    metered: false,
    invalid: { query: { from: '2026-02-01', to: '2026-01-01' } },
  },
  {
    op: 'getAccountLedger',
    input: { query: { format: 'csv' } },
    metered: false,
    invalid: { query: { limit: 0 } },
  },
  { op: 'getAccountSettings', input: {}, metered: false },
  {
    op: 'getAccountAudit',
    input: { query: { limit: 10 } },
    metered: false,
    invalid: { query: { limit: 0 } },
  },
] as SecurityCase[]

/** A key of the account to act on (rename, rotate, revoke each get a fresh one). */
const freshKeyId = async ({ t, accountId }: SessionCaseScope) =>
  (await issueKey(t.ctx, { accountId, kind: 'agent', environment: 'live' })).record.id

/** A webhook subscription of the account to act on (each call gets a fresh one, past the API's cap of 20). */
const freshWebhookId = async ({ t, accountId }: SessionCaseScope) => {
  const id = newId('whs')
  const secretEnc = encryptSecret(t.ctx.secrets.webhookKey as string, id, 'whsec_security_suite')
  await t.ctx.accounts.webhooks().createSubscription({
    id,
    accountId,
    url: 'https://hooks.example.com/x',
    events: ['key.created'],
    secretEnc,
    createdAt: t.ctx.now(),
  })
  return id
}

/** An OAuth grant of the account to a new client (approved, with a live refresh token) to act on. */
const freshGrantClientId = async ({ t, accountId }: SessionCaseScope) => {
  const oauth = t.ctx.accounts.oauth()
  const now = t.ctx.now()
  const redirectUri = 'http://127.0.0.1:7777/cb'
  const { clientId } = await oauth.registerClient({
    clientId: newId('client'),
    clientName: 'Security suite agent',
    redirectUris: [redirectUri],
    createdAt: now,
  })
  await oauth.recordApproval({ accountId, clientId, redirectUri, scope: 'mcp:read', at: now })
  await oauth.createRefreshToken({
    hash: newId('rth'),
    familyId: newId('rtf'),
    clientId,
    accountId,
    scope: 'mcp:read',
    createdAt: now,
    expiresAt: now + 86_400_000,
  })
  return clientId
}

/** Session operations: changes to the account. */
const SESSION_CASES: SessionSecurityCase[] = [
  sessionCase({ op: 'getSession', input: async () => ({}) }),
  sessionCase({ op: 'dashboardKey', input: async () => ({}) }),
  sessionCase({ op: 'logout', input: async () => ({}) }),
  sessionCase({ op: 'logoutAll', input: async () => ({}) }),
  sessionCase({
    op: 'createAccountKey',
    input: async () => ({ body: { environment: 'live' as const } }),
    invalid: async () => ({ body: { environment: 'prod' as 'live' } }),
  }),
  sessionCase({
    op: 'renameAccountKey',
    input: async (s) => ({ params: { id: await freshKeyId(s) }, body: { name: 'renamed' } }),
    invalid: async (s) => ({ params: { id: await freshKeyId(s) }, body: { name: '' } }),
  }),
  sessionCase({
    op: 'rotateAccountKey',
    input: async (s) => ({ params: { id: await freshKeyId(s) }, body: { overlap_seconds: 30 } }),
    invalid: async (s) => ({ params: { id: await freshKeyId(s) }, body: { overlap_seconds: -1 } }),
  }),
  sessionCase({
    op: 'revokeAccountKey',
    input: async (s) => ({ params: { id: await freshKeyId(s) } }),
    invalid: async () => ({ params: { id: 'no such key!' } }),
  }),
  sessionCase({
    op: 'updateAccountSettings',
    input: async () => ({ body: { spend_cap_usd: 100 } }),
    invalid: async () => ({ body: { spend_cap_usd: -5 } }),
  }),
  // Webhooks and the balance alert
  sessionCase({ op: 'listWebhooks', input: async () => ({}) }),
  sessionCase({
    op: 'createWebhook',
    input: async () => ({
      body: { url: 'https://hooks.example.com/erm3', events: ['key.created' as const] },
    }),
    invalid: async () => ({
      body: { url: 'ftp://hooks.example.com/erm3', events: ['key.created' as const] },
    }),
  }),
  sessionCase({
    op: 'getWebhook',
    input: async (s) => ({ params: { id: await freshWebhookId(s) } }),
    invalid: async () => ({ params: { id: 'no such id!' } }),
  }),
  sessionCase({
    op: 'updateWebhook',
    input: async (s) => ({ params: { id: await freshWebhookId(s) }, body: { enabled: false } }),
    invalid: async (s) => ({ params: { id: await freshWebhookId(s) }, body: {} }),
  }),
  sessionCase({
    op: 'deleteWebhook',
    input: async (s) => ({ params: { id: await freshWebhookId(s) } }),
    invalid: async () => ({ params: { id: 'no such id!' } }),
  }),
  sessionCase({
    op: 'rotateWebhookSecret',
    input: async (s) => ({ params: { id: await freshWebhookId(s) } }),
    invalid: async () => ({ params: { id: 'no such id!' } }),
  }),
  sessionCase({
    op: 'testWebhook',
    input: async (s) => ({ params: { id: await freshWebhookId(s) } }),
    invalid: async () => ({ params: { id: 'no such id!' } }),
  }),
  sessionCase({
    op: 'listWebhookDeliveries',
    input: async (s) => ({ params: { id: await freshWebhookId(s) }, query: { limit: 10 } }),
    invalid: async (s) => ({ params: { id: await freshWebhookId(s) }, query: { limit: 0 } }),
  }),
  sessionCase({
    op: 'redeliverWebhook',
    input: async (s) => {
      const id = await freshWebhookId(s)
      const d = await s.t.ctx.accounts.webhooks().enqueueTest(s.accountId, id, s.t.ctx.now())
      return { params: { id, delivery_id: d?.id as string } }
    },
    invalid: async () => ({ params: { id: 'no such id!', delivery_id: 'whd_x' } }),
  }),
  // OAuth grants: the agents the account approved, and their revocation.
  sessionCase({ op: 'listOAuthGrants', input: async () => ({}) }),
  sessionCase({
    op: 'revokeOAuthGrant',
    input: async (s) => ({ params: { client_id: await freshGrantClientId(s) } }),
    invalid: async () => ({ params: { client_id: 'no such client!' } }),
  }),
  sessionCase({ op: 'getBalanceAlert', input: async () => ({}) }),
  sessionCase({
    op: 'setBalanceAlert',
    input: async () => ({ body: { threshold_usd: 2.5 } }),
    invalid: async () => ({ body: { threshold_usd: -1 } }),
  }),
]

for (const b of BACKEND_PAIRS) securitySuite(b, CASES)

/** Top-ups: the checkout runs against a local fake Stripe; test keys are refused. */
const stripe = await startFakeStripe()
after(() => stripe.close())
const STRIPE_ENV = {
  STRIPE_SECRET_KEY: 'sk_test_security_suite_0000',
  STRIPE_WEBHOOK_SECRET: 'whsec_security_suite_0000',
  STRIPE_API_BASE: stripe.url,
}
const CHECKOUT_CASE: SecurityCase<'createCheckout'> = {
  op: 'createCheckout',
  input: { body: { amount_usd: 10 } },
  metered: false,
  testKey: 'refused',
  invalid: { body: { amount_usd: 9.99 } },
}
const STRIPE_CASES = [CHECKOUT_CASE] as unknown as SecurityCase[]
for (const b of BACKEND_PAIRS) securitySuite(b, STRIPE_CASES, { env: STRIPE_ENV, name: 'Stripe top-ups' })
for (const b of BACKEND_PAIRS) sessionSecuritySuite(b, SESSION_CASES)

/** Brokerage holdings: Plaid is a local fake; the suite's account links one item first. */
const plaid = await startFakePlaid()
plaid.portfolio = [
  { account: 0, ticker: 'CUR:USD', type: 'cash', name: 'U S Dollar', quantity: 100, price: 1 },
]
after(() => plaid.close())
const PLAID_ENV = {
  PLAID_CLIENT_ID: plaid.clientId,
  PLAID_SECRET: plaid.secret,
  PLAID_API_BASE: plaid.url,
  ERM3_PLAID_TOKEN_KEYS: `k1:${Buffer.alloc(32, 7).toString('base64')}`,
}
/** Links a fresh Plaid item to the account through POST /plaid/exchange; returns its id. */
async function linkPlaidItem(t: TestApp, accountId: string): Promise<string> {
  const email = (await t.ctx.accounts.getAccount(accountId))?.email as string
  const r = await t.app.fastify.inject({
    method: 'POST',
    url: '/plaid/exchange',
    headers: { authorization: `Bearer ${await signSession(t.ctx, { accountId, email })}` },
    payload: { public_token: plaid.publicToken() },
  })
  if (r.statusCode !== 201) throw new Error(`linking failed: ${r.body}`)
  return (JSON.parse(r.body) as { id: string }).id
}
const HOLDINGS_CASES = [{ op: 'getPlaidHoldings', input: {}, metered: true }] as SecurityCase[]
for (const b of BACKEND_PAIRS)
  securitySuite(b, HOLDINGS_CASES, {
    env: PLAID_ENV,
    name: 'Plaid holdings',
    setup: async (t, accountId) => void (await linkPlaidItem(t, accountId)),
  })
const PLAID_SESSION_CASES: SessionSecurityCase[] = [
  sessionCase({
    op: 'createPlaidLinkToken',
    input: async () => ({ body: {} }),
    invalid: async () => ({ body: { item_id: 'no such id!' } }),
  }),
  sessionCase({
    op: 'exchangePlaidPublicToken',
    input: async () => ({ body: { public_token: plaid.publicToken() } }),
    invalid: async () => ({ body: { public_token: '' } }),
  }),
  sessionCase({ op: 'listPlaidItems', input: async () => ({}) }),
  sessionCase({
    op: 'deletePlaidItem',
    input: async (s) => ({ params: { id: await linkPlaidItem(s.t, s.accountId) } }),
    invalid: async () => ({ params: { id: 'no such id!' } }),
  }),
]
for (const b of BACKEND_PAIRS) sessionSecuritySuite(b, PLAID_SESSION_CASES, { env: PLAID_ENV, name: 'Plaid' })

// POST /chat against a loopback fake provider that answers every call `ok`; no tool
// calls (max_tool_calls 0), so its worst case fits the suite's 1 USD account.
const llm = await startFakeLlm()
after(() => llm.close())
const CHAT_ENV = { LLM_BASE_URL: llm.url, LLM_MODEL: 'fake-model', ERM3_CHAT_RPM: '1000' }
const CHAT_CASE: SecurityCase<'chat'> = {
  op: 'chat',
  input: { body: { messages: [{ role: 'user', content: 'hello' }], max_tool_calls: 0 } },
  metered: true,
  invalid: { body: { messages: [{ role: 'system' as 'user', content: 'hello' }] } },
}
const CHAT_CASES = [CHAT_CASE] as unknown as SecurityCase[]
for (const b of BACKEND_PAIRS) securitySuite(b, CHAT_CASES, { env: CHAT_ENV, name: 'Chat' })
