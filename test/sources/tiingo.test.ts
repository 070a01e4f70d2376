import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { SourceError } from '../../src/engine/sources/http.ts'
import { priceSourceFromEnv } from '../../src/engine/sources/index.ts'
import { tiingoSource } from '../../src/engine/sources/tiingo.ts'
import type { Source } from '../../src/engine/sources/types.ts'
import { type FakeTiingo, type FakeTiingoMarket, startFakeTiingo } from '../fakes/tiingo.ts'

const KEY = 'tiingo_secret_abcdef'

const BRK = [
  { date: '2024-01-02', close: 362.46, adjClose: 362.46, volume: 3_000_000, divCash: 0, splitFactor: 1 },
  { date: '2024-01-03', close: 360.12, adjClose: 360.12, volume: 3_100_000, divCash: 0, splitFactor: 1 },
  { date: '2024-01-04', close: 361.0, adjClose: 361.0, volume: 2_900_000, divCash: 0, splitFactor: 1 },
]
const KO = [
  { date: '2024-03-13', close: 60.1, adjClose: 58.9, volume: 12_000_000, divCash: 0, splitFactor: 1 },
  { date: '2024-03-14', close: 59.6, adjClose: 58.87, volume: 11_000_000, divCash: 0.485, splitFactor: 1 },
]

const MARKET: FakeTiingoMarket = {
  prices: { 'BRK-B': BRK, KO },
  listings: [
    {
      ticker: 'BRK-B',
      exchange: 'NYSE',
      assetType: 'Stock',
      priceCurrency: 'USD',
      startDate: '1996-05-09',
      endDate: '2024-01-04',
    },
    {
      ticker: 'KO',
      exchange: 'NYSE',
      assetType: 'Stock',
      priceCurrency: 'USD',
      startDate: '1962-01-02',
      endDate: '2024-01-02',
    },
    {
      ticker: 'SPY',
      exchange: 'NYSE ARCA',
      assetType: 'ETF',
      priceCurrency: 'USD',
      startDate: '1993-01-29',
      endDate: '2024-01-04',
    },
    {
      ticker: 'TWTR',
      exchange: 'NYSE',
      assetType: 'Stock',
      priceCurrency: 'USD',
      startDate: '2013-11-07',
      endDate: '2022-10-27',
    },
    {
      ticker: 'AAPL',
      exchange: 'NASDAQ',
      assetType: 'Stock',
      priceCurrency: 'USD',
      startDate: '1980-12-12',
      endDate: '2024-01-04',
    },
    {
      ticker: 'IAU',
      exchange: 'NYSE MKT',
      assetType: 'ETF',
      priceCurrency: 'USD',
      startDate: '2005-01-28',
      endDate: '2024-01-04',
    },
    {
      ticker: 'VFIAX',
      exchange: 'NMFQS',
      assetType: 'Mutual Fund',
      priceCurrency: 'USD',
      startDate: '2000-11-13',
      endDate: '2024-01-04',
    },
    {
      ticker: '600000',
      exchange: 'SHG',
      assetType: 'Stock',
      priceCurrency: 'CNY',
      startDate: '2007-01-04',
      endDate: '2024-01-04',
    },
    {
      ticker: 'NOPR',
      exchange: 'NASDAQ',
      assetType: 'Stock',
      priceCurrency: 'USD',
      startDate: '',
      endDate: '',
    },
  ],
}

let fake: FakeTiingo
const waits: number[] = []
const sleep = async (ms: number) => {
  waits.push(ms)
}
const source = (key = KEY): Source =>
  tiingoSource({
    apiKey: key,
    baseUrl: fake.url,
    tickersUrl: fake.tickersUrl,
    ratePerHour: 50,
    http: { ratePerSecond: 0, sleep, random: () => 1, backoffMs: 10 },
  })

before(async () => {
  fake = await startFakeTiingo({ market: MARKET, key: KEY })
})
after(() => fake.close())

