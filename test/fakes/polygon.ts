/**
 * A fake Polygon.io (Massive) on loopback, speaking Polygon's wire format from an in-memory market.
 *
 *   const p = await startFakePolygon({ key: 'k', pageSize: 2, market: {
 *     bars: { AAPL: [{ date: '2024-01-02', close: 185.6, volume: 1e6 }] },   // unadjusted
 *     splits: [{ ticker: 'AAPL', execution_date: '2020-08-31', split_from: 1, split_to: 4 }],
 *     dividends: [{ ticker: 'AAPL', ex_dividend_date: '2024-02-09', cash_amount: 0.24 }],
 *     tickers: [{ ticker: 'FB', name: 'Meta', primary_exchange: 'XNAS', type: 'CS', active: false,
 *                 cik: '0001326801', composite_figi: 'BBG000MM2P62', delisted_utc: '2022-06-09T00:00:00Z' }],
 *     events: { BBG000MM2P62: [{ date: '2012-05-18', ticker: 'FB' }, { date: '2022-06-09', ticker: 'META' }] },
 *   } })
 *   polygonSource({ apiKey: 'k', baseUrl: p.url, ratePerMinute: 6000 })
 *
 * Endpoints: `/v2/aggs/ticker/{T}/range/1/day/{from}/{to}` (`results` of `{v, vw, o, c, h, l, t, n}`,
 * `t` the New York midnight in Unix ms), `/v2/aggs/grouped/locale/us/market/stocks/{date}` (`T`
 * added), `/v3/reference/splits`, `/v3/reference/dividends` (`ticker`, `…date.gte/.lte` filters),
 * `/v3/reference/tickers` (`active` filter), `/vX/reference/tickers/{id}/events` (id: a composite
 * FIGI or a ticker). v3 listings are paginated by `pageSize`; `next_url` carries a cursor and no key.
 *
 * The key is required as `apiKey` or `Authorization: Bearer`: otherwise 401 `{"status":"ERROR",
 * "error":"Unknown API Key"}`. Misbehaviour: `failNext(n, fault)` (vendor-server.ts) and
 * `malformNext(n)`: the next n answers with results carry one whose close (`c`) or amount is a string.
 */
import { type FakeRequest, type Fault, page, startVendorServer } from './vendor-server.ts'

export interface FakePolygonBar {
  date: string
  close: number
  volume: number
}
export interface FakePolygonSplit {
  ticker: string
  execution_date: string
  split_from: number
  split_to: number
}
export interface FakePolygonDividend {
  ticker: string
  ex_dividend_date: string
  cash_amount: number
}
export interface FakePolygonTicker {
  ticker: string
  name: string
  primary_exchange: string
  type: string
  active: boolean
  cik?: string
  composite_figi?: string
  delisted_utc?: string
}
export interface FakePolygonMarket {
  bars: Record<string, FakePolygonBar[]>
  splits: FakePolygonSplit[]
  dividends: FakePolygonDividend[]
  tickers: FakePolygonTicker[]
  /** Composite FIGI → each ticker the entity took and the date it took it. */
  events: Record<string, { date: string; ticker: string }[]>
}

export interface FakePolygon {
  url: string
  readonly calls: number
  readonly requests: FakeRequest[]
  failNext(n: number, fault: Fault): void
  malformNext(n: number): void
  setMarket(m: FakePolygonMarket): void
  close(): Promise<void>
}

/** Unix ms of midnight in New York on `date` (EST or EDT), as Polygon stamps a daily bar. */
function nyMidnight(date: string): number {
  const utc = Date.parse(`${date}T12:00:00Z`)
  const name = new Intl.DateTimeFormat('en-US', { timeZone: 'America/New_York', timeZoneName: 'shortOffset' })
    .formatToParts(utc)
    .find((p) => p.type === 'timeZoneName')?.value
  const hours = Number(/GMT([+-]\d+)/.exec(name ?? '')?.[1] ?? '-5')
  return Date.parse(`${date}T00:00:00Z`) - hours * 3_600_000
}

const aggregate = (b: FakePolygonBar) => ({
  v: b.volume,
  vw: b.close,
  o: b.close,
  c: b.close,
  h: b.close,
  l: b.close,
  t: nyMidnight(b.date),
  n: 1,
})

function inRange(url: URL, field: string, date: string): boolean {
  const gte = url.searchParams.get(`${field}.gte`)
  const lte = url.searchParams.get(`${field}.lte`)
  return (gte === null || date >= gte) && (lte === null || date <= lte)
}

type Handler = (m: FakePolygonMarket, url: URL, parts: string[]) => unknown

