import { parseIsoDay } from '../../platform/dates.ts'
import { AppError } from '../../platform/errors.ts'
import { MARKET_ETF } from '../data/etf-registry.ts'
import type { Dataset, SecurityRow } from '../data/format.ts'
import { columnsOf } from '../model/columns.ts'
import { type DefaultUniverseBasis, defaultUniverseBasis } from '../model/cross/index.ts'
import type { Panel } from '../model/panel.ts'

/**
 * Everything the engine needs, derived once from a dataset: returns (docs/methodology.md §2), the
 * factor ETFs and their returns, and per stock-day the sector ETF, the registry subsector ETF
 * and the industry in force (point in time when the dataset gives validity windows).
 */
export interface BuildInputs {
  calendar: Int32Array
  symbols: string[]
  isStock: Uint8Array
  returns: Panel
  /** Raw close (adjusted close where the dataset has no raw close). */
  close: Panel
  marketCap: Panel
  volume: Panel | null
  /** ETF index → symbol index; index 0 is the market ETF. */
  etfSymbols: Int32Array
  etfTickers: string[]
  /** Per symbol: sector ETF index per day (-1 none); stocks only. */
  sec: Int16Array[]
  /** Per symbol: registry subsector ETF index per day (-1 = the industry has none). */
  sub: Int16Array[]
  /** Per symbol: industry index per day (-1 none). */
  industry: Int16Array[]
  industries: string[]
  /**
   * A tail read's first day (Dataset.panelsFrom): the per-symbol panels hold nothing meaningful
   * before it (other columns' days: columnsOf), and nothing may read or write them there. Absent
   * or 0: complete.
   */
  panelsFrom?: number
}

/**
 * Returns into `r`; prices before `from` are unknown (a tail read): the return of day `from` is
 * null, and earlier days are left untouched (unspecified, see BuildInputs.panelsFrom).
 */
function returnsInto(adj: Float64Array, r: Float64Array, from: number): void {
  r.fill(Number.NaN, from, from + 1)
  // A missing price on either side gives a null return: a multi-day move is never booked on one day.
  for (let t = from + 1; t < adj.length; t++) r[t] = adj[t] / adj[t - 1] - 1
}

export function buildInputs(ds: Dataset): BuildInputs {
  const T = ds.calendar.length
  const N = ds.symbols.length
  // Symbols in key order (code units): rankings break ties by key, lookups can bisect.
  const order = ds.symbols
    .map((_, i) => i)
    .sort((a, b) => (ds.symbols[a] < ds.symbols[b] ? -1 : ds.symbols[a] > ds.symbols[b] ? 1 : 0))
  const symbols = order.map((i) => ds.symbols[i])
  const pick = (p: Float64Array[]) => order.map((i) => p[i])
  const index = new Map(symbols.map((s, i) => [s, i]))
  const rows = new Map<string, SecurityRow[]>()
  for (const row of ds.securities) rows.set(row.symbol, [...(rows.get(row.symbol) ?? []), row])
  const isStock = Uint8Array.from(symbols, (s) => ((rows.get(s) ?? [])[0]?.assetType === 'stock' ? 1 : 0))
  // Panels come from one buffer each (see columnsOf), holding only the days of a tail read.
  const known = ds.panelsFrom ?? 0
  // Shared: the kernel's worker threads read returns, sec and sub in place (KernelPool).
  const returns = columnsOf(Float64Array, N, T, true, known)
  pick(ds.prices.adj_close).forEach((adj, i) => {
    returnsInto(adj, returns[i], known)
  })
  const close = pick(ds.prices.close ?? ds.prices.adj_close)
  const shares = ds.prices.shares_out ? pick(ds.prices.shares_out) : null
  const marketCap = columnsOf(Float64Array, N, T, false, known)
  close.forEach((c, i) => {
    const cap = marketCap[i]
    const sh = shares?.[i]
    if (sh) for (let t = known; t < T; t++) cap[t] = c[t] * sh[t]
    else cap.fill(Number.NaN, known, T)
  })

  const market = ds.factors.find((f) => f.role === 'market')?.ticker ?? MARKET_ETF
  const etfTickers = [market]
  const etfIndex = (ticker: string | null): number => {
    if (!ticker || !index.has(ticker)) return -1
    let e = etfTickers.indexOf(ticker)
    if (e < 0) e = etfTickers.push(ticker) - 1
    return e
  }
  if (!index.has(market))
    throw new AppError('INVALID_INPUT', `the market ETF ${market} has no price series in the dataset`)
  const sectorEtf = new Map(
    ds.factors.filter((f) => f.role === 'sector').map((f) => [f.code, etfIndex(f.ticker)]),
  )
  const subEtf = new Map(
    ds.factors.filter((f) => f.role === 'subsector').map((f) => [f.code, etfIndex(f.ticker)]),
  )
  const industries = [...new Set(ds.securities.flatMap((s) => (s.industry ? [s.industry] : [])))].sort()
  const industryIdx = new Map(industries.map((c, k) => [c, k]))

  const minusOnes = () => {
    const cols = columnsOf(Int16Array, N, T, true, known)
    if (known === 0 && N > 0) new Int16Array(cols[0].buffer).fill(-1)
    else for (const c of cols) c.fill(-1, known, T)
    return cols
  }
  const sec = minusOnes()
  const sub = minusOnes()
  const industry = minusOnes()
  for (let i = 0; i < N; i++) {
    const s = sec[i]
    const u = sub[i]
    const ind = industry[i]
    if (isStock[i]) {
      for (const [from, to, row] of windows(rows.get(symbols[i]) ?? [], ds.calendar)) {
        const se = row.sector ? (sectorEtf.get(row.sector) ?? -1) : -1
        const ue = row.industry ? (subEtf.get(row.industry) ?? -1) : -1
        const ie = row.industry ? (industryIdx.get(row.industry) ?? -1) : -1
        s.fill(se, Math.max(from, known), to)
        u.fill(ue, Math.max(from, known), to)
        ind.fill(ie, Math.max(from, known), to)
      }
    }
  }
  const etfSymbols = Int32Array.from(etfTickers, (t) => index.get(t) ?? -1)
  return {
    calendar: ds.calendar,
    symbols,
    isStock,
    returns,
    close,
    marketCap,
    volume: ds.prices.volume ? pick(ds.prices.volume) : null,
    etfSymbols,
    etfTickers,
    sec,
    sub,
    industry,
    industries,
    panelsFrom: known,
  }
}