describe('tiingo source', () => {
  it('history: Tiingo rows as bars, share classes spelled with a dash on the wire', async () => {
    const bars = await source().prices?.history('BRK.B', '2024-01-02', '2024-01-03')
    assert.deepEqual(
      bars,
      BRK.slice(0, 2).map((r) => ({
        date: r.date,
        close: r.close,
        adjClose: r.adjClose,
        volume: r.volume,
        splitFactor: r.splitFactor,
        dividend: r.divCash,
      })),
    )
    const q = fake.requests.at(-1)
    assert.equal(q?.url.pathname, '/tiingo/daily/BRK-B/prices')
    assert.equal(q?.url.searchParams.get('startDate'), '2024-01-02')
    assert.equal(q?.url.searchParams.get('endDate'), '2024-01-03')
    assert.equal(q?.headers.authorization, `Token ${KEY}`)
    assert.ok(!q?.url.search.includes(KEY))
  })

  it('history up to the latest (to null) sends no endDate; dividends come through', async () => {
    const bars = await source().prices?.history('KO', '2024-03-01', null)
    assert.equal(fake.requests.at(-1)?.url.searchParams.has('endDate'), false)
    assert.deepEqual(
      bars?.map((b) => [b.date, b.adjClose, b.dividend]),
      KO.map((r) => [r.date, r.adjClose, r.divCash]),
    )
  })

  it('has no prices.day: Tiingo has no all-tickers endpoint for a past date', () => {
    assert.equal(source().prices?.day, undefined)
  })

  it('securities.list: the zip of every ticker, delisted ones included, USD only', async () => {
    const list = await source().securities?.list()
    assert.ok(list)
    const zipRequest = fake.requests.at(-1)
    assert.equal(zipRequest?.url.pathname, '/docs/tiingo/daily/supported_tickers.zip')
    assert.equal(zipRequest?.headers.authorization, undefined) // the token stays with the API host
    const by = new Map(list.map((l) => [l.ticker, l]))
    assert.deepEqual([...by.keys()], ['BRK.B', 'KO', 'SPY', 'TWTR', 'AAPL', 'IAU', 'VFIAX', 'NOPR'])
    assert.deepEqual(by.get('BRK.B'), {
      ticker: 'BRK.B',
      name: '',
      exchange: 'NYSE',
      assetType: 'stock',
      cik: null,
      permanentId: null,
      firstDate: '1996-05-09',
      lastDate: null,
      active: true,
    })
    // Newest endDate 2024-01-04: KO (2 days before) is active, TWTR is delisted.
    assert.deepEqual([by.get('KO')?.active, by.get('KO')?.lastDate], [true, null])
    assert.deepEqual([by.get('TWTR')?.active, by.get('TWTR')?.lastDate], [false, '2022-10-27'])
    assert.deepEqual([by.get('SPY')?.exchange, by.get('SPY')?.assetType], ['NYSE Arca', 'etf'])
    assert.deepEqual([by.get('IAU')?.exchange, by.get('AAPL')?.exchange], ['NYSE American', 'NASDAQ'])
    assert.deepEqual([by.get('VFIAX')?.exchange, by.get('VFIAX')?.assetType], ['other', 'other'])
    assert.deepEqual([by.get('NOPR')?.active, by.get('NOPR')?.firstDate], [false, null])
  })

  it('a bad key: 401 at once, the message names tiingo and never the key', async () => {
    const calls = fake.calls
    await assert.rejects(
      source('bad-token-777').prices?.history('KO', '2024-03-01', null) ?? Promise.resolve(),
      (e: unknown) => {
        assert.ok(e instanceof SourceError)
        assert.equal(e.status, 401)
        assert.equal(e.code, 'CONFIG_INVALID')
        assert.match(
          e.message,
          /^tiingo: HTTP 401 from http:\/\/127\.0\.0\.1:\d+\/tiingo\/daily\/KO\/prices: Invalid token\.$/,
        )
        assert.ok(!e.message.includes('bad-token-777'))
        return true
      },
    )
    assert.equal(fake.calls - calls, 1)
  })

  it('an unknown ticker is a 404 error naming it', async () => {
    await assert.rejects(
      source().prices?.history('ZZZZ', '2024-01-01', null) ?? Promise.resolve(),
      /tiingo: HTTP 404 .*Ticker 'ZZZZ' not found/,
    )
  })

  it('500 then 503 then success: retried with exponential backoff', async () => {
    waits.length = 0
    fake.failNext(1, { kind: 'status', status: 500 })
    fake.failNext(1, { kind: 'status', status: 503 })
    const bars = await source().prices?.history('KO', '2024-03-01', null)
    assert.equal(bars?.length, 2)
    assert.deepEqual(waits, [10, 20])
  })

  it('a truncated zip is fetched again', async () => {
    const calls = fake.calls
    fake.failNext(1, { kind: 'truncate' })
    assert.equal((await source().securities?.list())?.length, 8)
    assert.equal(fake.calls - calls, 2)
  })

  it('a malformed row is an error naming the ticker, the row and the field', async () => {
    fake.malformNext(1)
    await assert.rejects(
      source().prices?.history('BRK.B', '2024-01-01', null) ?? Promise.resolve(),
      /^AppError: tiingo: malformed price row 3 of BRK\.B: close is not a number$/,
    )
  })

  it('priceSourceFromEnv: the key is required by name; the rest configures the source', async () => {
    assert.throws(
      () => priceSourceFromEnv('tiingo', { TIINGO_API_KEY: ' ' }),
      /^AppError: TIINGO_API_KEY is not set: get a key at https:\/\/www\.tiingo\.com\/account\/api\/token or choose another --source$/,
    )
    assert.throws(
      () => priceSourceFromEnv('tiingo', { TIINGO_API_KEY: KEY, TIINGO_BASE_URL: 'ftp://x' }),
      /TIINGO_BASE_URL must use http: or https:/,
    )
    const s = priceSourceFromEnv('tiingo', {
      TIINGO_API_KEY: KEY,
      TIINGO_BASE_URL: fake.url,
      TIINGO_TICKERS_URL: fake.tickersUrl,
      TIINGO_RATE_PER_HOUR: '1000000',
    })
    assert.equal(s.name, 'tiingo')
    assert.equal((await s.prices?.history('KO', '2024-03-14', '2024-03-14'))?.[0]?.dividend, 0.485)
    assert.equal((await s.securities?.list())?.length, 8)
  })
})
