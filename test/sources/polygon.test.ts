import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { SourceError } from '../../src/engine/sources/http.ts'
import { priceSourceFromEnv } from '../../src/engine/sources/index.ts'
import { polygonSource } from '../../src/engine/sources/polygon.ts'
import type { DailyBar, Source } from '../../src/engine/sources/types.ts'
import { type FakePolygon, type FakePolygonMarket, startFakePolygon } from '../fakes/polygon.ts'

const KEY = 'pk_secret_123456'

// 2-for-1 split from 2024-01-05; dividends ex 2024-01-06 (a Saturday: applies from 01-08) and 2024-01-09.
const MARKET: FakePolygonMarket = {
  bars: {
    AAPL: [
      { date: '2024-01-02', close: 100, volume: 1000 },
      { date: '2024-01-03', close: 102, volume: 1100 },
      { date: '2024-01-04', close: 101, volume: 1200 },
      { date: '2024-01-05', close: 51, volume: 2400 },
      { date: '2024-01-08', close: 52, volume: 2500 },
      { date: '2024-01-09', close: 53, volume: 2600 },
      { date: '2024-07-01', close: 54, volume: 2700 },
    ],
    'BRK.B': [{ date: '2024-01-05', close: 360.5, volume: 300 }],
  },
  splits: [
    { ticker: 'AAPL', execution_date: '2024-01-05', split_from: 1, split_to: 2 },
    { ticker: 'AAPL', execution_date: '2020-08-31', split_from: 1, split_to: 4 },
  ],
  dividends: [
    { ticker: 'AAPL', ex_dividend_date: '2024-01-06', cash_amount: 0.1 },
    { ticker: 'AAPL', ex_dividend_date: '2024-01-09', cash_amount: 0.5 },
    { ticker: 'BRK.B', ex_dividend_date: '2024-01-05', cash_amount: 0.25 },
  ],
  tickers: [
    {
      ticker: 'AAPL',
      name: 'Apple Inc.',
      primary_exchange: 'XNAS',
      type: 'CS',
      active: true,
      cik: '0000320193',
      composite_figi: 'BBG000B9XRY4',
    },
    {
      ticker: 'BRK.B',
      name: 'Berkshire B',
      primary_exchange: 'XNYS',
      type: 'CS',
      active: true,
      cik: '0001067983',
      composite_figi: 'BBG000DWG505',
    },
    {
      ticker: 'SPY',
      name: 'SPDR S&P 500',
      primary_exchange: 'ARCX',
      type: 'ETF',
      active: true,
      composite_figi: 'BBG000BDTBL9',
    },
    { ticker: 'BACpB', name: 'Bank pref', primary_exchange: 'XNYS', type: 'PFD', active: true },
    {
      ticker: 'FB',
      name: 'Meta Platforms',
      primary_exchange: 'XNAS',
      type: 'CS',
      active: false,
      cik: '0001326801',
      composite_figi: 'BBG000MM2P62',
      delisted_utc: '2022-06-09T00:00:00Z',
    },
    {
      ticker: 'OLD',
      name: 'Old Co',
      primary_exchange: 'XASE',
      type: 'CS',
      active: false,
      delisted_utc: '2015-03-02T00:00:00Z',
    },
  ],
  events: {
    BBG000MM2P62: [
      { date: '2012-05-18', ticker: 'FB' },
      { date: '2022-06-09', ticker: 'META' },
    ],
  },
}

let fake: FakePolygon
const waits: number[] = []
const sleep = async (ms: number) => {
  waits.push(ms)
}
const source = (key = KEY): Source =>
  polygonSource({
    apiKey: key,
    baseUrl: fake.url,
    ratePerMinute: 5,
    http: { ratePerSecond: 0, sleep, random: () => 1, backoffMs: 10 },
  })

before(async () => {
  fake = await startFakePolygon({ market: MARKET, key: KEY, pageSize: 2 })
})
after(() => fake.close())

/** adjClose[i] = close[i] · Π over actions ex after day i of (1/ratio | 1 − D / last close before the ex-date). */
function directAdjusted(
  bars: { date: string; close: number }[],
  actions: { date: string; split?: number; cash?: number }[],
): number[] {
  return bars.map((b) => {
    let f = 1
    for (const a of actions) {
      if (a.date <= b.date) continue
      const prior = bars.filter((x) => x.date < a.date)
      if (prior.length === 0 || prior.length === bars.length) continue
      if (a.split) f /= a.split
      if (a.cash) f *= 1 - a.cash / (prior[prior.length - 1] as { close: number }).close
    }
    return b.close * f
  })
}

