/**
 * The market of `bench/update.ts` in vendor form, from a synthetic dataset: every bar is the
 * synthetic adjusted close as both close and adjusted close, with no splits or dividends (the
 * vendors' adjustment is not what is measured), and the synthetic volume.
 *
 * - `tiingoMarket`: the per-ticker histories of some stocks (listed over the whole history) and
 *   of every registry ETF the generator has, for the Tiingo fake (the backfill);
 * - `polygonDay`: one session's grouped daily bars for the Polygon fake (the daily update);
 * - `writeDataDir`: a data directory holding every session before the last, written directly
 *   with the data directory's own writers (what a finished backfill leaves, without its hours of
 *   vendor calls): the identity registry, classification, rates, shares points and bars.
 */
import type { Dataset, SecurityRow } from '../../src/engine/data/format.ts'
import type { DailyBar, SharesPoint } from '../../src/engine/sources/types.ts'
import { writeBars } from '../../src/engine/update/data-dir.ts'
import { writeClassification, writeRates, writeShares } from '../../src/engine/update/dir-files.ts'
import { writeIdentity } from '../../src/engine/update/identity.ts'
import { isoFromDay } from '../../src/platform/dates.ts'
import type { FakePolygonMarket } from '../../test/fakes/polygon.ts'
import type { FakeTiingoMarket } from '../../test/fakes/tiingo.ts'

/** symbol → its latest registry window (the ticker a vendor keys it by today). */
export function latestWindows(ds: Dataset): Map<string, SecurityRow> {
  const out = new Map<string, SecurityRow>()
  for (const r of ds.securities) {
    const k = out.get(r.symbol)
    if (!k || r.validFrom > k.validFrom) out.set(r.symbol, r)
  }
  return out
}

/** Symbol index i's bars on sessions [0, end). */
function barsOf(ds: Dataset, i: number, end: number): DailyBar[] {
  const adj = ds.prices.adj_close[i]
  const vol = ds.prices.volume?.[i]
  const out: DailyBar[] = []
  for (let t = 0; t < end; t++) {
    if (Number.isNaN(adj[t])) continue
    const v = vol?.[t] ?? Number.NaN
    out.push({
      date: isoFromDay(ds.calendar[t]),
      close: adj[t],
      adjClose: adj[t],
      volume: Number.isNaN(v) ? null : v,
      splitFactor: 1,
      dividend: 0,
    })
  }
  return out
}

/** The symbols the backfill fetches: `stocks` stocks listed under one ticker to the end, and the ETFs. */
export function backfillSymbols(ds: Dataset, stocks: number): { stocks: string[]; etfs: string[] } {
  const windows = new Map<string, number>()
  for (const r of ds.securities) windows.set(r.symbol, (windows.get(r.symbol) ?? 0) + 1)
  const latest = latestWindows(ds)
  const listed = ds.symbols.filter((s) => {
    const r = latest.get(s)
    return r?.assetType === 'stock' && r.validTo === null && windows.get(s) === 1
  })
  const etfs = ds.symbols.filter((s) => latest.get(s)?.assetType === 'etf')
  return { stocks: listed.slice(0, stocks), etfs }
}

export function tiingoMarket(ds: Dataset, symbols: readonly string[]): FakeTiingoMarket {
  const latest = latestWindows(ds)
  const T = ds.calendar.length
  const market: FakeTiingoMarket = { prices: {}, listings: [] }
  for (const s of symbols) {
    const r = latest.get(s) as SecurityRow
    const bars = barsOf(ds, ds.symbols.indexOf(s), T)
    const ticker = r.ticker.replace('.', '-')
    market.prices[ticker] = bars.map((b) => ({
      date: b.date,
      close: b.close,
      adjClose: b.adjClose,
      volume: b.volume ?? 0,
      divCash: 0,
      splitFactor: 1,
    }))
    market.listings.push({
      ticker,
      exchange: r.assetType === 'etf' ? 'NYSE ARCA' : 'NYSE',
      assetType: r.assetType === 'etf' ? 'ETF' : 'Stock',
      priceCurrency: 'USD',
      startDate: bars[0]?.date ?? '',
      endDate: bars[bars.length - 1]?.date ?? '',
    })
  }
  return market
}

/** Session t's bars of every security listed on it, keyed by its ticker that day. */
export function polygonDay(ds: Dataset, t: number): FakePolygonMarket {
  const day = isoFromDay(ds.calendar[t])
  const bars: FakePolygonMarket['bars'] = {}
  const latest = latestWindows(ds)
  ds.symbols.forEach((s, i) => {
    const r = latest.get(s) as SecurityRow
    const adj = ds.prices.adj_close[i][t]
    if (Number.isNaN(adj) || (r.validTo !== null && r.validTo < day)) return
    const v = ds.prices.volume?.[i][t] ?? Number.NaN
    bars[r.ticker] = [{ date: day, close: adj, volume: Number.isNaN(v) ? 0 : v }]
  })
  return { bars, splits: [], dividends: [], tickers: [], events: {} }
}

/**
 * Shares points as a filer's quarterly cover pages would give them: the count on every 63rd
 * session with a price, known from that day.
 */
function sharesPoints(ds: Dataset, i: number, cik: number, end: number): SharesPoint[] {
  const col = ds.prices.shares_out?.[i]
  const out: SharesPoint[] = []
  if (!col) return out
  for (let t = 0; t < end; t += 63) {
    if (Number.isNaN(col[t])) continue
    const day = isoFromDay(ds.calendar[t])
    out.push({ cik, end: day, filed: day, shares: col[t] })
  }
  return out
}

/** A data directory holding sessions [0, end) of `ds`; returns the number of bars written. */
export async function writeDataDir(ds: Dataset, dataDir: string, end: number): Promise<number> {
  const latest = latestWindows(ds)
  await writeIdentity(
    dataDir,
    ds.securities.map((r) => ({
      symbol: r.symbol,
      ticker: r.ticker,
      name: r.name,
      assetType: r.assetType,
      exchange: '',
      cik: r.cik,
      permanentId: null,
      validFrom: r.validFrom,
      validTo: r.validTo,
    })),
  )
  const stocks = [...latest.values()].filter((r) => r.assetType === 'stock')
  await writeClassification(
    dataDir,
    stocks.map((r) => ({
      symbol: r.symbol,
      sector: r.sector ?? '',
      industry: r.industry,
      source: 'bench',
      industryEtf: null,
    })),
  )
  const rates = ds.rates
  const k = rates?.tenors.indexOf('3m') ?? -1
  if (rates && k >= 0) {
    const points = Array.from(rates.days, (d, j) => ({ date: isoFromDay(d), value: rates.values[k][j] }))
    await writeRates(
      dataDir,
      points.filter((p) => !Number.isNaN(p.value) && p.date < isoFromDay(ds.calendar[end])),
    )
  }
  let n = 0
  for (const [i, symbol] of ds.symbols.entries()) {
    const bars = barsOf(ds, i, end)
    n += bars.length
    await writeBars(dataDir, symbol, bars)
    const cik = latest.get(symbol)?.cik
    if (cik !== null && cik !== undefined) await writeShares(dataDir, cik, sharesPoints(ds, i, cik, end))
  }
  return n
}
