import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { parseApiKey } from '../../src/contract/api-key.ts'
import { embeddedDemoEnv } from '../../src/main/start.ts'
import { loadConfig } from '../../src/platform/config.ts'
import { grantSignupCredit } from '../../src/services/identity/signup-credit.ts'
import { backendsAvailable, type DbKind, startTestApp, type TestApp } from '../helpers/test-app.ts'

/**
 * The first hour of a dashboard sign-up (docs/dashboard.md): the operator's sign-up credit, granted
 * once per account as a ledger entry (on SQLite and PostgreSQL), what /auth/session says is
 * configured, the session's one dashboard key, and the landing page's way to the dashboard.
 */

const CREDIT_USD = '2.5'
const CREDIT_MICROS = 2_500_000

for (const db of ['sqlite', 'postgres'] as DbKind[]) {
  const skip = db === 'postgres' ? (backendsAvailable.postgres ?? false) : false
  describe(`sign-up on ${db}`, { skip }, () => {
    let t: TestApp
    before(async () => {
      t = await startTestApp({ db, env: { ERM3_SIGNUP_CREDIT_USD: CREDIT_USD } })
    })
    after(() => t?.close())

    /** Signs in by posting the mailed link's token (a program's way): the session. */
    async function signIn(email: string) {
      await t.client.call('login', { body: { email } })
      const mail = t.outbox().filter((m) => m.to === email)
      const url = mail.at(-1)?.text.match(/https?:\/\/\S+/)?.[0]
      assert.ok(url, `a link was mailed to ${email}`)
      const token = new URL(url).searchParams.get('token') as string
      return (await t.client.call('confirmLogin', { body: { token } })).ok()
    }

    const ledger = async (accountId: string) =>
      t.ctx.accounts.entries(accountId, { from: 0, to: Date.now() + 86_400_000, limit: 100 })

    test('a new account gets the sign-up credit once: one ledger entry, an exact balance', async () => {
      const email = `new-${db}-${Date.now()}@example.com`
      const s = await signIn(email)
      await signIn(email)
      const entries = await ledger(s.account_id)
      assert.deepEqual(
        entries.map((e) => [e.kind, e.amountMicros, e.reference]),
        [['credit', CREDIT_MICROS, 'signup-credit']],
      )
      assert.equal((await t.ctx.accounts.balance(s.account_id)).balanceMicros, 2.5 * 1_000_000)
      // The dashboard's own view of it: the balance in USD.
      const k = (await t.client.call('dashboardKey', { key: s.session_jwt })).ok()
      assert.equal((await t.client.call('getBalance', { key: k.api_key })).ok().balance_usd, 2.5)
    })

    test('retries and racing grants add it once', async () => {
      const id = await t.account(0)
      const granted = await Promise.all(Array.from({ length: 8 }, () => grantSignupCredit(t.ctx, id)))
      assert.deepEqual(
        granted.toSorted((a, b) => b - a),
        [CREDIT_MICROS, 0, 0, 0, 0, 0, 0, 0],
      )
      assert.equal((await ledger(id)).length, 1)
      assert.equal((await t.ctx.accounts.balance(id)).balanceMicros, CREDIT_MICROS)
    })

    test('an account the operator created gets none when it signs in', async () => {
      const email = `operator-made-${db}@example.com`
      const id = await t.account(0, email)
      assert.equal((await signIn(email)).account_id, id)
      assert.deepEqual(await ledger(id), [])
    })

    test('the session says what is configured: no Stripe, no Plaid here', async () => {
      const s = await signIn(`features-${db}@example.com`)
      const me = (await t.client.call('getSession', { key: s.session_jwt })).ok()
      assert.equal(me.account_id, s.account_id)
      assert.deepEqual(me.features, { card_top_ups: false, brokerage: false })
    })

    test('the dashboard key: the same key on every ask, revoked by hand → a fresh one, signed out → revoked', async () => {
      const s = await signIn(`dash-${db}@example.com`)
      const ask = () => t.client.call('dashboardKey', { key: s.session_jwt })
      const first = (await ask()).ok()
      assert.deepEqual(parseApiKey(first.api_key), { kind: 'user', environment: 'live' })
      const again = await Promise.all([ask(), ask(), ask()])
      for (const a of again) {
        assert.equal(a.ok().api_key, first.api_key)
        assert.equal(a.ok().key_id, first.key_id)
      }
      const keys = await t.ctx.accounts.listKeys(s.account_id)
      assert.equal(keys.length, 1, 'asked four times, one key')
      assert.equal(keys[0]?.name, 'dashboard (this browser session)')
      // It expires with the session (12 hours).
      const k0 = keys[0]
      assert.ok(k0?.expiresAt && Math.abs(k0.expiresAt - k0.createdAt - 12 * 3600_000) < 5000)
      const used = await t.client.call('getMetrics', { key: first.api_key, params: { ticker: 'AAPL' } })
      assert.equal(used.status, 200, used.text)
      // Revoked on the keys page: the next ask answers another key, which works.
      await t.ctx.accounts.revokeKey(first.key_id, Date.now())
      const fresh = (await ask()).ok()
      assert.notEqual(fresh.api_key, first.api_key)
      assert.equal((await t.client.call('getBalance', { key: fresh.api_key })).status, 200)
      // Another session of the account has its own key.
      const other = await signIn(`dash-${db}@example.com`)
      const otherKey = (await t.client.call('dashboardKey', { key: other.session_jwt })).ok()
      assert.notEqual(otherKey.api_key, fresh.api_key)
      // Signing out revokes this session's key only; signing out everywhere, the other one too.
      assert.equal((await t.client.call('logout', { key: s.session_jwt })).status, 204)
      assert.equal((await t.client.call('getBalance', { key: fresh.api_key })).status, 401)
      assert.equal((await t.client.call('getBalance', { key: otherKey.api_key })).status, 200)
      assert.equal((await t.client.call('logoutAll', { key: other.session_jwt })).status, 200)
      assert.equal((await t.client.call('getBalance', { key: otherKey.api_key })).status, 401)
    })

    test('the landing page links the dashboard and names the credit', async () => {
      const r = await t.transport({ method: 'GET', url: '/', headers: { accept: 'text/html' } })
      assert.equal(r.status, 200)
      assert.match(r.body, /<a href="\/app">Open the dashboard<\/a>/)
      assert.match(r.body, /a new account starts with 2\.50 USD of credit/)
    })
  })
}

