/**
 * Tiingo (docs/sources/prices.md): end-of-day prices of one ticker per call, with Tiingo's own
 * total-return adjusted close, and the daily list of every ticker it has covered, delisted ones
 * included.
 *
 * No `prices.day`: Tiingo's all-tickers endpoint (`/tiingo/daily/prices`) answers only the latest
 * day and takes no date, so it cannot serve the date the pipeline asks for.
 */
import { parse } from 'csv-parse/sync'
import { fromBufferPromise } from 'yauzl'
import { canonicalTicker } from '../data/aliases.ts'
import { HttpClient, type HttpClientOptions, SourceError } from './http.ts'
import type { CallOptions, DailyBar, Exchange, Listing, Source } from './types.ts'

export interface TiingoOptions {
  apiKey: string
  /** The REST API, e.g. https://api.tiingo.com. */
  baseUrl: string
  /** supported_tickers.zip, on another host: the token is never sent to it. */
  tickersUrl: string
  /** Tiingo counts its quota in requests an hour. */
  ratePerHour: number
  /** For tests: retries, backoff, the sleep. */
  http?: Partial<HttpClientOptions>
}

/** Tiingo spells share classes with a dash (`BRK-B`); erm3 with a dot (`BRK.B`). */
const tiingoTicker = (canonical: string) => canonical.replace('.', '-')

const isDay = (s: unknown): s is string => typeof s === 'string' && /^\d{4}-\d{2}-\d{2}/.test(s)

function num(row: Record<string, unknown>, field: string, where: () => string): number {
  const v = row[field]
  if (typeof v !== 'number' || !Number.isFinite(v))
    throw new SourceError('tiingo', 200, `${where()}: ${field} is not a number`)
  return v
}

function toBar(raw: unknown, i: number, ticker: string): DailyBar {
  const where = () => `malformed price row ${i + 1} of ${ticker}`
  if (typeof raw !== 'object' || raw === null)
    throw new SourceError('tiingo', 200, `${where()}: not an object`)
  const row = raw as Record<string, unknown>
  if (!isDay(row.date)) throw new SourceError('tiingo', 200, `${where()}: date is not YYYY-MM-DD…`)
  const volume = row.volume === null || row.volume === undefined ? null : num(row, 'volume', where)
  return {
    date: row.date.slice(0, 10),
    close: num(row, 'close', where),
    adjClose: num(row, 'adjClose', where),
    volume,
    splitFactor: num(row, 'splitFactor', where),
    dividend: num(row, 'divCash', where),
  }
}

const EXCHANGES: Record<string, Exchange> = {
  NYSE: 'NYSE',
  NASDAQ: 'NASDAQ',
  'NYSE MKT': 'NYSE American',
  AMEX: 'NYSE American',
  'NYSE ARCA': 'NYSE Arca',
  ARCA: 'NYSE Arca',
  BATS: 'BATS',
  OTCMKTS: 'OTC',
  OTCBB: 'OTC',
  OTCGREY: 'OTC',
  PINK: 'OTC',
}

const ASSET_TYPES: Record<string, Listing['assetType']> = { Stock: 'stock', ETF: 'etf' }

/** The one CSV inside supported_tickers.zip. */
async function csvInZip(zipBytes: Uint8Array): Promise<string> {
  const zip = await fromBufferPromise(Buffer.from(zipBytes), { lazyEntries: true })
  try {
    for await (const entry of zip.eachEntry()) {
      if (!entry.fileName.toLowerCase().endsWith('.csv')) continue
      const chunks: Buffer[] = []
      for await (const c of await zip.openReadStreamPromise(entry)) chunks.push(c as Buffer)
      return Buffer.concat(chunks).toString('utf8')
    }
  } finally {
    zip.close()
  }
  throw new SourceError('tiingo', 200, 'supported_tickers.zip holds no CSV file')
}

/** A listing is active when its last price is within a week of the newest in the file. */
function toListings(rows: Record<string, string>[]): Listing[] {
  const usd = rows.filter((r) => r.priceCurrency === 'USD' && r.ticker)
  const newest = usd.reduce((m, r) => (r.endDate && r.endDate > m ? r.endDate : m), '')
  const activeFrom = newest ? new Date(Date.parse(newest) - 7 * 86_400_000).toISOString().slice(0, 10) : ''
  return usd.map((r) => {
    const active = Boolean(r.endDate) && (r.endDate as string) >= activeFrom
    return {
      ticker: canonicalTicker(r.ticker as string),
      name: '',
      exchange: EXCHANGES[(r.exchange ?? '').toUpperCase()] ?? 'other',
      assetType: ASSET_TYPES[r.assetType ?? ''] ?? 'other',
      cik: null,
      permanentId: null,
      firstDate: r.startDate || null,
      lastDate: active ? null : r.endDate || null,
      active,
    }
  })
}

export function tiingoSource(o: TiingoOptions): Source {
  const api = new HttpClient({
    source: 'tiingo',
    baseUrl: o.baseUrl,
    headers: { authorization: `Token ${o.apiKey}` },
    ratePerSecond: o.ratePerHour / 3600,
    ...o.http,
  })
  const files = new HttpClient({ source: 'tiingo', baseUrl: new URL('.', o.tickersUrl).href, ...o.http })
  return {
    name: 'tiingo',
    prices: {
      async history(ticker, from, to, c: CallOptions = {}) {
        const path = `tiingo/daily/${encodeURIComponent(tiingoTicker(ticker))}/prices`
        const query = { startDate: from, endDate: to ?? undefined }
        const rows = await api.getJson<unknown>(path, { query, signal: c.signal })
        if (!Array.isArray(rows))
          throw new SourceError('tiingo', 200, `prices of ${ticker}: expected a JSON array`)
        return rows.map((r, i) => toBar(r, i, ticker))
      },
    },
    securities: {
      async list(c: CallOptions = {}) {
        const a = await files.get(o.tickersUrl, { signal: c.signal })
        const csv = await csvInZip(a.body)
        return toListings(parse(csv, { columns: true, skip_empty_lines: true, bom: true }))
      },
    },
  }
}
