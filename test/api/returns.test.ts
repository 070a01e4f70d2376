import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import type { ModelStore } from '../../src/engine/model-store/reader.ts'
import {
  assertResponseShape,
  type Cell,
  dayMs,
  debits,
  parquetTypes,
  rawCall,
  readCsv,
  readDuckDB,
  readHyparquet,
} from '../helpers/history-checks.ts'
import { startTestApp, type TestApp } from '../helpers/test-app.ts'

/** Pinned column order of the tables (literals, never imported from src/). */
const STOCK_COLUMNS = [
  'date',
  'returns_gross',
  'price_close',
  'l3_mkt_hr',
  'l3_sec_hr',
  'l3_sub_hr',
  'l3_mkt_er',
  'l3_sec_er',
  'l3_sub_er',
  'l3_res_er',
]
const ETF_COLUMNS = ['date', 'returns_gross', 'price_close']
const GROSS_COLUMNS = ['date', 'returns_gross']
const nul = (x: number | undefined) => (x === undefined || Number.isNaN(x) ? null : x)

/** The rows a `years` request should return, read directly from the store. */
async function expectedRows(store: ModelStore, ticker: string, years: number, columns: string[]) {
  const i = store.resolve(ticker)
  const h = await store.history(i, ['price_close', 'returns_gross'])
  const px = h.price_close as Float64Array
  let end = px.length - 1
  while (Number.isNaN(px[end])) end--
  const endIso = store.date(end)
  const cutoff = `${Number(endIso.slice(0, 4)) - years}${endIso.slice(4)}`
  // The window starts after the cutoff, but not before the first price (a gap inside the
  // listed life is served like any other day, even as the first one).
  const listed = px.findIndex((v) => !Number.isNaN(v))
  const first = Math.max(listed, [...store.calendar.keys()].find((t) => store.date(t) > cutoff) as number)
  const all = await store.history(i, columns.slice(1) as never, first, end + 1)
  const rows: Record<string, Cell>[] = []
  for (let k = 0; k <= end - first; k++) {
    const row: Record<string, Cell> = { date: store.date(first + k) }
    for (const c of columns.slice(1)) row[c] = nul(all[c]?.[k])
    rows.push(row)
  }
  return { rows, cutoff, first, end }
}

