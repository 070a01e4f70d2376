import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { assertResponseShape, debits } from '../helpers/history-checks.ts'
import { startTestApp, type TestApp } from '../helpers/test-app.ts'

interface Info {
  ticker: string
  symbol: string
  name: string
  asset_type: string
  sector: string | null
  industry: string | null
  sector_etf: string | null
  subsector_etf: string | null
}

describe('GET /tickers (free)', () => {
  let t: TestApp
  let account: string
  let key: string
  before(async () => {
    t = await startTestApp()
    // No money at all: a free operation must still answer.
    account = await t.account(0)
    key = await t.key(account)
  })
  after(() => t?.close())

  const list = async (query: Record<string, unknown>, k = key) => {
    const r = await t.client.call('getTickers', { key: k, query })
    const b = r.ok()
    assertResponseShape('getTickers', b)
    return { b, headers: r.headers }
  }

  test('default: sorted current tickers, limit 100, count, data_as_of; free (no cost header, no debit)', async () => {
    const { b, headers } = await list({})
    const store = t.ctx.models.store('live')
    const tickers = b.tickers as string[]
    assert.equal(b.count, tickers.length)
    assert.equal(tickers.length, 100)
    assert.equal(b.data_as_of, '2021-12-31')
    assert.deepEqual(tickers, [...tickers].sort())
    for (const x of tickers) assert.ok(store.resolve(x) >= 0, x)
    assert.equal(headers['x-api-cost-usd'], undefined)
    const all = (await list({ limit: 1000 })).b.tickers as string[]
    // One entry per security: the delisted symbol whose ticker was reused is not listed twice.
    assert.equal(new Set(all).size, all.length)
    assert.ok(all.length > 100 && all.length <= store.symbols.length)
    assert.deepEqual(await debits(t, account), [])
    assert.equal((await t.ctx.accounts.balance(account)).balanceMicros, 0)
  })

  test('search: ticker prefix first, then name substring, case-insensitive; suggestions when nothing matches', async () => {
    const store = t.ctx.models.store('live')
    const all = (await list({ limit: 1000, include_metadata: true })).b.tickers as Info[]
    const { b } = await list({ search: 'x', limit: 1000 })
    const got = b.tickers as string[]
    const prefix = all.filter((i) => i.ticker.startsWith('X')).map((i) => i.ticker)
    const byName = all.filter((i) => !i.ticker.startsWith('X') && i.name.toLowerCase().includes('x'))
    assert.deepEqual(got, [...prefix, ...byName.map((i) => i.ticker)])
    const stock = all.find((i) => i.asset_type === 'stock') as Info
    const fragment = stock.name.slice(1, 6).toUpperCase()
    const named = (await list({ search: fragment, include_metadata: true })).b.tickers as Info[]
    assert.ok(
      named.some((i) => i.ticker === stock.ticker),
      fragment,
    )
    const exact = (await list({ search: stock.ticker.toLowerCase() })).b.tickers as string[]
    assert.equal(exact[0], stock.ticker, 'an exact ticker ranks first')
    const none = (await list({ search: `${stock.ticker}QZ` })).b
    assert.deepEqual(none.tickers, [])
    assert.equal(none.count, 0)
    assert.ok(none.suggestions?.includes(stock.ticker), JSON.stringify(none))
    assert.ok(store.resolve(stock.ticker) >= 0)
  })

  test('include_metadata: name, asset_type, sector, industry and the ETFs in effect at data_as_of', async () => {
    const store = t.ctx.models.store('live')
    const last = store.calendar.length - 1
    const sec = await store.crossSection('sector_etf', last)
    const sub = await store.crossSection('subsector_etf', last)
    const rows = (await list({ include_metadata: true, limit: 1000 })).b.tickers as Info[]
    for (const r of rows) {
      const i = store.resolve(r.ticker)
      const s = store.symbols[i]
      assert.ok(s)
      const etf = (c: number | undefined) => (c === undefined || c < 0 ? null : (store.etfs[c] ?? null))
      assert.deepEqual(r, {
        ticker: r.ticker,
        symbol: s.symbol,
        name: s.name,
        asset_type: s.asset_type,
        sector: s.sector,
        industry: s.industry,
        sector_etf: etf(sec[i]),
        subsector_etf: etf(sub[i]),
      })
    }
    assert.ok(rows.some((r) => r.asset_type === 'etf') && rows.some((r) => r.sector_etf !== null))
  })

  test('mag7=true lists the seven, in their order: the synthetic market names its largest companies', async () => {
    const { b } = await list({ mag7: true })
    assert.deepEqual(b.tickers, ['AAPL', 'MSFT', 'GOOGL', 'AMZN', 'NVDA', 'META', 'TSLA'])
    assert.equal(b.count, 7)
    const info = (await list({ mag7: true, include_metadata: true })).b.tickers as Info[]
    const aapl = info.find((i) => i.ticker === 'AAPL')
    assert.deepEqual(aapl && [aapl.name, aapl.sector, aapl.industry, aapl.sector_etf], [
      'Apple Inc.',
      'Information Technology',
      'Technology Hardware, Storage & Peripherals',
      'XLK',
    ])
    const nvda = info.find((i) => i.ticker === 'NVDA')
    assert.deepEqual(nvda && [nvda.industry, nvda.subsector_etf], ['Semiconductors', 'SMH'])
  })

  test('limit bounds and unknown parameters → 400; no key → 401; test keys list the sandbox', async () => {
    for (const q of [{ limit: 0 }, { limit: 1001 }, { limit: 'many' }, { mag7: 'perhaps' }, { bogus: 1 }])
      assert.equal(
        (await t.client.call('getTickers', { key, query: q as never })).status,
        400,
        JSON.stringify(q),
      )
    assert.equal(((await list({ limit: 5 })).b.tickers as string[]).length, 5)
    assert.equal((await t.client.call('getTickers', { key: '' })).status, 401)
    const tk = await t.key(account, { env: 'test' })
    const sandbox = t.ctx.models.store('test')
    const sb = (await list({ limit: 1000, include_metadata: true }, tk)).b.tickers as Info[]
    for (const r of sb) assert.equal(sandbox.symbols[sandbox.resolve(r.ticker)]?.name, r.name)
  })
})
