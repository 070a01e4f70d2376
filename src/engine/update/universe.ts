/**
 * Which securities erm3 fetches: the US common stocks a listing source has on NYSE, NASDAQ and
 * NYSE American (delisted ones too when the source lists them, recorded for the survivorship
 * note), every ETF of the factor registry, plus an include list and minus an exclude list.
 */
import { readFile } from 'node:fs/promises'
import { InputError } from '../../platform/errors.ts'
import { canonicalTicker, isValidTicker } from '../data/aliases.ts'
import { ETF_INFO, MARKET_ETF } from '../data/etf-registry.ts'
import type { Exchange, Listing } from '../sources/types.ts'

const STOCK_EXCHANGES: ReadonlySet<Exchange> = new Set(['NYSE', 'NASDAQ', 'NYSE American'])

export interface UniverseOptions {
  /** Fetched whatever the listing says (a ticker it lacks is fetched as a stock). */
  include?: readonly string[]
  /** Never fetched (the market ETF excepted: the calendar needs it). */
  exclude?: readonly string[]
  /** Only these stocks (the registry ETFs are always fetched: the factors need them). */
  tickers?: readonly string[]
}

export interface Universe {
  listings: Listing[]
  /** Delisted stocks included (the source lists them): survivorship is covered that far. */
  delisted: string[]
  /** Registry ETFs and included tickers the listing does not know (fetched anyway). */
  unlisted: string[]
}

function bare(ticker: string, assetType: 'stock' | 'etf'): Listing {
  const name = assetType === 'etf' ? (ETF_INFO[ticker]?.name ?? ticker) : ticker
  return {
    ticker,
    name,
    exchange: assetType === 'etf' ? 'NYSE Arca' : 'other',
    assetType,
    cik: null,
    permanentId: null,
    firstDate: null,
    lastDate: null,
    active: true,
  }
}

export function selectUniverse(all: readonly Listing[], o: UniverseOptions = {}): Universe {
  const norm = all.map((l) => ({ ...l, ticker: canonicalTicker(l.ticker) }))
  const exclude = new Set(o.exclude ?? [])
  exclude.delete(MARKET_ETF)
  const only = o.tickers ? new Set(o.tickers) : null
  const picked = new Map<string, Listing[]>()
  const add = (l: Listing) => picked.set(l.ticker, [...(picked.get(l.ticker) ?? []), l])
  for (const l of norm) {
    if (l.assetType !== 'stock' || !STOCK_EXCHANGES.has(l.exchange)) continue
    if (only && !only.has(l.ticker)) continue
    add(l)
  }
  const unlisted: string[] = []
  const byTicker = new Map(norm.map((l) => [l.ticker, l]))
  const want = (t: string, type: 'stock' | 'etf') => {
    if (picked.has(t)) return
    const l = byTicker.get(t)
    if (l && l.assetType !== 'other') add(l)
    else {
      unlisted.push(t)
      add(bare(t, type))
    }
  }
  for (const etf of Object.keys(ETF_INFO)) want(etf, 'etf')
  for (const t of [...(o.include ?? []), ...(o.tickers ?? [])]) want(t, 'stock')
  const listings = [...picked.values()].flat().filter((l) => !exclude.has(l.ticker))
  const delisted = listings.filter((l) => l.assetType === 'stock' && !l.active).map((l) => l.ticker)
  return {
    listings,
    delisted: [...new Set(delisted)].sort(),
    unlisted: unlisted.filter((t) => !exclude.has(t)),
  }
}

/** A list of tickers, one a line; `#` starts a comment; spellings are made canonical (BRK-B → BRK.B). */
export async function readTickerList(file: string): Promise<string[]> {
  const text = await readFile(file, 'utf8').catch((e: Error) => {
    throw new InputError({ file }, `cannot read the ticker list: ${e.message}`)
  })
  return parseTickers(text.split('\n'), file)
}

/** Tickers given inline (`--tickers A,B`) or by file line; invalid ones are an error naming them. */
export function parseTickers(items: readonly string[], where: string): string[] {
  const out: string[] = []
  items.forEach((raw, i) => {
    const s = raw.replace(/#.*/, '').trim()
    if (s === '') return
    const t = canonicalTicker(s)
    if (!isValidTicker(t)) throw new InputError({ file: where, line: i + 1 }, `"${s}" is not a ticker`)
    out.push(t)
  })
  return [...new Set(out)]
}
