import { MARKET_ETF } from '../../../engine/data/etf-registry.ts'
import type { ModelStore } from '../../../engine/model-store/reader.ts'

/**
 * What the evaluation reads from a model store (docs/model-quality.md): every symbol's daily gross
 * return and L3 residual over the whole calendar, the ETFs' returns, and, per evaluation date,
 * the hedge state of every stock.
 */

export interface EvalPanel {
  days: number
  /** Per symbol (store order): returns_gross and l3_rr over the calendar. */
  ret: Float64Array[]
  res: Float64Array[]
  /** Symbol indices of the stocks. */
  stocks: number[]
  /** Per store.etfs code: the ETF's returns (all NaN when it is not in the store). */
  etfRet: Float64Array[]
  market: number
  /** The VIX level per day (factors/vix_level; all NaN when not read or not in the store). */
  vix: Float64Array
}

async function fullField(store: ModelStore, field: string, n: number, days: number): Promise<Float64Array[]> {
  const targets = Array.from({ length: n }, () => new Float64Array(days).fill(Number.NaN))
  await store.readInto(`fields/${field}`, 0, 0, days, targets)
  return targets
}

export async function loadPanel(store: ModelStore, withVix = false): Promise<EvalPanel> {
  const days = store.calendar.length
  const n = store.symbols.length
  const [ret, res] = await Promise.all([
    fullField(store, 'returns_gross', n, days),
    fullField(store, 'l3_rr', n, days),
  ])
  const stocks: number[] = []
  store.symbols.forEach((s, i) => {
    if (s.asset_type === 'stock') stocks.push(i)
  })
  const etfRet = store.etfs.map((etf) => {
    const i = store.resolve(etf)
    return i >= 0 && store.symbols[i]?.asset_type === 'etf'
      ? (ret[i] as Float64Array)
      : new Float64Array(days).fill(Number.NaN)
  })
  // A build made before the factor series has no VIX: the VIX scale is then 1.
  const vix =
    withVix && store.factors !== null
      ? Float64Array.from(await store.vixLevel())
      : new Float64Array(days).fill(Number.NaN)
  return { days, ret, res, stocks, etfRet, market: store.etfs.indexOf(MARKET_ETF), vix }
}

/** The hedge state of every symbol after the close of day t. */
export interface DayState {
  l1m: ArrayLike<number>
  l2m: ArrayLike<number>
  l2s: ArrayLike<number>
  l3m: ArrayLike<number>
  l3s: ArrayLike<number>
  l3u: ArrayLike<number>
  sector: ArrayLike<number>
  subsector: ArrayLike<number>
  lstar: ArrayLike<number>
}

export async function dayState(store: ModelStore, t: number): Promise<DayState> {
  const [l1m, l2m, l2s, l3m, l3s, l3u, sector, subsector, lstar] = await Promise.all([
    store.crossSection('l1_mkt_hr', t),
    store.crossSection('l2_mkt_hr', t),
    store.crossSection('l2_sec_hr', t),
    store.crossSection('l3_mkt_hr', t),
    store.crossSection('l3_sec_hr', t),
    store.crossSection('l3_sub_hr', t),
    store.crossSection('sector_etf', t),
    store.crossSection('subsector_etf', t),
    store.crossSection('lstar_level', t),
  ])
  return { l1m, l2m, l2s, l3m, l3s, l3u, sector, subsector, lstar }
}

/** A hedge: ETF codes (store.etfs) and ratios. */
export type Legs = { etf: number; hr: number }[]

/** One stock's legs at levels 1, 2, 3 and Lstar on the day (null: no L3 state or ETF). */
export function stockLegs(
  s: DayState,
  i: number,
  market: number,
): { l1: Legs; l2: Legs; l3: Legs; lstar: Legs } | null {
  const sec = s.sector[i] as number
  const sub = (s.subsector[i] as number) >= 0 ? (s.subsector[i] as number) : sec
  const vals = [s.l1m[i], s.l2m[i], s.l2s[i], s.l3m[i], s.l3s[i], s.l3u[i]] as number[]
  if (sec < 0 || vals.some((v) => Number.isNaN(v))) return null
  const [l1m, l2m, l2s, l3m, l3s, l3u] = vals as [number, number, number, number, number, number]
  const l1: Legs = [{ etf: market, hr: l1m }]
  const l2: Legs = [
    { etf: market, hr: l2m },
    { etf: sec, hr: l2s },
  ]
  const l3: Legs = [
    { etf: market, hr: l3m },
    { etf: sec, hr: l3s },
    { etf: sub, hr: l3u },
  ]
  const ls = s.lstar[i] as number
  return { l1, l2, l3, lstar: ls === 3 ? l3 : ls === 2 ? l2 : l1 }
}
