import type { ModelStore } from '../../engine/model-store/reader.ts'
import type { ModelEnvironment, ModelRegistry } from '../models.ts'
import { etfOf } from './hedge-levels.ts'
import { dataOf, paginate } from './pagination.ts'
import { suggestTickers } from './tickers.ts'

/** The "magnificent seven", in this order; only those the store holds are listed. */
const MAG7 = ['AAPL', 'MSFT', 'GOOGL', 'AMZN', 'NVDA', 'META', 'TSLA'] as const
const TICKERS_DEFAULT_LIMIT = 100

export interface TickerInfo {
  ticker: string
  symbol: string
  name: string
  asset_type: 'stock' | 'etf'
  sector: string | null
  industry: string | null
  sector_etf: string | null
  subsector_etf: string | null
}

/**
 * One entry per security under its latest ticker, and only when that ticker still resolves to
 * it (a delisted security whose ticker was reused is reachable by its symbol key, not listed).
 * ETF columns are the codes in effect at data_as_of (null without a model that day). Built once
 * per store: the list does not change until a new build is swapped in.
 */
const listings = new WeakMap<ModelStore, Promise<TickerInfo[]>>()

function listingOf(store: ModelStore): Promise<TickerInfo[]> {
  let p = listings.get(store)
  if (!p) {
    p = (async () => {
      const last = store.calendar.length - 1
      const [sec, sub] = await Promise.all([
        store.crossSection('sector_etf', last),
        store.crossSection('subsector_etf', last),
      ])
      const out: TickerInfo[] = []
      store.symbols.forEach((s, i) => {
        const ticker = s.tickers[s.tickers.length - 1]?.ticker ?? s.symbol
        if (store.resolve(ticker) !== i) return
        out.push({
          ticker,
          symbol: s.symbol,
          name: s.name,
          asset_type: s.asset_type,
          sector: s.sector,
          industry: s.industry,
          sector_etf: etfOf(store, sec[i]),
          subsector_etf: etfOf(store, sub[i]),
        })
      })
      return out.sort((a, b) => a.ticker.localeCompare(b.ticker))
    })()
    listings.set(store, p)
  }
  return p
}

export interface TickersQuery {
  search?: string
  mag7?: boolean
  include_metadata?: boolean
  limit?: number
  cursor?: string
}

/**
 * GET /tickers (free). `search` matches a ticker prefix or a name substring, case-insensitive;
 * ranked exact ticker, then ticker prefix, then name match, each alphabetical. `mag7` keeps the
 * seven (in their usual order); both filters apply together. `count` is the number returned.
 * When a search matches nothing, `suggestions` lists close tickers.
 */
export async function listTickers(models: ModelRegistry, env: ModelEnvironment, q: TickersQuery) {
  const store = models.store(env)
  let rows = await listingOf(store)
  if (q.mag7) {
    const byTicker = new Map(rows.map((r) => [r.ticker, r]))
    rows = MAG7.flatMap((t) => byTicker.get(t) ?? [])
  }
  let suggestions: string[] | undefined
  const term = q.search?.trim() ?? ''
  if (term !== '') {
    const up = term.toUpperCase()
    const low = term.toLowerCase()
    const rank = (r: TickerInfo) =>
      r.ticker === up ? 0 : r.ticker.startsWith(up) ? 1 : r.name.toLowerCase().includes(low) ? 2 : 3
    rows = rows
      .map((r) => ({ r, k: rank(r) }))
      .filter((x) => x.k < 3)
      .sort((a, b) => a.k - b.k)
      .map((x) => x.r)
    if (rows.length === 0) suggestions = suggestTickers(store, up)
  }
  const page = paginate(rows, { limit: q.limit ?? TICKERS_DEFAULT_LIMIT, cursor: q.cursor }, dataOf(store), {
    search: term,
    mag7: q.mag7 ?? false,
    include_metadata: q.include_metadata ?? false,
  })
  rows = page.rows
  return {
    tickers: q.include_metadata ? rows : rows.map((r) => r.ticker),
    count: rows.length,
    total: page.total,
    next_cursor: page.next_cursor,
    data_as_of: store.dataAsOf,
    ...(suggestions ? { suggestions } : {}),
  }
}
