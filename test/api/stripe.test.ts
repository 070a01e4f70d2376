import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import Database from 'better-sqlite3'
import pg from 'pg'
import { csrfTokenFor, SESSION_COOKIE } from '../../src/api/auth-hook.ts'
import { signSession } from '../../src/services/identity/session.ts'
import {
  MIGRATIONS,
  SCHEMA_MIGRATIONS_POSTGRES,
  SCHEMA_MIGRATIONS_SQLITE,
} from '../../src/store/accounts/migrations.ts'
import type { PaymentStore } from '../../src/store/accounts/payments-types.ts'
import { createPostgresAccountStore } from '../../src/store/accounts/postgres.ts'
import { createSqliteAccountStore } from '../../src/store/accounts/sqlite.ts'
import type { AccountStore, LedgerEntry } from '../../src/store/accounts/types.ts'
import { type FakeStripe, type StripeEventJson, startFakeStripe, stripeEnv } from '../helpers/fake-stripe.ts'
import { BACKEND_PAIRS, backendsAvailable, startTestApp, type TestApp } from '../helpers/test-app.ts'

const SECRET_KEY = 'sk_test_fake_0123456789abcdef'
const WEBHOOK_SECRET = 'whsec_test_0123456789abcdefghijklmnop'
const USD = 1_000_000

