/**
 * Brokerage holdings through Plaid, against a loopback fake of the Plaid API with the
 * real `plaid` SDK, on both backend pairs: linking (session), the stored token (ciphertext, key
 * rotation), GET /plaid/holdings (values, the risk join, the snapshot, billing, caching), every
 * refusal (anonymous account, another account, re-link, Plaid down, unconfigured), and no secret in
 * the server's logs. Expectations are computed here, never imported from src/services.
 */
import assert from 'node:assert/strict'
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import Database from 'better-sqlite3'
import { pino } from 'pino'
import { loadConfig } from '../../src/platform/config.ts'
import { signSession } from '../../src/services/identity/session.ts'
import { createSqliteAccountStore } from '../../src/store/accounts/sqlite.ts'
import { runErm3 } from '../helpers/cli.ts'
import { type FakePlaid, type FakePosition, startFakePlaid } from '../helpers/fake-plaid.ts'
import { modelledTickers } from '../helpers/portfolio-math.ts'
import { BACKEND_PAIRS, sessionApi, startTestApp, type TestApp } from '../helpers/test-app.ts'
import { mcpTransport } from '../mcp/clients.ts'

type Json = Record<string, unknown>
const USD = 1_000_000

/** AES-256-GCM open, written from the documented layout base64url(iv 12 | tag 16 | body), AAD = item id. */
function openIndependently(key: Buffer, aad: string, sealed: string): string | null {
  const raw = Buffer.from(sealed, 'base64url')
  try {
    const d = createDecipheriv('aes-256-gcm', key, raw.subarray(0, 12))
    d.setAAD(Buffer.from(aad))
    d.setAuthTag(raw.subarray(12, 28))
    return Buffer.concat([d.update(raw.subarray(28)), d.final()]).toString('utf8')
  } catch {
    return null
  }
}

/** Every line the Plaid suites' servers logged (checked for secrets at the end). */
const logLines: string[] = []
const memoryLogger = () => pino({ level: 'debug' }, { write: (s: string) => void logLines.push(s) })
/** Every secret the suites used: none may appear in a log line. */
const secrets = new Set<string>()
const fakes: FakePlaid[] = []

const K1 = randomBytes(32)
const K2 = randomBytes(32)
const keysEnv = (...ks: [string, Buffer][]) => ks.map(([id, k]) => `${id}:${k.toString('base64')}`).join(',')
secrets.add(K1.toString('base64'))
secrets.add(K2.toString('base64'))

function plaidEnv(fake: FakePlaid, keys = keysEnv(['k1', K1])): Record<string, string> {
  return {
    PLAID_CLIENT_ID: fake.clientId,
    PLAID_SECRET: fake.secret,
    PLAID_ENV: 'sandbox',
    PLAID_API_BASE: fake.url,
    ERM3_PLAID_TOKEN_KEYS: keys,
    PLAID_TIMEOUT_MS: '800',
  }
}