const ROUTES: [RegExp, Handler][] = [
  [
    /^\/v2\/aggs\/ticker\/([^/]+)\/range\/1\/day\/([^/]+)\/([^/]+)$/,
    (m, _u, [t, from, to]) => {
      const rows = (m.bars[t as string] ?? []).filter(
        (b) => b.date >= (from as string) && b.date <= (to as string),
      )
      return {
        ticker: t,
        adjusted: false,
        queryCount: rows.length,
        resultsCount: rows.length,
        status: 'OK',
        results: rows.map(aggregate),
      }
    },
  ],
  [
    /^\/v2\/aggs\/grouped\/locale\/us\/market\/stocks\/([^/]+)$/,
    (m, _u, [date]) => {
      const rows = Object.entries(m.bars).flatMap(([T, bars]) =>
        bars.filter((b) => b.date === date).map((b) => ({ T, ...aggregate(b) })),
      )
      return {
        adjusted: false,
        queryCount: rows.length,
        resultsCount: rows.length,
        status: 'OK',
        ...(rows.length ? { results: rows } : {}),
      }
    },
  ],
]

export async function startFakePolygon(o: {
  market: FakePolygonMarket
  key?: string
  pageSize?: number
}): Promise<FakePolygon> {
  let market = o.market
  const key = o.key ?? 'polygon-test-key'
  const size = o.pageSize ?? 1000
  let malformed = 0

  const listing = (url: URL, base: string, all: readonly unknown[]) => {
    const limit = Math.min(Number(url.searchParams.get('limit') ?? size), size)
    const { rows, next } = page(all, url, limit)
    const more = new URL(url.pathname, base)
    if (next !== null)
      for (const [k, v] of url.searchParams) if (k !== 'apiKey' && k !== 'cursor') more.searchParams.set(k, v)
    if (next !== null) more.searchParams.set('cursor', String(next))
    return {
      results: rows,
      status: 'OK',
      request_id: 'fake',
      ...(next !== null ? { next_url: more.href } : {}),
    }
  }

  const answer = (url: URL, base: string): unknown => {
    const path = url.pathname
    for (const [re, h] of ROUTES) {
      const m = re.exec(path)
      if (m) return h(market, url, m.slice(1).map(decodeURIComponent))
    }
    const ticker = url.searchParams.get('ticker')
    if (path === '/v3/reference/splits')
      return listing(
        url,
        base,
        market.splits.filter(
          (s) => (!ticker || s.ticker === ticker) && inRange(url, 'execution_date', s.execution_date),
        ),
      )
    if (path === '/v3/reference/dividends')
      return listing(
        url,
        base,
        market.dividends.filter(
          (d) => (!ticker || d.ticker === ticker) && inRange(url, 'ex_dividend_date', d.ex_dividend_date),
        ),
      )
    if (path === '/v3/reference/tickers') {
      const active = url.searchParams.get('active')
      return listing(
        url,
        base,
        market.tickers.filter((t) => active === null || String(t.active) === active),
      )
    }
    const ev = /^\/vX\/reference\/tickers\/([^/]+)\/events$/.exec(path)
    if (ev) return events(market, decodeURIComponent(ev[1] as string))
    return null
  }

  const server = await startVendorServer((req, base) => {
    const bearer = req.headers.authorization === `Bearer ${key}`
    if (req.url.searchParams.get('apiKey') !== key && !bearer)
      return { status: 401, body: { status: 'ERROR', request_id: 'fake', error: 'Unknown API Key' } }
    const body = answer(req.url, base)
    if (body === null)
      return { status: 404, body: { status: 'NOT_FOUND', request_id: 'fake', message: 'Not found' } }
    const results = (body as { results?: unknown }).results
    if (malformed > 0 && Array.isArray(results) && results.length > 0) {
      malformed--
      const r = { ...(results[0] as Record<string, unknown>) }
      for (const f of ['c', 'cash_amount', 'split_to']) if (f in r) r[f] = 'n/a'
      results[0] = r
    }
    return { body }
  })
  return {
    url: server.url,
    get calls() {
      return server.calls
    },
    requests: server.requests,
    failNext: server.failNext,
    malformNext(n) {
      malformed += n
    },
    setMarket(m) {
      market = m
    },
    close: server.close,
  }
}

function events(m: FakePolygonMarket, id: string): unknown {
  const figi = m.events[id] ? id : m.tickers.find((t) => t.active && t.ticker === id)?.composite_figi
  const list = figi ? m.events[figi] : undefined
  if (!figi || !list) return null
  const t = m.tickers.find((x) => x.composite_figi === figi)
  return {
    results: {
      name: t?.name ?? '',
      composite_figi: figi,
      cik: t?.cik ?? '',
      events: list.map((e) => ({ date: e.date, ticker_change: { ticker: e.ticker }, type: 'ticker_change' })),
    },
    status: 'OK',
    request_id: 'fake',
  }
}