/**
 * The default universe's basis of the inputs (defaultUniverseBasis), scanning only the days the
 * panels hold (from BuildInputs.panelsFrom on).
 */
export function inputsBasis(x: BuildInputs): DefaultUniverseBasis {
  const from = x.panelsFrom ?? 0
  const cut = (p: Panel) => (from === 0 ? p : p.map((c) => c.subarray(from)))
  return defaultUniverseBasis({
    isStock: x.isStock,
    close: cut(x.close),
    marketCap: cut(x.marketCap),
    volume: x.volume ? cut(x.volume) : null,
  })
}

/**
 * The dataset without its price panels, for the rest of a build once the inputs are derived
 * (and the input digests taken): whatever the inputs still reference stays alive through them,
 * the rest can be collected before the engine allocates its blocks.
 */
export function releasePrices(ds: Dataset): Dataset {
  return { ...ds, prices: { adj_close: [], close: null, volume: null, shares_out: null } }
}

/**
 * Calendar index ranges [from, to) of each classification window. Days before the first
 * window take the first window's classification and days after the last take the last (a
 * snapshot applies to every date; rows before a listing still show the assignment).
 */
function windows(rows: SecurityRow[], calendar: Int32Array): [number, number, SecurityRow][] {
  const sorted = [...rows].sort((a, b) => a.validFrom.localeCompare(b.validFrom))
  const out: [number, number, SecurityRow][] = []
  sorted.forEach((row, k) => {
    const from = k === 0 ? 0 : lowerBound(calendar, parseIsoDay(row.validFrom) ?? 0)
    const next = sorted[k + 1]
    const to = next ? lowerBound(calendar, parseIsoDay(next.validFrom) ?? 0) : calendar.length
    if (to > from) out.push([from, to, row])
  })
  return out
}

function lowerBound(a: Int32Array, v: number): number {
  let lo = 0
  let hi = a.length
  while (lo < hi) {
    const mid = (lo + hi) >> 1
    if (a[mid] < v) lo = mid + 1
    else hi = mid
  }
  return lo
}

/** Per ETF: number of non-null returns in the window ending at each day. */
export function etfObservationCounts(returns: Float64Array[], window: number): Int32Array[] {
  return returns.map((r) => {
    const out = new Int32Array(r.length)
    let n = 0
    for (let t = 0; t < r.length; t++) {
      if (!Number.isNaN(r[t])) n++
      if (t >= window && !Number.isNaN(r[t - window])) n--
      out[t] = n
    }
    return out
  })
}