for (const b of BACKEND_PAIRS) {
  describe(`Plaid holdings: ${b.name}`, { skip: b.skip ?? undefined }, () => {
    let t: TestApp
    let fake: FakePlaid
    let tickers: string[]
    let n = 0
    before(async () => {
      fake = await startFakePlaid()
      fakes.push(fake)
      secrets.add(fake.secret)
      t = await startTestApp({ db: b.db, limits: b.limits, env: plaidEnv(fake), log: memoryLogger() })
      tickers = (await modelledTickers(t.ctx.models.store('live'))).slice(0, 3)
      assert.equal(tickers.length, 3)
      const [a, c, d] = tickers as [string, string, string]
      const book: FakePosition[] = [
        { account: 0, ticker: a, type: 'equity', name: `${a} Inc`, quantity: 10, price: 101.25 },
        { account: 0, ticker: c, type: 'equity', name: `${c} Corp`, quantity: 7.5, price: 40 },
        { account: 1, ticker: a, type: 'equity', name: `${a} Inc`, quantity: 3, price: 101.25 },
        {
          account: 1,
          ticker: d,
          type: 'equity',
          name: `${d} Co`,
          quantity: 12,
          price: 12.5,
          costBasis: null,
        },
        { account: 0, ticker: 'CUR:USD', type: 'cash', name: 'U S Dollar', quantity: 1500, price: 1 },
        {
          account: 1,
          ticker: 'VTI',
          type: 'etf',
          name: 'Vanguard Total Stock Market ETF',
          quantity: 4,
          price: 220,
        },
        { account: 1, ticker: 'ZZZQX', type: 'equity', name: 'Unknown Holdings', quantity: 2, price: 9 },
        {
          account: 1,
          ticker: 'SPY',
          type: 'equity',
          name: 'SPDR S&P 500 ETF Trust',
          quantity: 1,
          price: 470,
        },
        {
          account: 0,
          ticker: 'VFIAX',
          type: 'mutual fund',
          name: 'Vanguard 500 Index',
          quantity: 1,
          price: 400,
        },
        { account: 0, ticker: null, type: 'equity', name: 'Private placement', quantity: 1, price: 50 },
      ]
      fake.portfolio = book
    })
    after(async () => {
      for (const i of fake?.items.values() ?? []) secrets.add(i.accessToken)
      for (const tok of fake?.removed ?? []) secrets.add(tok)
      await t?.close()
      await fake?.close()
    })

    async function user(balanceUsd = 1) {
      const email = `plaid${++n}-${randomBytes(3).toString('hex')}@example.com`
      const id = await t.account(balanceUsd, email)
      return { id, email }
    }
    const api = sessionApi(() => t)
    const holdings = async (key: string) => {
      const res = await t.app.fastify.inject({
        method: 'GET',
        url: '/plaid/holdings',
        headers: { authorization: `Bearer ${key}` },
      })
      return {
        status: res.statusCode,
        text: res.body,
        json: JSON.parse(res.body) as Json,
        headers: res.headers,
      }
    }
    const debits = async (account: string) =>
      (await t.ctx.accounts.entries(account, { from: 0, to: Number.MAX_SAFE_INTEGER, limit: 1000 })).filter(
        (e) => e.kind === 'debit',
      )
    const balance = async (account: string) => (await t.ctx.accounts.balance(account)).balanceMicros
    /** A signed-up user with one linked item (through the API), a live key, and the fake's item. */
    async function linked(balanceUsd = 1) {
      const who = await user(balanceUsd)
      const r = await api(who, 'POST', '/plaid/exchange', {
        public_token: fake.publicToken(),
        institution_id: 'ins_115616',
        institution_name: 'Vanguard',
      })
      assert.equal(r.status, 201, r.text)
      const item = r.json as { id: string; plaid_item_id: string }
      const fi = fake.itemByItemId(item.plaid_item_id)
      assert.ok(fi)
      secrets.add(fi.accessToken)
      return { who, item, fi, key: await t.key(who.id) }
    }

    test('link token → exchange → list: tokens never shown, requests authenticated, audit logged', async () => {
      const who = await user()
      const lt = await api(who, 'POST', '/plaid/link-token', {})
      assert.equal(lt.status, 201, lt.text)
      assert.match(String(lt.json.link_token), /^link-sandbox-/)
      assert.ok(!Number.isNaN(Date.parse(String(lt.json.expiration))))
      assert.equal(lt.json.update_mode, false)
      const req = fake.requests.at(-1)
      assert.equal(req?.path, '/link/token/create')
      assert.equal(req?.headers['plaid-client-id'], fake.clientId)
      assert.equal(req?.headers['plaid-secret'], fake.secret)
      assert.deepEqual(req?.body.user, { client_user_id: who.id })
      assert.deepEqual(req?.body.products, ['investments'])

      const pt = fake.publicToken()
      const ex = await api(who, 'POST', '/plaid/exchange', { public_token: pt, institution_name: 'Vanguard' })
      assert.equal(ex.status, 201, ex.text)
      const fi = fake.itemByItemId(String(ex.json.plaid_item_id))
      assert.ok(fi, 'the stored item is the one Plaid created')
      secrets.add(fi.accessToken)
      assert.match(String(ex.json.id), /^pli_/)
      assert.equal(ex.json.institution_name, 'Vanguard')
      assert.ok(!ex.text.includes(fi.accessToken))
      assert.ok(!('access_token' in ex.json))
      // A public token is single use (Plaid says INVALID_PUBLIC_TOKEN): a 400, not a 500.
      const again = await api(who, 'POST', '/plaid/exchange', { public_token: pt })
      assert.equal(again.status, 400, again.text)
      assert.equal(again.json.code, 'INVALID_REQUEST')

      const list = await api(who, 'GET', '/plaid/items')
      assert.equal(list.status, 200, list.text)
      const items = list.json.items as Json[]
      assert.deepEqual(
        items.map((i) => i.id),
        [ex.json.id],
      )
      assert.ok(!list.text.includes(fi.accessToken))
      const audit = await t.ctx.accounts
        .selfService()
        .audit(who.id, { from: 0, to: Date.now() + 1000, limit: 10 })
      assert.ok(
        audit.some((a) => a.action === 'plaid.linked' && a.target === ex.json.id && a.actorId === who.email),
      )
    })

    test('the stored token is AES-256-GCM ciphertext that opens only with its key and its row', async () => {
      const { who, item, fi } = await linked()
      const rec = await t.ctx.accounts.plaid().getItem(who.id, item.id)
      assert.ok(rec)
      let row: { token_ciphertext: string; token_key_id: string }
      if (b.db === 'sqlite') {
        const db = new Database(join(t.home, 'erm3.db'), { readonly: true })
        row = db
          .prepare('SELECT token_ciphertext, token_key_id FROM plaid_items WHERE id = ?')
          .get(item.id) as typeof row
        db.close()
      } else row = { token_ciphertext: rec.tokenCiphertext, token_key_id: rec.tokenKeyId }
      assert.equal(row.token_key_id, 'k1')
      assert.ok(!row.token_ciphertext.includes(fi.accessToken))
      assert.ok(!row.token_ciphertext.includes('access-sandbox'))
      assert.equal(openIndependently(K1, item.id, row.token_ciphertext), fi.accessToken)
      assert.equal(openIndependently(K2, item.id, row.token_ciphertext), null)
      assert.equal(openIndependently(K1, 'pli_other', row.token_ciphertext), null)
    })

    test('holdings: values, the risk join (= GET /metrics), the snapshot weights, 0.02 per call, never cached', async () => {
      const { who, item, key } = await linked()
      const before = await balance(who.id)
      const r = await holdings(key)
      assert.equal(r.status, 200, r.text)
      const body = r.json as {
        items: { id: string; accounts: Json[] }[]
        securities: Json[]
        positions: Json[]
        covered_count: number
        snapshot: { snapshot: { positions: { ticker: string; weight: number }[] } } | null
        snapshot_unavailable_reason: string | null
        _agent: Json
        _metadata: Json
      }
      assert.equal(body.items.length, 1)
      assert.equal(body.items[0]?.id, item.id)
      const accounts = body.items[0]?.accounts as {
        name: string
        type: string
        subtype: string
        balances: Json
      }[]
      assert.deepEqual(
        accounts.map((a) => [a.name, a.type, a.subtype]),
        [
          ['Plaid IRA', 'investment', 'ira'],
          ['Plaid Brokerage', 'investment', 'brokerage'],
        ],
      )
      assert.equal(typeof accounts[0]?.balances.current, 'number')
      // Positions: one per Plaid holding, values as the brokerage reports them.
      assert.equal(body.positions.length, fake.portfolio.length)
      for (const [i, p] of fake.portfolio.entries()) {
        const out = body.positions[i] as Json
        assert.equal(out.ticker, p.ticker === null ? null : p.ticker)
        assert.equal(out.quantity, p.quantity)
        assert.equal(out.institution_price, p.price)
        assert.equal(out.institution_value, Math.round(p.quantity * p.price * 100) / 100)
        assert.equal(out.currency, 'USD')
        assert.equal(out.item_id, item.id)
      }
      const byTicker = (tk: string | null, type?: string) =>
        body.positions.find(
          (x) => x.ticker === tk && (type === undefined || x.security_type === type),
        ) as Json
      // The risk join: exactly the fields of GET /metrics/{ticker} (read with another account's key).
      const reader = await t.key(await t.account(1))
      for (const tk of tickers) {
        const m = await t.app.fastify.inject({
          url: `/metrics/${tk}`,
          headers: { authorization: `Bearer ${reader}` },
        })
        assert.equal(m.statusCode, 200, m.body)
        const { _metadata, _agent, ...fields } = JSON.parse(m.body) as Json
        for (const pos of body.positions.filter((x) => x.ticker === tk)) {
          assert.deepEqual(pos.risk, fields)
          assert.equal(pos.risk_unavailable_reason, null)
        }
      }
      assert.equal(body.covered_count, 4)
      const reasons: [string | null, string, RegExp][] = [
        ['CUR:USD', 'cash', /cash/],
        ['VTI', 'etf', /not a common stock/],
        ['VFIAX', 'mutual fund', /not a common stock/],
        ['ZZZQX', 'equity', /not in the erm3 universe/],
        ['SPY', 'equity', /ETF in the erm3 universe/],
        [null, 'equity', /no ticker/],
      ]
      for (const [tk, type, why] of reasons) {
        const pos = byTicker(tk, type)
        assert.equal(pos.risk, null, String(tk))
        assert.match(String(pos.risk_unavailable_reason), why)
      }
      // The snapshot of the covered positions, weighted by institution_value (same ticker summed).
      const value = new Map<string, number>()
      for (const p of fake.portfolio)
        if (p.ticker && tickers.includes(p.ticker))
          value.set(p.ticker, (value.get(p.ticker) ?? 0) + Math.round(p.quantity * p.price * 100) / 100)
      const total = [...value.values()].reduce((a, x) => a + x, 0)
      assert.ok(body.snapshot, String(body.snapshot_unavailable_reason))
      const weights = body.snapshot.snapshot.positions
      assert.equal(weights.length, value.size)
      for (const w of weights)
        assert.ok(Math.abs(w.weight - (value.get(w.ticker) as number) / total) < 1e-12, w.ticker)
      // Metered: 0.02, BYPASS, lineage; a repeat is charged again (never served from the cache).
      assert.equal(body._agent.cost_usd, 0.02)
      assert.equal(body._agent.cache_status, 'BYPASS')
      // Confidence: the share of the book's value the risk figures cover.
      const bookValue = fake.portfolio.reduce((a, p) => a + Math.round(p.quantity * p.price * 100) / 100, 0)
      const conf = (body._agent.confidence as { overall: number }).overall
      assert.ok(Math.abs(conf - total / bookValue) < 1e-12, String(conf))
      assert.equal(r.headers['x-api-cost-usd'], '0.02')
      assert.equal(r.headers['cache-control'], 'private, no-store')
      assert.equal(typeof r.headers['x-data-as-of'], 'string')
      assert.equal(typeof body._metadata.data_as_of, 'string')
      const again = await holdings(key)
      assert.equal(again.status, 200)
      assert.equal((again.json._agent as Json).cache_status, 'BYPASS')
      const d = await debits(who.id)
      assert.deepEqual(
        d.map((e) => [e.amountMicros, e.capability]),
        [
          [-0.02 * USD, 'plaid_holdings'],
          [-0.02 * USD, 'plaid_holdings'],
        ],
      )
      assert.equal(await balance(who.id), before - 0.04 * USD)
    })

    test('a test key gets simulated holdings on the sandbox model, free: Plaid is never called', async () => {
      const { who } = await linked()
      const other = await linked()
      const testKey = await t.key(who.id, { env: 'test' })
      const before = await balance(who.id)
      const calls = fake.requests.length
      const r = await holdings(testKey)
      assert.equal(r.status, 200, r.text)
      assert.equal(r.headers['x-environment'], 'test')
      assert.equal((r.json._agent as Json).cost_usd, 0)
      assert.equal(fake.requests.length, calls, 'no request reached Plaid')
      // Not the linked Vanguard item: one simulated item, marked as such.
      const items = r.json.items as Json[]
      assert.equal(items.length, 1)
      assert.equal(items[0]?.id, 'pli_sandbox')
      assert.match(String(items[0]?.institution_name), /sandbox/)
      const positions = r.json.positions as Json[]
      assert.ok(!positions.some((x) => x.ticker === 'VTI' || x.ticker === 'VFIAX'), 'no real position')
      // Covered stocks carry the sandbox model's risk, exactly GET /metrics with a test key.
      const covered = positions.filter((x) => x.risk !== null)
      assert.ok(covered.length >= 1)
      const reader = await t.key(await t.account(1), { env: 'test' })
      for (const pos of covered) {
        const m = await t.app.fastify.inject({
          url: `/metrics/${pos.ticker}`,
          headers: { authorization: `Bearer ${reader}` },
        })
        const { _metadata, _agent, ...fields } = JSON.parse(m.body) as Json
        assert.deepEqual(pos.risk, fields)
      }
      assert.ok(positions.some((x) => x.ticker === 'CUR:USD' && x.risk === null))
      assert.notEqual(r.json.snapshot, null)
      // Deterministic: the same answer again (and for another account).
      const again = await holdings(await t.key(other.who.id, { env: 'test' }))
      assert.deepEqual(again.json.positions, r.json.positions)
      assert.equal(fake.requests.length, calls, 'no request reached Plaid')
      assert.equal(await balance(who.id), before)
      assert.equal((await debits(who.id)).length, 0)
    })

    test('an anonymous account (provision-free) → 403 ACCOUNT_REQUIRED, nothing charged', async () => {
      const res = await t.app.fastify.inject({ method: 'POST', url: '/auth/provision-free', payload: {} })
      assert.equal(res.statusCode, 201, res.body)
      const { api_key, account_id } = JSON.parse(res.body) as { api_key: string; account_id: string }
      const before = await balance(account_id)
      const r = await holdings(api_key)
      assert.equal(r.status, 403, r.text)
      assert.equal(r.json.code, 'ACCOUNT_REQUIRED')
      assert.match(String(r.json.detail), /sign up|provision/i)
      assert.equal(await balance(account_id), before)
    })

    test('another account never sees these holdings: 404 for its key, its session cannot list or delete them', async () => {
      const a = await linked()
      const other = await user()
      const otherKey = await t.key(other.id)
      const r = await holdings(otherKey)
      assert.equal(r.status, 404, r.text)
      assert.equal(r.json.code, 'NOT_FOUND')
      assert.match(String(r.json.detail), /link/i)
      assert.ok(!r.text.includes(a.item.id))
      assert.equal((await debits(other.id)).length, 0)
      const list = await api(other, 'GET', '/plaid/items')
      assert.deepEqual(list.json.items, [])
      const del = await api(other, 'DELETE', `/plaid/items/${a.item.id}`)
      assert.equal(del.status, 404, del.text)
      const relink = await api(other, 'POST', '/plaid/link-token', { item_id: a.item.id })
      assert.equal(relink.status, 404, relink.text)
      assert.ok(await t.ctx.accounts.plaid().getItem(a.who.id, a.item.id), 'the item is still there')
      assert.ok(!fake.removed.includes(a.fi.accessToken))
    })

    test('ITEM_LOGIN_REQUIRED → 409 RELINK_REQUIRED naming the item, nothing charged; update mode; recovery', async () => {
      const { who, item, fi, key } = await linked()
      fi.state = 'login_required'
      const before = await balance(who.id)
      const r = await holdings(key)
      assert.equal(r.status, 409, r.text)
      assert.equal(r.json.code, 'RELINK_REQUIRED')
      assert.equal(r.json.item_id, item.id)
      assert.match(String(r.json.detail), new RegExp(`${item.id}.*re-link`))
      assert.equal(await balance(who.id), before)
      assert.equal((await debits(who.id)).length, 0)
      const list = await api(who, 'GET', '/plaid/items')
      assert.equal((list.json.items as Json[])[0]?.last_error, 'ITEM_LOGIN_REQUIRED')
      const lt = await api(who, 'POST', '/plaid/link-token', { item_id: item.id })
      assert.equal(lt.status, 201, lt.text)
      assert.equal(lt.json.update_mode, true)
      assert.equal(fake.requests.at(-1)?.body.access_token, fi.accessToken)
      fi.state = 'ok'
      assert.equal((await holdings(key)).status, 200)
      const after = await api(who, 'GET', '/plaid/items')
      assert.equal((after.json.items as Json[])[0]?.last_error, null)
    })

    test('Plaid down → 502 UPSTREAM_ERROR, hanging → 504 UPSTREAM_TIMEOUT; nothing charged', async () => {
      const { who, key } = await linked()
      const before = await balance(who.id)
      try {
        fake.mode = 'down'
        const down = await holdings(key)
        assert.equal(down.status, 502, down.text)
        assert.equal(down.json.code, 'UPSTREAM_ERROR')
        fake.mode = 'hang'
        const hung = await holdings(key)
        assert.equal(hung.status, 504, hung.text)
        assert.equal(hung.json.code, 'UPSTREAM_TIMEOUT')
        const lt = await api(who, 'POST', '/plaid/link-token', {})
        assert.equal(lt.status, 504, lt.text)
      } finally {
        fake.mode = 'ok'
      }
      assert.equal(await balance(who.id), before)
      assert.equal((await debits(who.id)).length, 0)
    })

    test('key rotation: a token under the old key still opens and is re-encrypted under the new one on read', async () => {
      const { who, item, fi, key } = await linked()
      const other = await linked()
      const original = t.ctx.config.plaid
      try {
        // As a restart with ERM3_PLAID_TOKEN_KEYS=k2:…,k1:… would configure it.
        const rotated = loadConfig({ ERM3_HOME: t.home, ...plaidEnv(fake, keysEnv(['k2', K2], ['k1', K1])) })
        t.ctx.config.plaid = rotated.server.plaid
        assert.equal((await holdings(key)).status, 200)
        const rec = await t.ctx.accounts.plaid().getItem(who.id, item.id)
        assert.equal(rec?.tokenKeyId, 'k2')
        assert.equal(openIndependently(K2, item.id, rec?.tokenCiphertext ?? ''), fi.accessToken)
        assert.equal(openIndependently(K1, item.id, rec?.tokenCiphertext ?? ''), null)
        // A key list that lost the key of a row: a clear 503, not a 500.
        t.ctx.config.plaid = loadConfig({
          ERM3_HOME: t.home,
          ...plaidEnv(fake, keysEnv(['k3', randomBytes(32)])),
        }).server.plaid
        const lost = await holdings(other.key)
        assert.equal(lost.status, 503, lost.text)
        assert.match(String(lost.json.detail), /key id "k1"/)
      } finally {
        t.ctx.config.plaid = original
      }
    })

    test('holdings is the MCP tool plaid_holdings: 0.02, the REST answer; refusals are tool errors', async () => {
      const base = await t.listen()
      const { who, key } = await linked()
      const client = new Client({ name: 'erm3-plaid', version: '1.0.0' })
      await client.connect(mcpTransport('streamable HTTP', base, key))
      try {
        const tools = await client.listTools()
        const tool = tools.tools.find((x) => x.name === 'plaid_holdings')
        assert.ok(tool, 'plaid_holdings is listed')
        assert.match(String(tool.description), /0\.02 USD/)
        const r = await client.callTool({ name: 'plaid_holdings', arguments: {} })
        assert.ok(!r.isError, JSON.stringify(r.content))
        const body = r.structuredContent as { positions: Json[]; _agent: Json }
        assert.equal(body._agent.cost_usd, 0.02)
        assert.equal(body._agent.cache_status, 'BYPASS')
        const rest = await holdings(key)
        assert.deepEqual(
          body.positions.map((x) => [x.ticker, x.institution_value, x.risk_unavailable_reason]),
          (rest.json.positions as Json[]).map((x) => [
            x.ticker,
            x.institution_value,
            x.risk_unavailable_reason,
          ]),
        )
        assert.equal((await debits(who.id)).length, 2)
      } finally {
        await client.close()
      }
      const res = await t.app.fastify.inject({ method: 'POST', url: '/auth/provision-free', payload: {} })
      const anon = JSON.parse(res.body) as { api_key: string }
      const c2 = new Client({ name: 'erm3-plaid-anon', version: '1.0.0' })
      await c2.connect(mcpTransport('streamable HTTP', base, anon.api_key))
      try {
        const r = await c2.callTool({ name: 'plaid_holdings', arguments: {} })
        assert.equal(r.isError, true)
        assert.match(JSON.stringify(r.content), /ACCOUNT_REQUIRED/)
      } finally {
        await c2.close()
      }
    })

    test('unlink: Plaid /item/remove, then the stored token is gone; holdings → 404', async () => {
      const { who, item, fi, key } = await linked()
      const r = await api(who, 'DELETE', `/plaid/items/${item.id}`)
      assert.equal(r.status, 200, r.text)
      assert.deepEqual(r.json, { id: item.id, deleted: true })
      assert.ok(fake.removed.includes(fi.accessToken))
      assert.equal(fake.requests.at(-1)?.path, '/item/remove')
      assert.equal(await t.ctx.accounts.plaid().getItem(who.id, item.id), null)
      assert.deepEqual((await api(who, 'GET', '/plaid/items')).json.items, [])
      assert.equal((await holdings(key)).status, 404)
      const audit = await t.ctx.accounts
        .selfService()
        .audit(who.id, { from: 0, to: Date.now() + 1000, limit: 10 })
      assert.ok(audit.some((a) => a.action === 'plaid.unlinked' && a.target === item.id))
    })
  })
}

