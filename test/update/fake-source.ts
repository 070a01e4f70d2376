import { gzipSync } from 'node:zlib'
import type { Dataset } from '../../src/engine/data/format.ts'
import { generateSynthetic } from '../../src/engine/data/synth/index.ts'
import { SourceError } from '../../src/engine/sources/http.ts'
import type { DailyBar, Listing, Source, SourceName } from '../../src/engine/sources/types.ts'
import { isoFromDay, parseIsoDay } from '../../src/platform/dates.ts'

/**
 * An in-memory market behind the `Source` interface: erm3's synthetic market, each symbol key
 * listed under itself as a ticker (reused-ticker keys, which are not tickers, are left out),
 * shares outstanding as quarterly filings 30 days after each quarter, counted calls, and tasks
 * that can be made to fail.
 */
export interface FakeMarket {
  ds: Dataset
  /** Calls per `capability:argument`. */
  calls: Map<string, number>
  /** `history:TICKER`, `shares:CIK`, … that throw an upstream error. */
  failing: Set<string>
  /** Called before each call (a test aborts a run from here). */
  onCall?: (key: string) => void
}

export const FILING_LAG_DAYS = 30
export const QUARTER_SESSIONS = 63

export function fakeMarket(stocks = 20, start = '2020-01-02', end = '2021-03-31', seed = 3): FakeMarket {
  const ds = generateSynthetic({ seed, stocks, start, end, fundamentals: false })
  return { ds, calls: new Map(), failing: new Set() }
}

/** Symbols the fake lists (those whose key is itself a ticker). */
export function listedSymbols(m: FakeMarket): string[] {
  return m.ds.symbols.filter((s) => /^[A-Z0-9][A-Z0-9.-]{0,11}$/.test(s))
}

function count(m: FakeMarket, key: string): void {
  m.onCall?.(key)
  m.calls.set(key, (m.calls.get(key) ?? 0) + 1)
  if (m.failing.has(key)) throw new SourceError('fake', 503, `${key}: service unavailable`)
}

export function fakeBars(m: FakeMarket, ticker: string, from: string, to: string | null): DailyBar[] {
  const k = m.ds.symbols.indexOf(ticker)
  if (k < 0) return []
  const out: DailyBar[] = []
  const { adj_close, close, volume } = m.ds.prices
  m.ds.calendar.forEach((d, t) => {
    const date = isoFromDay(d)
    if (date < from || (to !== null && date > to) || Number.isNaN(adj_close[k][t])) return
    const c = close?.[k][t] ?? Number.NaN
    const v = volume?.[k][t] ?? Number.NaN
    out.push({
      date,
      close: Number.isNaN(c) ? adj_close[k][t] : c,
      adjClose: adj_close[k][t],
      volume: Number.isNaN(v) ? null : v,
      splitFactor: 1,
      dividend: 0,
    })
  })
  return out
}

function listings(m: FakeMarket): Listing[] {
  const last = m.ds.calendar.length - 1
  return listedSymbols(m).map((symbol) => {
    const k = m.ds.symbols.indexOf(symbol)
    const row = m.ds.securities.filter((r) => r.symbol === symbol).at(-1)
    const px = m.ds.prices.adj_close[k]
    const first = px.findIndex((v) => !Number.isNaN(v))
    let lastT = px.length - 1
    while (lastT > 0 && Number.isNaN(px[lastT])) lastT--
    const stock = row?.assetType === 'stock'
    return {
      ticker: symbol,
      name: row?.name ?? symbol,
      exchange: stock ? 'NYSE' : 'NYSE Arca',
      assetType: stock ? 'stock' : 'etf',
      cik: stock ? (row?.cik ?? null) : null,
      permanentId: `P${symbol}`,
      firstDate: isoFromDay(m.ds.calendar[Math.max(first, 0)]),
      lastDate: lastT === last ? null : isoFromDay(m.ds.calendar[lastT]),
      active: lastT === last,
    }
  })
}

/** The quarterly cover-page counts of the stock with this CIK. */
export function fakeShares(m: FakeMarket, cik: number) {
  const k = m.ds.symbols.findIndex((s) => m.ds.securities.some((r) => r.symbol === s && r.cik === cik))
  const shares = m.ds.prices.shares_out?.[k]
  if (k < 0 || !shares) return []
  const out = []
  for (let t = 0; t < m.ds.calendar.length; t += QUARTER_SESSIONS) {
    if (Number.isNaN(shares[t])) continue
    const end = m.ds.calendar[t]
    out.push({ cik, end: isoFromDay(end), filed: isoFromDay(end + FILING_LAG_DAYS), shares: shares[t] })
  }
  return out
}

export function fakeSource(m: FakeMarket, name: SourceName = 'tiingo'): Source {
  return {
    name,
    prices: {
      history: async (ticker, from, to) => {
        count(m, `history:${ticker}`)
        return fakeBars(m, ticker, from, to)
      },
    },
    securities: {
      list: async () => {
        count(m, 'list')
        return listings(m)
      },
    },
    shares: {
      shares: async (cik) => {
        count(m, `shares:${cik}`)
        return fakeShares(m, cik)
      },
    },
    fundamentals: {
      companyFacts: async (cik) => {
        count(m, `facts:${cik}`)
        return { cik, gzipped: gzipSync(JSON.stringify({ cik, entityName: `Company ${cik}`, facts: {} })) }
      },
    },
    rates: {
      tbill3m: async (from, to) => {
        count(m, 'rates')
        const r = m.ds.rates
        if (!r) return []
        const k = r.tenors.indexOf('3m')
        const lo = parseIsoDay(from) ?? 0
        const hi = parseIsoDay(to) ?? 0
        return Array.from(r.days)
          .map((d, i) => ({ date: isoFromDay(d), value: r.values[k][i], d }))
          .filter((p) => p.d >= lo && p.d <= hi && !Number.isNaN(p.value))
          .map(({ date, value }) => ({ date, value }))
      },
    },
  }
}