describe('GET /ticker-returns, /returns, /etf-returns', () => {
  let t: TestApp
  let key: string
  let stock: string
  before(async () => {
    t = await startTestApp()
    key = await t.key(await t.account(5))
    stock = t.ctx.models.store('live').symbols.find((s) => s.asset_type === 'stock')?.symbol as string
  })
  after(() => t?.close())

  test('stock JSON: contract shape, rows equal the store over the years window, meta and range', async () => {
    const store = t.ctx.models.store('live')
    for (const years of [1, 2, 3, 15]) {
      const b = (
        await t.client.call('getTickerReturns', { key, query: { ticker: stock.toLowerCase(), years } })
      ).ok()
      assertResponseShape('getTickerReturns', b)
      const e = await expectedRows(store, stock, years, STOCK_COLUMNS)
      assert.deepEqual(b.data, e.rows)
      assert.ok(
        e.first === 0 || store.date(e.first - 1) <= e.cutoff,
        'the window starts right after the cutoff',
      )
      assert.deepEqual(b._metadata.range, [e.rows[0]?.date, e.rows.at(-1)?.date])
      assert.equal(b.asset_type, 'stock')
      assert.equal(b.ticker, stock)
      assert.equal(b.periodicity, 'daily')
      const codes = await store.history(
        store.resolve(stock),
        ['sector_etf', 'subsector_etf'],
        e.end,
        e.end + 1,
      )
      assert.deepEqual(b.meta, {
        market_etf: 'SPY',
        sector_etf: store.etfs[codes.sector_etf?.[0] as number] ?? null,
        subsector_etf: store.etfs[codes.subsector_etf?.[0] as number] ?? null,
        universe: 'US_EQUITY',
      })
    }
    const three = (await t.client.call('getTickerReturns', { key, query: { ticker: stock, years: 3 } })).ok()
    assert.ok(
      three.data.some((r) => r.l3_res_er === null),
      'early rows lack a rolling window: nulls',
    )
    const dflt = (await t.client.call('getTickerReturns', { key, query: { ticker: stock } })).ok()
    assert.equal(dflt.data[0]?.date, '2021-01-04', 'default 1 year: after 2020-12-31, exclusive')
  })

  test('ETF JSON: rows only date/returns_gross/price_close, meta without sector, universe US_ETF', async () => {
    const b = (await t.client.call('getTickerReturns', { key, query: { ticker: 'XLK', years: 2 } })).ok()
    assertResponseShape('getTickerReturns', b)
    assert.equal(b.asset_type, 'etf')
    assert.deepEqual(b.data, (await expectedRows(t.ctx.models.store('live'), 'XLK', 2, ETF_COLUMNS)).rows)
    for (const r of b.data) assert.deepEqual(Object.keys(r), ETF_COLUMNS)
    assert.deepEqual(b.meta, { market_etf: 'SPY', sector_etf: null, subsector_etf: null, universe: 'US_ETF' })
  })

  test('Parquet (DuckDB and hyparquet, types checked) and CSV (csv-parse, nulls) equal the JSON rows', async () => {
    for (const [ticker, columns] of [
      [stock, STOCK_COLUMNS],
      ['XLK', ETF_COLUMNS],
    ] as const) {
      const json = (await t.client.call('getTickerReturns', { key, query: { ticker, years: 3 } })).ok()
      const asCells = json.data.map((r) =>
        Object.fromEntries(
          columns.map((c) => [c, c === 'date' ? dayMs(r.date) : (r[c as 'price_close'] ?? null)]),
        ),
      )
      const pq = await rawCall(t, 'GET', `/ticker-returns?ticker=${ticker}&years=3&format=parquet`, key)
      assert.equal(pq.status, 200)
      assert.equal(pq.headers['content-type'], 'application/vnd.apache.parquet')
      assert.equal(
        pq.headers['content-disposition'],
        `attachment; filename="ticker-returns_${ticker}_3y.parquet"`,
      )
      assert.equal(pq.headers['x-data-as-of'], '2021-12-31')
      const types = parquetTypes(pq.bytes)
      assert.deepEqual(Object.keys(types), columns)
      for (const c of columns)
        assert.deepEqual(types[c], c === 'date' ? ['INT64', 'TIMESTAMP_MILLIS'] : ['DOUBLE', undefined])
      assert.deepEqual(await readHyparquet(pq.bytes), asCells)
      const duck = await readDuckDB(pq.bytes)
      assert.deepEqual(duck.rows, asCells)
      for (const c of columns)
        assert.equal(duck.types[c], c === 'date' ? 'TIMESTAMP WITH TIME ZONE' : 'DOUBLE')
      const csv = await rawCall(t, 'GET', `/ticker-returns?ticker=${ticker}&years=3&format=csv`, key)
      assert.equal(csv.headers['content-type'], 'text/csv; charset=utf-8')
      const [header, ...rows] = readCsv(csv.text)
      assert.deepEqual(header, columns)
      assert.deepEqual(
        rows,
        json.data.map((r) =>
          columns.map((c) => (c === 'date' ? r.date : String(r[c as 'price_close'] ?? ''))),
        ),
      )
      assert.ok(!csv.text.includes('_metadata') && !csv.text.includes('NaN'))
    }
  })

  test('format negotiation: Accept selects Parquet/CSV, format wins, format=xml and unknown Accept → 406', async () => {
    const url = `/ticker-returns?ticker=${stock}`
    const viaAccept = await rawCall(t, 'GET', url, key, { accept: 'text/csv' })
    assert.equal(viaAccept.headers['content-type'], 'text/csv; charset=utf-8')
    const pq = await rawCall(t, 'GET', url, key, { accept: 'application/vnd.apache.parquet' })
    assert.equal(pq.headers['content-type'], 'application/vnd.apache.parquet')
    const wins = await rawCall(t, 'GET', `${url}&format=json`, key, { accept: 'text/csv' })
    assert.match(wins.headers['content-type'] ?? '', /application\/json/)
    for (const [u, h] of [
      [`${url}&format=xml`, {}],
      [url, { accept: 'application/xml' }],
      [`/returns?ticker=${stock}&format=xlsx`, {}],
    ] as const) {
      const r = await rawCall(t, 'GET', u, key, h)
      assert.equal(r.status, 406, u)
      assert.match(r.headers['content-type'] ?? '', /problem\+json/)
    }
  })

  test('years out of range or not an integer → 400; unknown ticker → 404 with suggestions; all free', async () => {
    const acct = await t.account(1)
    const k = await t.key(acct)
    for (const id of ['getTickerReturns', 'getReturns', 'getEtfReturns'] as const) {
      for (const years of [0, 16, -1, 1.5, 'x'])
        assert.equal(
          (await t.client.call(id, { key: k, query: { ticker: stock, years: years as number } })).status,
          400,
        )
      const nf = await t.client.call(id, { key: k, query: { ticker: `${stock}Q` } })
      assert.equal(nf.status, 404)
      assert.ok((nf.json as { suggestions: string[] }).suggestions.length > 0)
      assert.equal((await t.client.call(id, { key: k, query: {} })).status, 400)
    }
    assert.deepEqual(await debits(t, acct), [])
  })

  test('/returns (stock) and /etf-returns (ETF): parallel arrays equal the store; tables are their zip', async () => {
    const store = t.ctx.models.store('live')
    for (const [id, path, ticker] of [
      ['getReturns', '/returns', stock],
      ['getEtfReturns', '/etf-returns', 'SPY'],
    ] as const) {
      const b = (await t.client.call(id, { key, query: { ticker, years: 2 } })).ok()
      assertResponseShape(id, b)
      const e = await expectedRows(store, ticker, 2, GROSS_COLUMNS)
      assert.deepEqual(
        b.dates,
        e.rows.map((r) => r.date),
      )
      assert.deepEqual(
        b.returns_gross,
        e.rows.map((r) => r.returns_gross),
      )
      assert.deepEqual(b._metadata.range, [b.dates[0], b.dates.at(-1)])
      assert.equal(b.symbol, ticker)
      const pq = await rawCall(t, 'GET', `${path}?ticker=${ticker}&years=2&format=parquet`, key)
      const zipped = b.dates.map((d, i) => ({ date: dayMs(d), returns_gross: b.returns_gross[i] ?? null }))
      assert.deepEqual(await readHyparquet(pq.bytes), zipped)
      assert.deepEqual((await readDuckDB(pq.bytes)).rows, zipped)
      assert.deepEqual(Object.keys(parquetTypes(pq.bytes)), GROSS_COLUMNS)
      const csv = await rawCall(t, 'GET', `${path}?ticker=${ticker}&years=2`, key, { accept: 'text/csv' })
      assert.deepEqual(readCsv(csv.text), [
        GROSS_COLUMNS,
        ...b.dates.map((d, i) => [d, String(b.returns_gross[i] ?? '')]),
      ])
      assert.match(
        csv.headers['content-disposition'] ?? '',
        new RegExp(`filename="${path.slice(1)}_${ticker}_2y.csv"`),
      )
    }
    const wrongEtf = await t.client.call('getEtfReturns', { key, query: { ticker: stock } })
    assert.equal(wrongEtf.status, 400)
    assert.equal((wrongEtf.json as { code: string }).code, 'INVALID_TICKER')
    assert.match((wrongEtf.json as { detail: string }).detail, /\/returns/)
    const wrongStock = await t.client.call('getReturns', { key, query: { ticker: 'SPY' } })
    assert.equal(wrongStock.status, 400)
    assert.match((wrongStock.json as { detail: string }).detail, /\/etf-returns/)
  })

  test('each call is charged its listed price (0.005); test keys read the sandbox with the same shapes', async () => {
    const acct = await t.account(1)
    const k = await t.key(acct)
    const a = (await t.client.call('getTickerReturns', { key: k, query: { ticker: stock } })).ok()
    assert.equal(a._agent.cost_usd, 0.005)
    await t.client.call('getReturns', { key: k, query: { ticker: stock } })
    await t.client.call('getEtfReturns', { key: k, query: { ticker: 'SPY' } })
    // The CSV of an answer paid for on this data_as_of is free (pay once, any format); another
    // window is another request.
    await rawCall(t, 'GET', `/returns?ticker=${stock}&format=csv`, k)
    await rawCall(t, 'GET', `/returns?ticker=${stock}&years=2&format=csv`, k)
    assert.deepEqual(await debits(t, acct), [
      [-5000, 'ticker_returns'],
      [-5000, 'returns'],
      [-5000, 'etf_returns'],
      [-5000, 'returns'],
    ])
    const tk = await t.key(acct, { env: 'test' })
    const sandbox = t.ctx.models.store('test')
    const sbStock = sandbox.symbols.find((s) => s.asset_type === 'stock')?.symbol as string
    const sb = (
      await t.client.call('getTickerReturns', { key: tk, query: { ticker: sbStock, years: 2 } })
    ).ok()
    assertResponseShape('getTickerReturns', sb)
    assert.deepEqual(sb.data, (await expectedRows(sandbox, sbStock, 2, STOCK_COLUMNS)).rows)
    const live = (await t.client.call('getEtfReturns', { key, query: { ticker: 'SPY' } })).ok()
    const test = (await t.client.call('getEtfReturns', { key: tk, query: { ticker: 'SPY' } })).ok()
    assert.deepEqual(Object.keys(test).sort(), Object.keys(live).sort())
    assert.notDeepEqual(test.returns_gross, live.returns_gross, 'sandbox values differ')
    assert.equal((await debits(t, acct)).length, 4, 'test keys are free')
  })
})