describe('Plaid unconfigured and misconfigured', () => {
  let t: TestApp
  before(async () => {
    t = await startTestApp({ log: memoryLogger() })
  })
  after(() => t?.close())

  test('every Plaid route answers 503 UNAVAILABLE naming the variables to set', async () => {
    const email = `unconf-${randomBytes(3).toString('hex')}@example.com`
    const id = await t.account(1, email)
    const jwt = await signSession(t.ctx, { accountId: id, email })
    const key = await t.key(id)
    const calls: [string, string, string, Json?][] = [
      ['POST', '/plaid/link-token', jwt, {}],
      ['POST', '/plaid/exchange', jwt, { public_token: 'public-sandbox-x' }],
      ['GET', '/plaid/items', jwt],
      ['DELETE', '/plaid/items/pli_x', jwt],
      ['GET', '/plaid/holdings', key],
    ]
    for (const [method, url, cred, payload] of calls) {
      const r = await t.app.fastify.inject({
        method: method as 'GET',
        url,
        headers: { authorization: `Bearer ${cred}` },
        ...(payload ? { payload } : {}),
      })
      assert.equal(r.statusCode, 503, `${method} ${url}: ${r.body}`)
      const p = JSON.parse(r.body) as Json
      assert.equal(p.code, 'UNAVAILABLE')
      for (const v of ['PLAID_CLIENT_ID', 'PLAID_SECRET', 'ERM3_PLAID_TOKEN_KEYS'])
        assert.match(String(p.detail), new RegExp(v))
    }
  })

  test('configuration: no token key, a bad key, a bad PLAID_ENV or base URL → CONFIG_INVALID with a clear message', () => {
    const base = { PLAID_CLIENT_ID: 'client', PLAID_SECRET: 'secret-value-not-echoed' }
    const fails = (env: Record<string, string>, re: RegExp) =>
      assert.throws(
        () => loadConfig(env),
        (e: Error & { code?: string }) => {
          assert.equal(e.code, 'CONFIG_INVALID')
          assert.match(e.message, re)
          assert.ok(!e.message.includes('secret-value-not-echoed'))
          return true
        },
      )
    fails(base, /ERM3_PLAID_TOKEN_KEYS is not set/)
    fails({ PLAID_CLIENT_ID: 'client' }, /PLAID_SECRET is not set/)
    const short = randomBytes(16).toString('base64')
    fails({ ...base, ERM3_PLAID_TOKEN_KEYS: `k1:${short}` }, /32-byte/)
    fails({ ...base, ERM3_PLAID_TOKEN_KEYS: keysEnv(['k1', K1], ['k1', K2]) }, /repeats/)
    fails({ ...base, ERM3_PLAID_TOKEN_KEYS: keysEnv(['k1', K1]), PLAID_ENV: 'staging' }, /PLAID_ENV/)
    fails(
      { ...base, ERM3_PLAID_TOKEN_KEYS: keysEnv(['k1', K1]), PLAID_API_BASE: 'ftp://x' },
      /PLAID_API_BASE/,
    )
    const ok = loadConfig({
      ...base,
      ERM3_PLAID_TOKEN_KEYS: keysEnv(['k2', K2], ['k1', K1]),
      PLAID_ENV: 'production',
    })
    assert.deepEqual(
      ok.server.plaid?.tokenKeys.map((k) => k.id),
      ['k2', 'k1'],
    )
    assert.equal(ok.server.plaid?.env, 'production')
    assert.equal(loadConfig({}).server.plaid, null)
  })
})

