/**
 * Polygon's ticker reference: every stock and ETF listing, active and delisted
 * (`/v3/reference/tickers`), and the ticker changes of an entity (`/vX/reference/tickers/{id}/events`,
 * experimental at Polygon: one call per security, keyed best by composite FIGI, since a ticker
 * names only the entity that holds it today).
 */
import { canonicalTicker } from '../data/aliases.ts'
import type { HttpClient } from './http.ts'
import { fail, paged, type Row, text } from './polygon-wire.ts'
import type { ChangeOptions, Exchange, Listing, SecuritiesCapability, TickerChange } from './types.ts'

/** Polygon's `primary_exchange` is a market identifier code (ISO 10383). */
const EXCHANGES: Record<string, Exchange> = {
  XNYS: 'NYSE',
  XNAS: 'NASDAQ',
  XASE: 'NYSE American',
  ARCX: 'NYSE Arca',
  BATS: 'BATS',
}

/** CS common stock, ADRC an ADR of common shares, ETF. Preferreds, warrants, units…: other. */
const TYPES: Record<string, Listing['assetType']> = { CS: 'stock', ADRC: 'stock', ETF: 'etf' }

const str = (v: unknown): string | null => (typeof v === 'string' && v !== '' ? v : null)

function cikOf(v: unknown): number | null {
  const s = str(v)
  return s !== null && /^\d{1,10}$/.test(s) ? Number(s) : null
}

function listingOf(r: Row): Listing {
  const what = `ticker ${String(r.ticker)}`
  const delisted = str(r.delisted_utc)
  return {
    ticker: canonicalTicker(text(r, 'ticker', what)),
    name: str(r.name) ?? '',
    exchange: EXCHANGES[str(r.primary_exchange) ?? ''] ?? 'other',
    assetType: TYPES[str(r.type) ?? ''] ?? 'other',
    cik: cikOf(r.cik),
    permanentId: str(r.composite_figi),
    firstDate: null,
    lastDate: delisted === null ? null : delisted.slice(0, 10),
    active: r.active === true,
  }
}

interface Events {
  cik: number | null
  figi: string | null
  /** Each ticker the entity has had, from the date it took it. */
  tickers: { date: string; ticker: string }[]
}

async function eventsOf(api: HttpClient, id: string, signal?: AbortSignal): Promise<Events | null> {
  const path = `vX/reference/tickers/${encodeURIComponent(id)}/events`
  const body = await api.getJson<{ results?: Row }>(path, {
    query: { types: 'ticker_change' },
    signal,
    allow: [404],
  })
  const r = body?.results
  if (r === undefined) return null
  if (!Array.isArray(r.events)) fail(`events of ${id}: results.events is not a list`)
  const tickers = (r.events as Row[])
    .filter((e) => e.type === 'ticker_change')
    .map((e) => {
      const change = e.ticker_change as Row | undefined
      const ticker = change
        ? text(change, 'ticker', `event of ${id}`)
        : fail(`event of ${id}: no ticker_change`)
      return { date: text(e, 'date', `event of ${id}`), ticker: canonicalTicker(ticker) }
    })
    .sort((a, b) => (a.date < b.date ? -1 : 1))
  return { cik: cikOf(r.cik), figi: str(r.composite_figi) ?? str(r.figi), tickers }
}

export function polygonSecurities(api: HttpClient, base: string): SecuritiesCapability {
  async function list(o: { signal?: AbortSignal } = {}): Promise<Listing[]> {
    const out: Listing[] = []
    for (const active of ['true', 'false']) {
      const query = { market: 'stocks', active, limit: 1000 }
      for await (const r of paged(api, base, 'v3/reference/tickers', query, o.signal)) out.push(listingOf(r))
    }
    return out
  }
  return {
    list,
    async changes(from, to, o: ChangeOptions = {}) {
      const ids =
        o.candidates ??
        (await list(o))
          .filter(
            (l) =>
              !l.active &&
              l.permanentId !== null &&
              l.lastDate !== null &&
              l.lastDate >= from &&
              l.lastDate <= to,
          )
          .map((l) => l.permanentId as string)
      const out = new Map<string, TickerChange>()
      for (const id of new Set(ids)) {
        const ev = await eventsOf(api, id, o.signal)
        if (!ev) continue
        for (let i = 1; i < ev.tickers.length; i++) {
          const [prev, next] = [ev.tickers[i - 1], ev.tickers[i]] as [
            Events['tickers'][0],
            Events['tickers'][0],
          ]
          if (next.date < from || next.date > to || prev.ticker === next.ticker) continue
          const change = {
            date: next.date,
            from: prev.ticker,
            to: next.ticker,
            permanentId: ev.figi,
            cik: ev.cik,
          }
          out.set(`${change.date} ${change.from} ${change.to}`, change)
        }
      }
      return [...out.values()].sort((a, b) => (a.date < b.date ? -1 : a.date > b.date ? 1 : 0))
    },
  }
}
