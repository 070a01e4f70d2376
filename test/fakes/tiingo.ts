/**
 * A fake Tiingo on loopback, speaking Tiingo's wire format from an in-memory market.
 *
 *   const t = await startFakeTiingo({ key: 'k', market: {
 *     prices: { 'BRK-B': [{ date: '2024-01-02', close: 360, adjClose: 358, volume: 100, divCash: 0, splitFactor: 1 }] },
 *     listings: [{ ticker: 'BRK-B', exchange: 'NYSE', assetType: 'Stock', priceCurrency: 'USD', startDate: '1996-05-09', endDate: '2024-01-02' }],
 *   } })
 *   tiingoSource({ apiKey: 'k', baseUrl: t.url, tickersUrl: t.tickersUrl, ratePerHour: 3600 })
 *
 * - `GET /tiingo/daily/{ticker}/prices?startDate&endDate`: rows of `market.prices[ticker]` (Tiingo
 *   spelling, e.g. `BRK-B`; case-insensitive) within the dates, `date` as `YYYY-MM-DDT00:00:00.000Z`;
 *   an unknown ticker is Tiingo's 404 `{"detail": "Error: Ticker 'X' not found"}`.
 * - `Authorization: Token <key>` is required there: otherwise 401 `{"detail": "Invalid token."}`.
 * - `GET /docs/tiingo/daily/supported_tickers.zip` (`tickersUrl`, no token): a zip holding
 *   `supported_tickers.csv` built from `market.listings`.
 * - Misbehaviour: `failNext(n, fault)` (429 + Retry-After, 5xx, truncated body; see
 *   vendor-server.ts); `malformNext(n)`: the next n price answers carry a row whose `close` is a string.
 * - `calls`, `requests` count and record what arrived; `setMarket` swaps the market.
 */
import yazl from 'yazl'
import { type FakeRequest, type Fault, startVendorServer } from './vendor-server.ts'

export interface FakeTiingoRow {
  date: string
  close: number
  adjClose: number
  volume: number
  divCash: number
  splitFactor: number
}

export interface FakeTiingoListing {
  ticker: string
  exchange: string
  assetType: string
  priceCurrency: string
  startDate: string
  endDate: string
}

export interface FakeTiingoMarket {
  prices: Record<string, FakeTiingoRow[]>
  listings: FakeTiingoListing[]
}

export interface FakeTiingo {
  url: string
  tickersUrl: string
  readonly calls: number
  readonly requests: FakeRequest[]
  failNext(n: number, fault: Fault): void
  malformNext(n: number): void
  setMarket(m: FakeTiingoMarket): void
  close(): Promise<void>
}

const ZIP_PATH = '/docs/tiingo/daily/supported_tickers.zip'

function zipOf(listings: readonly FakeTiingoListing[]): Promise<Buffer> {
  const header = 'ticker,exchange,assetType,priceCurrency,startDate,endDate'
  const lines = listings.map((l) =>
    [l.ticker, l.exchange, l.assetType, l.priceCurrency, l.startDate, l.endDate].join(','),
  )
  const zip = new yazl.ZipFile()
  zip.addBuffer(Buffer.from(`${[header, ...lines].join('\r\n')}\r\n`), 'supported_tickers.csv')
  zip.end()
  const chunks: Buffer[] = []
  return new Promise((resolve, reject) => {
    zip.outputStream.on('data', (c: Buffer) => chunks.push(c))
    zip.outputStream.on('end', () => resolve(Buffer.concat(chunks)))
    zip.outputStream.on('error', reject)
  })
}

export async function startFakeTiingo(o: { market: FakeTiingoMarket; key?: string }): Promise<FakeTiingo> {
  let market = o.market
  const key = o.key ?? 'tiingo-test-key'
  let malformed = 0
  const server = await startVendorServer(async (req) => {
    const path = req.url.pathname
    if (path === ZIP_PATH) return { body: await zipOf(market.listings), contentType: 'application/zip' }
    if (req.headers.authorization !== `Token ${key}`)
      return { status: 401, body: { detail: 'Invalid token.' } }
    const m = /^\/tiingo\/daily\/([^/]+)\/prices$/.exec(path)
    if (!m) return { status: 404, body: { detail: 'Not found.' } }
    const wanted = decodeURIComponent(m[1] as string).toUpperCase()
    const rows = Object.entries(market.prices).find(([t]) => t.toUpperCase() === wanted)?.[1]
    if (!rows) return { status: 404, body: { detail: `Error: Ticker '${wanted}' not found` } }
    const from = req.url.searchParams.get('startDate') ?? '0000-00-00'
    const to = req.url.searchParams.get('endDate') ?? '9999-99-99'
    const body = rows
      .filter((r) => r.date >= from && r.date <= to)
      .map((r) => ({
        date: `${r.date}T00:00:00.000Z`,
        close: r.close,
        high: r.close,
        low: r.close,
        open: r.close,
        volume: r.volume,
        adjClose: r.adjClose,
        adjHigh: r.adjClose,
        adjLow: r.adjClose,
        adjOpen: r.adjClose,
        adjVolume: r.volume,
        divCash: r.divCash,
        splitFactor: r.splitFactor,
      }))
    if (malformed > 0 && body.length > 0) {
      malformed--
      ;(body[body.length - 1] as Record<string, unknown>).close = 'n/a'
    }
    return { body }
  })
  return {
    url: server.url,
    tickersUrl: `${server.url}${ZIP_PATH}`,
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