/** `erm3 plaid rekey` (operator re-keying): the CLI end to end on an embedded home. */
describe('erm3 plaid rekey', () => {
  let home = ''
  before(async () => {
    home = await mkdtemp(join(tmpdir(), 'erm3-plaid-cli-'))
  })
  after(() => rm(home, { recursive: true, force: true }))
  /** An independent AES-256-GCM seal in the documented layout (iv | tag | body, AAD = item id). */
  function seal(key: Buffer, aad: string, text: string): string {
    const iv = randomBytes(12)
    const c = createCipheriv('aes-256-gcm', key, iv)
    c.setAAD(Buffer.from(aad))
    const body = Buffer.concat([c.update(text, 'utf8'), c.final()])
    return Buffer.concat([iv, c.getAuthTag(), body]).toString('base64url')
  }

  const erm3 = (env: Record<string, string>, ...args: string[]) => runErm3(home, env, ...args)

  const cliPlaidEnv = (tokenKeys: string) => ({
    PLAID_CLIENT_ID: 'client',
    PLAID_SECRET: 'secret',
    ERM3_PLAID_TOKEN_KEYS: tokenKeys,
  })

  test('erm3 plaid rekey re-encrypts old tokens under the current key; a lost key fails naming it', async () => {
    const store = createSqliteAccountStore(join(home, 'erm3.db'))
    await store.migrate()
    const tokens = new Map<string, string>()
    for (let i = 0; i < 3; i++) {
      const accountId = `acct_cli${i}`
      await store.createAccount({
        id: accountId,
        email: `cli${i}@x.test`,
        kind: 'user',
        createdAt: Date.now(),
      })
      const id = `pli_cli${i}`
      const token = `access-sandbox-${randomBytes(8).toString('hex')}`
      tokens.set(id, token)
      await store.plaid().insertItem({
        id,
        accountId,
        itemId: `item_cli${i}`,
        institutionId: null,
        institutionName: null,
        tokenCiphertext: i === 2 ? seal(K2, id, token) : seal(K1, id, token),
        tokenKeyId: i === 2 ? 'k2' : 'k1',
        createdAt: Date.now() + i,
        lastError: null,
      })
    }
    await store.close()

    const r = await erm3(cliPlaidEnv(keysEnv(['k2', K2], ['k1', K1])), 'plaid', 'rekey')
    assert.equal(r.code, 0, r.err)
    assert.match(r.out, /^2 token\(s\) re-encrypted; every stored token is under key k2/)
    assert.ok(!r.out.includes('access-sandbox') && !r.err.includes('access-sandbox'))

    const check = createSqliteAccountStore(join(home, 'erm3.db'))
    for (const [id, token] of tokens) {
      const rec = await check.plaid().getItem(`acct_cli${id.slice(-1)}`, id)
      assert.equal(rec?.tokenKeyId, 'k2')
      assert.equal(openIndependently(K2, id, rec?.tokenCiphertext ?? ''), token)
    }
    await check.close()

    const again = await erm3(cliPlaidEnv(keysEnv(['k2', K2])), 'plaid', 'rekey')
    assert.equal(again.code, 0, again.err)
    assert.match(again.out, /^0 token\(s\) re-encrypted/)

    const lost = await erm3(cliPlaidEnv(keysEnv(['k3', randomBytes(32)])), 'plaid', 'rekey')
    assert.equal(lost.code, 1)
    assert.match(lost.err, /key id "k2"/)
    const unconfigured = await erm3({}, 'plaid', 'rekey')
    assert.equal(unconfigured.code, 1)
    assert.match(unconfigured.err, /PLAID_CLIENT_ID/)
  })
})

// Last: the logs of every server above, searched for every secret they were given or handed out.
test('no secret in the logs of the Plaid suites', () => {
  for (const f of fakes) for (const i of f.items.values()) secrets.add(i.accessToken)
  assert.ok(logLines.length > 0, 'the suites logged something')
  const all = logLines.join('\n')
  for (const s of secrets) assert.ok(!all.includes(s), 'a secret reached the logs')
  assert.ok(!all.includes('access-sandbox-'), 'an access token reached the logs')
})