describe('polygon source', () => {
  it('history: unadjusted bars, actions on their bars, the total-return adjusted close', async () => {
    const calls = fake.calls
    const bars = await source().prices?.history('AAPL', '2024-01-01', '2024-01-31')
    assert.ok(bars)
    const inputs = (MARKET.bars.AAPL ?? []).filter((b) => b.date <= '2024-01-31')
    assert.deepEqual(
      bars.map((b) => [b.date, b.close, b.volume]),
      inputs.map((b) => [b.date, b.close, b.volume]),
    )
    const expected = directAdjusted(inputs, [
      { date: '2024-01-05', split: 2 },
      { date: '2024-01-06', cash: 0.1 },
      { date: '2024-01-09', cash: 0.5 },
    ])
    for (const [i, b] of bars.entries())
      assert.ok(Math.abs(b.adjClose - (expected[i] as number)) < 1e-9, `${b.date}`)
    const last = bars[bars.length - 1] as DailyBar
    assert.equal(last.adjClose, last.close)
    // The day's total return across the split and across each dividend.
    const r = (i: number) => (bars[i] as DailyBar).adjClose / (bars[i - 1] as DailyBar).adjClose
    assert.ok(Math.abs(r(3) - (2 * 51) / 101) < 1e-12)
    assert.ok(Math.abs(r(4) - 52 / (51 - 0.1)) < 1e-12)
    assert.ok(Math.abs(r(5) - 53 / (52 - 0.5)) < 1e-12)
    assert.deepEqual(
      bars.map((b) => [b.splitFactor, b.dividend]),
      [
        [1, 0],
        [1, 0],
        [1, 0],
        [2, 0],
        [1, 0.1],
        [1, 0.5],
      ],
    )
    // aggregates, splits and dividends: one page each (two January dividends fill a page of 2 exactly).
    assert.equal(fake.calls - calls, 3)
    const aggs = fake.requests.find((q) => q.url.pathname.startsWith('/v2/aggs/ticker/AAPL'))
    assert.equal(aggs?.url.pathname, '/v2/aggs/ticker/AAPL/range/1/day/2024-01-01/2024-01-31')
    assert.equal(aggs?.url.searchParams.get('adjusted'), 'false')
    assert.equal(aggs?.url.searchParams.get('sort'), 'asc')
    assert.equal(aggs?.url.searchParams.get('limit'), '50000')
  })

  it('day: every ticker of the grouped daily, the day’s split and dividend folded in', async () => {
    const day = await source().prices?.day?.('2024-01-05')
    assert.ok(day)
    assert.deepEqual([...day.keys()].sort(), ['AAPL', 'BRK.B'])
    assert.deepEqual(day.get('AAPL'), {
      date: '2024-01-05',
      close: 51,
      adjClose: 51,
      volume: 2400,
      splitFactor: 2,
      dividend: 0,
    })
    assert.deepEqual(day.get('BRK.B'), {
      date: '2024-01-05',
      close: 360.5,
      adjClose: 360.5,
      volume: 300,
      splitFactor: 1,
      dividend: 0.25,
    })
    assert.deepEqual(await source().prices?.day?.('2024-01-06'), new Map())
  })

  it('actions.between follows next_url across pages; the client puts the key back', async () => {
    const before = fake.requests.length
    const actions = await source().actions?.between('2000-01-01', '2030-01-01')
    assert.deepEqual(
      actions?.map((a) => [a.ticker, a.date, a.kind, a.value]),
      [
        ['AAPL', '2020-08-31', 'split', 4],
        ['AAPL', '2024-01-05', 'split', 2],
        ['BRK.B', '2024-01-05', 'dividend', 0.25],
        ['AAPL', '2024-01-06', 'dividend', 0.1],
        ['AAPL', '2024-01-09', 'dividend', 0.5],
      ],
    )
    const sent = fake.requests.slice(before)
    const pages = sent.filter((q) => q.url.searchParams.has('cursor'))
    assert.equal(pages.length, 1) // dividends: 3 rows at page size 2
    for (const q of sent) assert.equal(q.url.searchParams.get('apiKey'), KEY)
  })

  it('securities.list: active and delisted, exchanges, types, CIK and FIGI', async () => {
    const list = await source().securities?.list()
    assert.ok(list)
    const by = new Map(list.map((l) => [l.ticker, l]))
    assert.equal(list.length, MARKET.tickers.length)
    assert.deepEqual(by.get('AAPL'), {
      ticker: 'AAPL',
      name: 'Apple Inc.',
      exchange: 'NASDAQ',
      assetType: 'stock',
      cik: 320193,
      permanentId: 'BBG000B9XRY4',
      firstDate: null,
      lastDate: null,
      active: true,
    })
    assert.equal(by.get('SPY')?.exchange, 'NYSE Arca')
    assert.equal(by.get('SPY')?.assetType, 'etf')
    assert.equal(by.get('BACPB')?.assetType, 'other')
    assert.equal(by.get('OLD')?.exchange, 'NYSE American')
    assert.deepEqual([by.get('FB')?.active, by.get('FB')?.lastDate], [false, '2022-06-09'])
  })

  it('securities.changes: from candidates, or from the listings delisted in the window', async () => {
    const meta = { date: '2022-06-09', from: 'FB', to: 'META', permanentId: 'BBG000MM2P62', cik: 1326801 }
    const s = source()
    assert.deepEqual(
      await s.securities?.changes?.('2022-01-01', '2022-12-31', { candidates: ['BBG000MM2P62', 'NOPE'] }),
      [meta],
    )
    assert.deepEqual(await s.securities?.changes?.('2022-01-01', '2022-12-31'), [meta])
    assert.deepEqual(
      await s.securities?.changes?.('2023-01-01', '2023-12-31', { candidates: ['BBG000MM2P62'] }),
      [],
    )
  })

  it('a bad key: 401 at once, the message names polygon and never the key', async () => {
    const calls = fake.calls
    await assert.rejects(
      source('wrong-key-999').prices?.day?.('2024-01-05') ?? Promise.resolve(),
      (e: unknown) => {
        assert.ok(e instanceof SourceError)
        assert.equal(e.status, 401)
        assert.match(e.message, /^polygon: HTTP 401 .*Unknown API Key/)
        assert.ok(!e.message.includes('wrong-key-999'))
        return true
      },
    )
    assert.equal(fake.calls - calls, 1)
  })

  it('429 with Retry-After, then success: the wait honours it', async () => {
    waits.length = 0
    fake.failNext(2, {
      kind: 'status',
      status: 429,
      retryAfter: 7,
      body: { status: 'ERROR', error: 'too many' },
    })
    const day = await source().prices?.day?.('2024-01-05')
    assert.equal(day?.size, 2)
    assert.deepEqual(waits, [7000, 7000])
  })

  it('a truncated body is retried', async () => {
    const calls = fake.calls
    fake.failNext(1, { kind: 'truncate' })
    const actions = await source().actions?.between('2024-01-09', '2024-01-09')
    assert.deepEqual(
      actions?.map((a) => a.value),
      [0.5],
    )
    assert.equal(fake.calls - calls, 3) // splits twice, dividends once
  })

  it('a malformed row is an error naming the field', async () => {
    fake.malformNext(1)
    await assert.rejects(
      source().prices?.history('AAPL', '2024-01-01', '2024-01-31') ?? Promise.resolve(),
      /polygon: bar of AAPL: c is not a number/,
    )
  })

  it('priceSourceFromEnv: the key is required by name; the rest configures the source', async () => {
    assert.throws(
      () => priceSourceFromEnv('polygon', {}),
      /^AppError: POLYGON_API_KEY is not set: get a key at https:\/\/polygon\.io\/.* or choose another --source$/,
    )
    assert.throws(
      () => priceSourceFromEnv('polygon', { POLYGON_API_KEY: KEY, POLYGON_RATE_PER_MINUTE: '0' }),
      /POLYGON_RATE_PER_MINUTE must be an integer in 1\.\.1000000/,
    )
    const s = priceSourceFromEnv('polygon', {
      POLYGON_API_KEY: KEY,
      POLYGON_BASE_URL: fake.url,
      POLYGON_RATE_PER_MINUTE: '600000',
    })
    assert.equal(s.name, 'polygon')
    assert.equal((await s.prices?.day?.('2024-01-05'))?.get('AAPL')?.close, 51)
  })
})