describe('the sign-up credit setting', () => {
  test('ERM3_SIGNUP_CREDIT_USD: 0 by default, exact micro-dollars, bad values refused', () => {
    assert.equal(loadConfig({}).server.signupCreditMicros, 0)
    assert.equal(loadConfig({ ERM3_SIGNUP_CREDIT_USD: '0.000001' }).server.signupCreditMicros, 1)
    assert.equal(loadConfig({ ERM3_SIGNUP_CREDIT_USD: '12.34' }).server.signupCreditMicros, 12_340_000)
    for (const bad of ['-1', 'five', '1.2345678', '1001', '1e3'])
      assert.throws(
        () => loadConfig({ ERM3_SIGNUP_CREDIT_USD: bad }),
        (e: Error) => /ERM3_SIGNUP_CREDIT_USD must be a number of USD in 0\.\.1000/.test(e.message),
        bad,
      )
  })

  test('on for the embedded demo (erm3 start, the synthetic market, no DATABASE_URL), off otherwise', () => {
    const synthetic = { source: { kind: 'synthetic', seed: 42 } } as never
    const imported = { source: { kind: 'imported' } } as never
    assert.equal(embeddedDemoEnv({}, synthetic).ERM3_SIGNUP_CREDIT_USD, '5')
    assert.equal(embeddedDemoEnv({ ERM3_SIGNUP_CREDIT_USD: '0' }, synthetic).ERM3_SIGNUP_CREDIT_USD, '0')
    assert.equal(
      embeddedDemoEnv({ DATABASE_URL: 'postgres://x@127.0.0.1/db' }, synthetic).ERM3_SIGNUP_CREDIT_USD,
      undefined,
    )
    assert.equal(embeddedDemoEnv({}, imported).ERM3_SIGNUP_CREDIT_USD, undefined)
  })
})