for (const b of BACKEND_PAIRS) {
  describe(`Stripe top-ups: ${b.name}`, { skip: b.skip ?? undefined }, () => {
    let t: TestApp
    let fake: FakeStripe
    let endpoint: string
    before(async () => {
      fake = await startFakeStripe()
      t = await startTestApp({ db: b.db, limits: b.limits, env: stripeEnv(fake, WEBHOOK_SECRET, SECRET_KEY) })
      endpoint = `${await t.listen()}/billing/stripe/webhook`
    })
    after(async () => {
      await t?.close()
      await fake?.close()
    })

    const send = (
      ev: StripeEventJson,
      opts: { timestampS?: number; secret?: string; signature?: string | null } = {},
    ) => fake.send(endpoint, ev, { secret: WEBHOOK_SECRET, ...opts })
    const ledger = (account: string): Promise<LedgerEntry[]> =>
      t.ctx.accounts.entries(account, { from: 0, to: Number.MAX_SAFE_INTEGER, limit: 1000 })
    const balance = async (account: string) => (await t.ctx.accounts.balance(account)).balanceMicros
    const checkout = async (key: string, amount_usd: number) => {
      const r = await t.client.call('createCheckout', { body: { amount_usd }, key })
      assert.equal(r.status, 201, r.text)
      return r.json as { checkout_url: string; session_id: string; amount_usd: number }
    }
    /** An account with a live key and a paid Checkout Session of `usd`. */
    const paid = async (usd: number) => {
      const account = await t.account(0)
      const key = await t.key(account)
      const c = await checkout(key, usd)
      const session = fake.complete(c.session_id)
      return { account, key, session, pi: session.payment_intent as string }
    }

    test('checkout creates a session with the amount, currency and account, and returns its URL', async () => {
      const account = await t.account(0)
      const key = await t.key(account)
      const n = fake.requests.length
      const r = await t.client.call('createCheckout', { body: { amount_usd: 25.5 }, key })
      assert.equal(r.status, 201, r.text)
      const out = r.json as Record<string, unknown>
      assert.equal(fake.requests.length, n + 1)
      const req = fake.requests.at(-1)
      assert.ok(req)
      assert.equal(req.method, 'POST')
      assert.equal(req.path, '/v1/checkout/sessions')
      assert.equal(req.headers.authorization, `Bearer ${SECRET_KEY}`)
      assert.equal(req.form.mode, 'payment')
      assert.equal(req.form['line_items[0][price_data][unit_amount]'], '2550')
      assert.equal(req.form['line_items[0][price_data][currency]'], 'usd')
      assert.equal(req.form['line_items[0][quantity]'], '1')
      assert.equal(req.form.client_reference_id, account)
      assert.equal(req.form['metadata[erm3_account_id]'], account)
      assert.equal(req.form['payment_intent_data[metadata][erm3_account_id]'], account)
      assert.match(req.form.success_url ?? '', /^http:\/\/erm3\.test\/docs\/billing\?checkout=success/)
      assert.match(req.form.cancel_url ?? '', /^http:\/\/erm3\.test\//)
      const session = fake.sessions.get(String(out.session_id))
      assert.ok(session)
      assert.equal(out.checkout_url, session.url)
      assert.equal(out.amount_usd, 25.5)
      assert.equal(out.currency, 'USD')
      assert.equal(out.account_id, account)
      assert.equal(r.headers['cache-control'], 'no-store')
      // Creating a session moves no money.
      assert.equal(await balance(account), 0)
      const doc = await t.app.fastify.inject({ url: '/docs/billing' })
      assert.match(doc.body, /POST \/billing\/checkout/)
    })

    test('a signed-in session may start a checkout too (the dashboard); a forged one may not', async () => {
      const email = `payer-${Date.now()}@example.com`
      const account = await t.account(0, email)
      const jwt = await signSession(t.ctx, { accountId: account, email })
      const r = await t.client.call('createCheckout', { body: { amount_usd: 11 }, key: jwt })
      assert.equal(r.status, 201, r.text)
      assert.equal((r.json as { account_id: string }).account_id, account)
      assert.equal(fake.requests.at(-1)?.form.client_reference_id, account)
      const forged = await t.client.call('createCheckout', {
        body: { amount_usd: 11 },
        key: `${jwt.slice(0, -2)}xx`,
      })
      assert.equal(forged.status, 401)
    })

    test('a cookie session needs the CSRF token to start a checkout', async () => {
      const email = `cookie-${Date.now()}@example.com`
      const account = await t.account(0, email)
      const jwt = await signSession(t.ctx, { accountId: account, email })
      const post = (headers: Record<string, string>) =>
        t.app.fastify.inject({
          method: 'POST',
          url: '/billing/checkout',
          headers: { 'content-type': 'application/json', cookie: `${SESSION_COOKIE}=${jwt}`, ...headers },
          payload: JSON.stringify({ amount_usd: 10 }),
        })
      const n = fake.requests.length
      assert.equal((await post({})).statusCode, 403)
      assert.equal(fake.requests.length, n)
      const ok = await post({ 'x-csrf-token': csrfTokenFor(jwt) })
      assert.equal(ok.statusCode, 201, ok.body)
    })

    test('amount below 10, above 10,000 or with fractions of a cent → 400; test key → 403; nothing sent', async () => {
      const account = await t.account(0)
      const key = await t.key(account)
      const n = fake.requests.length
      for (const amount_usd of [9.99, 0, -10, 10_000.01, 10.001]) {
        const r = await t.client.call('createCheckout', { body: { amount_usd }, key })
        assert.equal(r.status, 400, `${amount_usd}: ${r.text}`)
        assert.equal((r.json as { code: string }).code, 'INVALID_REQUEST')
      }
      const bad = await t.client.call('createCheckout', { body: { amount: 20 } as never, key })
      assert.equal(bad.status, 400)
      const testKey = await t.key(account, { env: 'test' })
      const r = await t.client.call('createCheckout', { body: { amount_usd: 20 }, key: testKey })
      assert.equal(r.status, 403, r.text)
      assert.equal(fake.requests.length, n, 'a refused checkout reached Stripe')
      // The bounds themselves are accepted.
      await checkout(key, 10)
      await checkout(key, 10_000)
    })

    test('Stripe failing → 503 UNAVAILABLE, no secret in the answer', async () => {
      const account = await t.account(0)
      fake.failNext(400)
      const r = await t.client.call('createCheckout', { body: { amount_usd: 20 }, key: await t.key(account) })
      assert.equal(r.status, 503, r.text)
      assert.doesNotMatch(r.text, /sk_test/)
    })

    test('a completed payment credits once; the same event replayed credits nothing', async () => {
      const { account, session, pi } = await paid(25.5)
      const ev = fake.event('checkout.session.completed', { ...session })
      const first = await send(ev)
      assert.equal(first.status, 200, JSON.stringify(first.body))
      assert.deepEqual(first.body, { received: true, event_id: ev.id, outcome: 'applied' })
      assert.equal(await balance(account), 25.5 * USD)
      const again = await send(ev)
      assert.equal(again.status, 200)
      assert.equal(again.body.outcome, 'duplicate')
      const rows = await ledger(account)
      assert.deepEqual(
        rows.map((e) => [e.kind, e.amountMicros, e.reference]),
        [['topup', 25.5 * USD, pi]],
      )
      assert.equal(await balance(account), 25.5 * USD)
      assert.equal(await t.ctx.accounts.payments().eventProcessed(ev.id), true)
      // The balance view and the invoices show it.
      const key = await t.key(account)
      const bal = await t.client.call('getBalance', { key })
      assert.equal((bal.json as { balance_usd: number }).balance_usd, 25.5)
      const inv = await t.client.call('getInvoices', { query: { period: 'all' }, key })
      assert.equal(inv.status, 200, inv.text)
      assert.equal((inv.json as { summary: { top_ups_usd: number } }).summary.top_ups_usd, 25.5)
    })

    test('a Stripe top-up announces balance.topped_up once, in the same transaction', async () => {
      const { account, session, pi } = await paid(18)
      const sub = await t.ctx.accounts.webhooks().createSubscription({
        id: `whs_${Date.now()}`,
        accountId: account,
        url: 'https://hooks.example.com/erm3',
        events: ['balance.topped_up'],
        secretEnc: 'not-used-here',
        createdAt: Date.now(),
      })
      const ev = fake.event('checkout.session.completed', { ...session })
      await send(ev)
      await send(ev)
      await send(fake.event('checkout.session.async_payment_succeeded', { ...session }))
      const out = await t.ctx.accounts.webhooks().listDeliveries(account, sub.id, 10)
      assert.deepEqual(
        out.map((d) => [d.event, d.data.reference]),
        [['balance.topped_up', pi]],
      )
    })

    test('different events for the same payment intent credit once, in either order', async () => {
      // payment_intent.succeeded first (a no-op), then the session events.
      const a = await paid(40)
      const piEvent = fake.event('payment_intent.succeeded', {
        id: a.pi,
        object: 'payment_intent',
        amount: 4000,
        currency: 'usd',
        metadata: { erm3_account_id: a.account },
      })
      assert.equal((await send(piEvent)).body.outcome, 'applied')
      assert.equal(await balance(a.account), 0, 'payment_intent.succeeded must not credit')
      assert.equal(
        (await send(fake.event('checkout.session.completed', { ...a.session }))).body.outcome,
        'applied',
      )
      assert.equal(
        (await send(fake.event('checkout.session.async_payment_succeeded', { ...a.session }))).status,
        200,
      )
      assert.equal(await balance(a.account), 40 * USD)
      assert.equal((await ledger(a.account)).length, 1)

      // The other order: async_payment_succeeded delivered before checkout.session.completed.
      const b2 = await paid(15)
      const late = fake.event('checkout.session.completed', { ...b2.session })
      const early = fake.event('checkout.session.async_payment_succeeded', { ...b2.session })
      assert.equal((await send(early)).status, 200)
      assert.equal((await send(late)).status, 200)
      assert.equal((await send(piEvent)).body.outcome, 'duplicate')
      assert.equal(await balance(b2.account), 15 * USD)
      assert.equal((await ledger(b2.account)).length, 1)
    })

    test('an asynchronous payment: completed unpaid credits nothing, async_payment_succeeded credits', async () => {
      const account = await t.account(0)
      const c = await checkout(await t.key(account), 12)
      const unpaid = fake.complete(c.session_id, { paid: false })
      assert.equal(
        (await send(fake.event('checkout.session.completed', { ...unpaid }))).body.outcome,
        'applied',
      )
      assert.equal(await balance(account), 0)
      const settled = fake.complete(c.session_id)
      const ok = await send(fake.event('checkout.session.async_payment_succeeded', { ...settled }))
      assert.equal(ok.status, 200)
      assert.equal(await balance(account), 12 * USD)
    })

    test('a forged signature → 400 and nothing credited; the genuine delivery then credits', async () => {
      const { account, session } = await paid(30)
      const ev = fake.event('checkout.session.completed', { ...session })
      const forged = await send(ev, { secret: 'whsec_attacker_secret_000000000000' })
      assert.equal(forged.status, 400)
      assert.equal(forged.body.code, 'INVALID_REQUEST')
      const none = await send(ev, { signature: null })
      assert.equal(none.status, 400)
      const garbage = await send(ev, { signature: 't=1,v1=zz' })
      assert.equal(garbage.status, 400)
      // A body changed after signing.
      const tampered = fake.event(
        'checkout.session.completed',
        { ...session, amount_total: 9_999_900 },
        ev.id,
      )
      const goodSig = (await import('../helpers/fake-stripe.ts')).signStripePayload(
        JSON.stringify(ev, null, 2),
        WEBHOOK_SECRET,
        Math.floor(Date.now() / 1000),
      )
      assert.equal((await send(tampered, { signature: goodSig })).status, 400)
      assert.equal(await balance(account), 0)
      assert.deepEqual(await ledger(account), [])
      assert.equal(await t.ctx.accounts.payments().eventProcessed(ev.id), false)
      assert.equal((await send(ev)).body.outcome, 'applied')
      assert.equal(await balance(account), 30 * USD)
    })

    test('a stale timestamp beyond the 300 s tolerance is rejected; within it, accepted', async () => {
      const { account, session } = await paid(20)
      const ev = fake.event('checkout.session.completed', { ...session })
      const now = Math.floor(Date.now() / 1000)
      const stale = await send(ev, { timestampS: now - 301 })
      assert.equal(stale.status, 400)
      assert.match(String(stale.body.detail), /tolerance/i)
      assert.equal(await balance(account), 0)
      assert.equal((await send(ev, { timestampS: now - 200 })).status, 200)
      assert.equal(await balance(account), 20 * USD)
    })

    test('partial then full refund → negative entries totalling the refund, each once, in any order', async () => {
      const { account, session, pi } = await paid(25.5)
      await send(fake.event('checkout.session.completed', { ...session }))
      const charge = (refunded: number) => ({
        id: 'ch_1',
        object: 'charge',
        amount: 2550,
        amount_refunded: refunded,
        currency: 'usd',
        payment_intent: pi,
        refunded: refunded === 2550,
        metadata: { erm3_account_id: account },
      })
      const partial = fake.event('charge.refunded', charge(1000))
      assert.equal((await send(partial)).body.outcome, 'applied')
      assert.equal(await balance(account), 15.5 * USD)
      assert.equal((await send(partial)).body.outcome, 'duplicate')
      const full = fake.event('charge.refunded', charge(2550))
      assert.equal((await send(full)).status, 200)
      assert.equal(await balance(account), 0)
      // An older cumulative figure arriving late (another event id) changes nothing.
      assert.equal((await send(fake.event('charge.refunded', charge(1000)))).status, 200)
      const refunds = (await ledger(account)).filter((e) => e.kind === 'payment_refund')
      assert.deepEqual(
        refunds.map((e) => e.amountMicros),
        [-10 * USD, -15.5 * USD],
      )
      assert.equal((await t.ctx.accounts.payments().payment(pi))?.refundedMicros, 25.5 * USD)
      const inv = await t.client.call('getInvoices', { query: { period: 'all' }, key: await t.key(account) })
      assert.equal(inv.status, 200, inv.text)
      assert.deepEqual(
        (inv.json as { invoices: { kind: string }[] }).invoices.map((i) => i.kind),
        ['topup', 'payment_refund', 'payment_refund'],
      )
    })

    test('a dispute → one negative chargeback entry; the balance can go below zero; reinstated on a win', async () => {
      const { account, session, pi } = await paid(10)
      await send(fake.event('checkout.session.completed', { ...session }))
      // Spend some of it first: the chargeback then takes the balance below zero.
      const key = await t.key(account)
      const spent = await t.client.call('getMetrics', { params: { ticker: 'AAPL' }, key })
      assert.equal(spent.status, 200, spent.text)
      const dispute = {
        id: 'dp_1',
        object: 'dispute',
        amount: 1000,
        currency: 'usd',
        charge: 'ch_2',
        payment_intent: pi,
        status: 'needs_response',
        reason: 'fraudulent',
      }
      assert.equal((await send(fake.event('charge.dispute.created', dispute))).body.outcome, 'applied')
      assert.equal((await send(fake.event('charge.dispute.funds_withdrawn', dispute))).status, 200)
      const rows = await ledger(account)
      assert.deepEqual(
        rows.filter((e) => e.kind === 'chargeback').map((e) => e.amountMicros),
        [-10 * USD],
      )
      assert.ok((await balance(account)) < 0, 'balance below zero after the chargeback')
      // A negative balance refuses metered calls with 402.
      const refused = await t.client.call('getMetrics', {
        params: { ticker: 'AAPL' },
        key,
        headers: { 'cache-control': 'no-cache' },
      })
      assert.equal(refused.status, 402)
      const p = refused.json as { top_up_url: string; top_up_method?: string }
      assert.equal(p.top_up_url, 'http://erm3.test/billing/checkout')
      assert.equal(p.top_up_method, 'POST')
      await send(fake.event('charge.dispute.funds_reinstated', { ...dispute, status: 'won' }))
      await send(fake.event('charge.dispute.funds_reinstated', { ...dispute, status: 'won' }))
      assert.equal(await balance(account), 10 * USD - 1000)
      // Cached balances agree with the ledger, new kinds included.
      assert.equal((await t.ctx.accounts.reconcile(0)).correctedBalances, 0)
    })

    test('a refund of a payment erm3 never credited is ignored, or retried (503) when it is an erm3 payment', async () => {
      const foreign = fake.event('charge.refunded', {
        id: 'ch_x',
        object: 'charge',
        amount: 500,
        amount_refunded: 500,
        currency: 'usd',
        payment_intent: 'pi_not_ours',
        metadata: {},
      })
      assert.equal((await send(foreign)).body.outcome, 'ignored')
      const account = await t.account(0)
      const ours = fake.event('charge.refunded', {
        id: 'ch_y',
        object: 'charge',
        amount: 1500,
        amount_refunded: 1500,
        currency: 'usd',
        payment_intent: 'pi_not_credited_yet',
        metadata: { erm3_account_id: account },
      })
      assert.equal((await send(ours)).status, 503)
      assert.equal(await t.ctx.accounts.payments().eventProcessed(ours.id), false)
    })

    test('events erm3 does not use are acknowledged (2xx) and change nothing', async () => {
      const r = await send(fake.event('customer.created', { id: 'cus_1', object: 'customer' }))
      assert.equal(r.status, 200)
      assert.equal(r.body.outcome, 'ignored')
    })

    test('a crash inside the transaction (after the ledger insert, before commit): nothing kept; redelivery credits once', async () => {
      const { account, session } = await paid(50)
      const ev = fake.event('checkout.session.completed', { ...session })
      const fault = await injectLedgerFault(t)
      try {
        const r = await send(ev)
        assert.equal(r.status, 500, JSON.stringify(r.body))
      } finally {
        await fault.remove()
      }
      assert.equal(await balance(account), 0)
      assert.deepEqual(await ledger(account), [])
      assert.equal(await t.ctx.accounts.payments().eventProcessed(ev.id), false)
      assert.equal((await send(ev)).body.outcome, 'applied')
      assert.equal((await send(ev)).body.outcome, 'duplicate')
      assert.equal(await balance(account), 50 * USD)
      assert.equal((await ledger(account)).length, 1)
    })

    test('a crash after the commit, before the answer: Stripe redelivers, credited once', async () => {
      const { account, session } = await paid(35)
      const ev = fake.event('checkout.session.completed', { ...session })
      const accounts = t.ctx.accounts
      const original = accounts.payments.bind(accounts)
      let crashes = 1
      accounts.payments = (): PaymentStore => {
        const inner = original()
        return {
          ...inner,
          async applyEvent(e, now) {
            const r = await inner.applyEvent(e, now)
            if (crashes-- > 0) throw new Error('process died before answering')
            return r
          },
        }
      }
      try {
        assert.equal((await send(ev)).status, 500)
        assert.equal(await balance(account), 35 * USD)
        const again = await send(ev)
        assert.equal(again.status, 200)
        assert.equal(again.body.outcome, 'duplicate')
      } finally {
        accounts.payments = original
      }
      assert.equal(await balance(account), 35 * USD)
      assert.equal((await ledger(account)).length, 1)
    })

    test('concurrent deliveries of one event and of two events of one payment credit once', async () => {
      const { account, session } = await paid(22)
      const ev = fake.event('checkout.session.completed', { ...session })
      const other = fake.event('checkout.session.async_payment_succeeded', { ...session })
      const rs = await Promise.all([send(ev), send(ev), send(other), send(ev), send(other)])
      assert.deepEqual(
        rs.map((r) => r.status),
        [200, 200, 200, 200, 200],
      )
      assert.equal(await balance(account), 22 * USD)
      assert.equal((await ledger(account)).length, 1)
    })
  })
}

describe('Stripe not configured', () => {
  let t: TestApp
  before(async () => {
    t = await startTestApp()
  })
  after(() => t?.close())

  test('checkout and webhook answer 503 with a clear message; the 402 points at the operator page', async () => {
    const account = await t.account(0)
    const key = await t.key(account)
    const r = await t.client.call('createCheckout', { body: { amount_usd: 20 }, key })
    assert.equal(r.status, 503, r.text)
    const p = r.json as { code: string; detail: string }
    assert.equal(p.code, 'UNAVAILABLE')
    assert.match(p.detail, /STRIPE_SECRET_KEY/)
    const w = await t.app.fastify.inject({
      method: 'POST',
      url: '/billing/stripe/webhook',
      headers: { 'content-type': 'application/json', 'stripe-signature': 't=1,v1=00' },
      payload: JSON.stringify({ id: 'evt_1', type: 'checkout.session.completed', data: { object: {} } }),
    })
    assert.equal(w.statusCode, 503, w.body)
    const poor = await t.client.call('getMetrics', { params: { ticker: 'AAPL' }, key })
    assert.equal(poor.status, 402)
    const q = poor.json as { top_up_url: string; top_up_method?: string }
    assert.equal(q.top_up_url, 'http://erm3.test/docs/billing')
    assert.equal(q.top_up_method, undefined)
  })
})

/**
 * Makes the account database fail every ledger insert until removed: the payment transaction
 * then dies after writing its processed-event row and inside its ledger statement, as a crash
 * before commit would leave it (nothing committed).
 */
async function injectLedgerFault(t: TestApp): Promise<{ remove(): Promise<void> }> {
  if (t.ctx.accounts.backend === 'sqlite') {
    const db = new Database(join(t.home, 'erm3.db'))
    db.pragma('busy_timeout = 5000')
    db.exec(
      `CREATE TRIGGER inject_crash AFTER INSERT ON ledger BEGIN SELECT RAISE(ABORT, 'injected crash'); END`,
    )
    return {
      async remove() {
        db.exec('DROP TRIGGER inject_crash')
        db.close()
      },
    }
  }
  const { detail } = await t.ctx.accounts.health()
  const schema = /schema (t_[0-9a-f]+)/.exec(detail)?.[1]
  assert.ok(schema, `schema not found in ${detail}`)
  const c = new pg.Client({ connectionString: process.env.DATABASE_URL })
  await c.connect()
  await c.query(`CREATE FUNCTION ${schema}.inject_crash() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN RAISE EXCEPTION 'injected crash'; END $$`)
  await c.query(
    `CREATE TRIGGER inject_crash AFTER INSERT ON ${schema}.ledger FOR EACH ROW EXECUTE FUNCTION ${schema}.inject_crash()`,
  )
  return {
    async remove() {
      await c.query(`DROP TRIGGER inject_crash ON ${schema}.ledger`)
      await c.query(`DROP FUNCTION ${schema}.inject_crash()`)
      await c.end()
    },
  }
}

/**
 * Migration 4 on a database that already has money in it: the ledger keeps every row, stays
 * append-only with its indexes, and its CHECKs let only debit, payment_refund and chargeback be
 * negative (the only ways below zero).
 */
for (const db of ['sqlite', 'postgres'] as const) {
  const skip = db === 'postgres' ? (backendsAvailable.postgres ?? undefined) : undefined
  describe(`migration 4 on an existing ${db} ledger`, { skip }, () => {
    test('rows kept, append-only, new kinds negative only, old kinds positive only', async () => {
      const before = MIGRATIONS.filter((m) => m.version < 4)
      const rows = [
        ['led_1', 'acct_m', 'topup', 5_000_000, 'ref-1', 1],
        ['led_2', 'acct_m', 'debit', -1_000, null, 2],
      ] as const
      let store: AccountStore
      let raw: { exec(sql: string): Promise<void>; close(): Promise<void> }
      if (db === 'sqlite') {
        const dir = mkdtempSync(join(tmpdir(), 'erm3-m4-'))
        const file = join(dir, 'erm3.db')
        const d = new Database(file)
        d.exec(SCHEMA_MIGRATIONS_SQLITE)
        for (const m of before) {
          for (const sql of m.sqlite) d.exec(sql)
          d.prepare('INSERT INTO schema_migrations VALUES (?, ?, 0)').run(m.version, m.name)
        }
        d.prepare(
          "INSERT INTO accounts (id, email, kind, created_at, balance_micros) VALUES ('acct_m', NULL, 'user', 0, 4999000)",
        ).run()
        for (const r of rows)
          d.prepare(
            'INSERT INTO ledger (id, account_id, kind, amount_micros, reference, created_at) VALUES (?, ?, ?, ?, ?, ?)',
          ).run(...r)
        d.close()
        store = createSqliteAccountStore(file)
        raw = {
          exec: async (sql) => {
            const c = new Database(file)
            try {
              c.exec(sql)
            } finally {
              c.close()
            }
          },
          close: async () => rmSync(dir, { recursive: true, force: true }),
        }
      } else {
        const url = process.env.DATABASE_URL as string
        const schema = `t_m4_${randomBytes(4).toString('hex')}`
        const c = new pg.Client({ connectionString: url, options: `-c search_path=${schema}` })
        await c.connect()
        await c.query(`CREATE SCHEMA ${schema}`)
        await c.query(SCHEMA_MIGRATIONS_POSTGRES)
        for (const m of before) {
          for (const sql of m.postgres) await c.query(sql)
          await c.query('INSERT INTO schema_migrations VALUES ($1, $2, 0)', [m.version, m.name])
        }
        await c.query(
          "INSERT INTO accounts (id, email, kind, created_at, balance_micros) VALUES ('acct_m', NULL, 'user', 0, 4999000)",
        )
        for (const r of rows)
          await c.query(
            'INSERT INTO ledger (id, account_id, kind, amount_micros, reference, created_at) VALUES ($1, $2, $3, $4, $5, $6)',
            [...r],
          )
        store = createPostgresAccountStore(url, { schema })
        raw = {
          exec: async (sql) => {
            await c.query(sql)
          },
          close: async () => {
            await c.query(`DROP SCHEMA ${schema} CASCADE`)
            await c.end()
          },
        }
      }
      try {
        await store.migrate()
        const kept = await store.entries('acct_m', { from: 0, to: 10, limit: 10 })
        assert.deepEqual(
          kept.map((e) => [e.id, e.kind, e.amountMicros, e.reference]),
          [
            ['led_1', 'topup', 5_000_000, 'ref-1'],
            ['led_2', 'debit', -1_000, null],
          ],
        )
        // The unique reference index survived: a repeated credit is a duplicate.
        const again = await store.credit('acct_m', { kind: 'topup', amountMicros: 1, reference: 'ref-1' }, 3)
        assert.equal(again.duplicate, true)
        await assert.rejects(
          raw.exec("UPDATE ledger SET amount_micros = 1 WHERE id = 'led_1'"),
          /append-only/,
        )
        await assert.rejects(raw.exec("DELETE FROM ledger WHERE id = 'led_1'"), /append-only/)
        const insert = (id: string, kind: string, amount: number) =>
          raw.exec(
            `INSERT INTO ledger (id, account_id, kind, amount_micros, created_at) VALUES ('${id}', 'acct_m', '${kind}', ${amount}, 4)`,
          )
        await insert('led_3', 'payment_refund', -10)
        await insert('led_4', 'chargeback', -10)
        for (const [kind, amount] of [
          ['payment_refund', 10],
          ['chargeback', 10],
          ['topup', -10],
          ['credit', -10],
          ['refund', -10],
          ['debit', 10],
          ['bonus', 10],
        ] as const)
          await assert.rejects(
            insert(`led_x_${kind}_${amount}`, kind, amount),
            /constraint|CHECK/i,
            `${kind} ${amount}`,
          )
        assert.equal((await store.health()).ok, true)
      } finally {
        await store.close()
        await raw.close()
      }
    })
  })
}
