import { MARKET_ETF, SECTOR_ETFS } from '../../../engine/data/etf-registry.ts'
import { sampleVariance } from '../../../engine/model/portfolio.ts'
import type { ListedLife, ModelStore } from '../../../engine/model-store/reader.ts'
import { etfOf } from '../series.ts'
import type { LegRole } from './benchmark.ts'

/**
 * One stock's part in a snapshot (docs/methodology.md §13 "Portfolio risk"): its state at day T
 * (the hedge legs of each level), its daily series over the lookback, and whether it is covered.
 */

/** Residual returns needed to call a position covered (as for the volatilities, docs/methodology.md §10). */
const MIN_RESIDUAL_DAYS = 20

const SERIES = ['returns_gross', 'l1_fr', 'l2_fr', 'l3_fr', 'l1_rr', 'l2_rr', 'l3_rr'] as const
/** Read for every holding; l1_rr and l2_rr only when a day (or the state) stops at L1 or L2. */
const MAIN_SERIES = ['returns_gross', 'l1_fr', 'l2_fr', 'l3_fr', 'l3_rr'] as const
const STATE = [
  'l1_mkt_hr',
  'l2_mkt_hr',
  'l2_sec_hr',
  'l3_mkt_hr',
  'l3_sec_hr',
  'l3_sub_hr',
  'l3_mkt_er',
  'l3_sec_er',
  'l3_sub_er',
  'l3_res_er',
  'vol_23d',
  'price_close',
  'sector_etf',
  'subsector_etf',
  'recommended_level',
] as const

export interface Leg {
  etf: string
  role: LegRole
  hr: number
}

export interface Holding {
  index: number
  /** Values at T (NaN = null; codes as stored). */
  state: Record<(typeof STATE)[number], number>
  /** Daily series over the window [from, T], offset 0 = from. */
  series: Record<(typeof SERIES)[number], Float64Array>
  /** Deepest level of the state at T (1–3), null without an L1 state. */
  level: 1 | 2 | 3 | null
  /** Hedge legs of levels 1, 2, 3 (a level deeper than `level` repeats `level`'s legs). */
  legs: [Leg[], Leg[], Leg[]]
  /** The recommended level's legs ([] without a recommendation). */
  recommended: Leg[]
  sectorEtf: string | null
  subsectorEtf: string | null
  /**
   * Specific variance: the sample variance of the deepest level's residual over its non-null
   * window days, replaced under an exponentially weighted estimator by specific.ts's (index.ts).
   */
  residualVar: number
  residualDays: number
  /** The weight 1 − γ of the peer prior in residualVar (0: its own estimate alone). */
  specificShrinkage: number
  covered: boolean
  reason: string | null
  /**
   * How the holding enters the risk figures: its own model; an ETF position (its own factor
   * exposure); a proxy (a stock without a model: its sector ETF and a peer specific risk, set
   * by proxies.ts); none (no proxy either: left out, said in the warnings).
   */
  basis: 'model' | 'etf' | 'proxy' | 'none'
  /** The proxy of an uncovered stock (null otherwise); peers_of null = every stock of the universe. */
  proxy: { etf: string; peers: number; peers_of: string | null; given: boolean } | null
  /** False for a ticker the dataset does not know (no state, no returns). */
  inDataset: boolean
  /** The proxy ETF the request gave for a ticker the dataset does not know. */
  requestedProxy: string | null
}

const SECTOR_ETF_SET: ReadonlySet<string> = new Set(Object.values(SECTOR_ETFS))

/** An ETF's role in the cascade by what it is: the market ETF, a sector ETF, else a subsector ETF. */
export function etfRole(etf: string): LegRole {
  return etf === MARKET_ETF ? 'market' : SECTOR_ETF_SET.has(etf) ? 'sector' : 'subsector'
}

const present = (v: number) => !Number.isNaN(v)

/** Reads one stock over the window [from, T] and derives its legs and coverage. */
export async function loadHolding(
  store: ModelStore,
  index: number,
  from: number,
  T: number,
): Promise<Holding> {
  // The state at T: the stock's latest state when its last day is T (the store keeps those values
  // per symbol: the /metrics hot path), else the row at T (as_of in the past); a stock not
  // trading at T has none. Only days up to T are read: the answer is point in time.
  const [h, life] = await Promise.all([
    store.history(index, MAIN_SERIES, from, T + 1),
    store.listedLife(index),
  ])
  const state = await stateAt(store, index, life, T)
  const main = Object.fromEntries(
    MAIN_SERIES.map((f) => [f, Float64Array.from(h[f] as ArrayLike<number>)]),
  ) as Pick<Holding['series'], (typeof MAIN_SERIES)[number]>
  // A shallower level's residual is needed on a day whose decomposition stops there, or for the
  // residual variance of a stock whose state stops there.
  let needL1 = Number.isNaN(state.l2_mkt_hr) && !Number.isNaN(state.l1_mkt_hr)
  let needL2 = Number.isNaN(state.l3_mkt_hr) && !Number.isNaN(state.l2_mkt_hr)
  for (let t = 0; t < main.l1_fr.length && !(needL1 && needL2); t++) {
    if (Number.isNaN(main.l1_fr[t])) continue
    if (Number.isNaN(main.l2_fr[t])) needL1 = true
    else if (Number.isNaN(main.l3_fr[t])) needL2 = true
  }
  const extra: ('l1_rr' | 'l2_rr')[] = []
  if (needL1) extra.push('l1_rr')
  if (needL2) extra.push('l2_rr')
  const more = extra.length > 0 ? await store.history(index, extra, from, T + 1) : {}
  const absent = new Float64Array(T - from + 1).fill(Number.NaN)
  const series: Holding['series'] = {
    ...main,
    l1_rr: more.l1_rr ? Float64Array.from(more.l1_rr as ArrayLike<number>) : absent,
    l2_rr: more.l2_rr ? Float64Array.from(more.l2_rr as ArrayLike<number>) : absent,
  }
  const sectorEtf = etfOf(store, state.sector_etf)
  const subsectorEtf = etfOf(store, state.subsector_etf)
  const l1: Leg[] = present(state.l1_mkt_hr) ? [{ etf: MARKET_ETF, role: 'market', hr: state.l1_mkt_hr }] : []
  const l2: Leg[] =
    present(state.l2_mkt_hr) && present(state.l2_sec_hr) && sectorEtf !== null
      ? [
          { etf: MARKET_ETF, role: 'market', hr: state.l2_mkt_hr },
          { etf: sectorEtf, role: 'sector', hr: state.l2_sec_hr },
        ]
      : []
  const l3: Leg[] =
    present(state.l3_mkt_hr) && present(state.l3_sec_hr) && present(state.l3_sub_hr) && sectorEtf !== null
      ? [
          { etf: MARKET_ETF, role: 'market', hr: state.l3_mkt_hr },
          { etf: sectorEtf, role: 'sector', hr: state.l3_sec_hr },
          // On a fallback day the subsector leg is the sector ETF with HR 0 (docs/methodology.md §5).
          { etf: subsectorEtf ?? sectorEtf, role: 'subsector', hr: state.l3_sub_hr },
        ]
      : []
  const level = l3.length > 0 ? 3 : l2.length > 0 ? 2 : l1.length > 0 ? 1 : null
  const legs: [Leg[], Leg[], Leg[]] = [
    l1,
    l2.length > 0 ? l2 : l1,
    l3.length > 0 ? l3 : l2.length > 0 ? l2 : l1,
  ]
  const rec = state.recommended_level
  const recommended = rec >= 1 && rec <= 3 ? (legs[rec - 1] as Leg[]) : []
  const residual = level === null ? null : series[`l${level}_rr` as 'l1_rr' | 'l2_rr' | 'l3_rr']
  const { variance, n } = residual
    ? sampleVariance(residual, 0, residual.length)
    : { variance: Number.NaN, n: 0 }
  let reason: string | null = null
  if (life.last >= 0 && life.last < T)
    reason = `last traded on ${store.date(life.last)} (delisted or halted): no model state at as_of`
  else if (life.last < 0) reason = 'never traded in this dataset'
  else if (life.first > T) reason = `first traded on ${store.date(life.first)}, after as_of`
  else if (level === null) reason = 'no model state at as_of (too short a history for the model window)'
  else if (n < MIN_RESIDUAL_DAYS)
    reason = `only ${n} residual returns in the lookback (at least ${MIN_RESIDUAL_DAYS} needed for its residual variance)`
  return {
    index,
    state,
    series,
    level,
    legs,
    recommended,
    sectorEtf,
    subsectorEtf,
    residualVar: variance,
    residualDays: n,
    specificShrinkage: 0,
    covered: reason === null,
    reason,
    basis: reason === null ? 'model' : 'none',
    proxy: null,
    inDataset: true,
    requestedProxy: null,
  }
}

/**
 * A ticker the dataset does not know: no state, no returns (every day of the series is missing,
 * so the daily series leave it out), uncovered until proxies.ts gives it a proxy.
 */
export function unknownHolding(index: number, days: number, proxy: string | null): Holding {
  const none = () => new Float64Array(days).fill(Number.NaN)
  return {
    index,
    state: emptyState(),
    series: {
      returns_gross: none(),
      l1_fr: none(),
      l2_fr: none(),
      l3_fr: none(),
      l1_rr: none(),
      l2_rr: none(),
      l3_rr: none(),
    },
    level: null,
    legs: [[], [], []],
    recommended: [],
    sectorEtf: null,
    subsectorEtf: null,
    residualVar: Number.NaN,
    residualDays: 0,
    specificShrinkage: 0,
    covered: false,
    reason: 'not in the dataset',
    basis: 'none',
    proxy: null,
    inDataset: false,
    requestedProxy: proxy,
  }
}

/** A state with every field null (NaN): a holding that is not a stock with a model. */
export const emptyState = () => Object.fromEntries(STATE.map((f) => [f, Number.NaN])) as Holding['state']

async function stateAt(store: ModelStore, index: number, life: ListedLife, T: number) {
  if (life.last === T) {
    const { values } = await store.latest(index, STATE)
    return Object.fromEntries(STATE.map((f) => [f, values[f]])) as Holding['state']
  }
  if (life.first < 0 || life.first > T || life.last < T) return emptyState()
  const row = await store.history(index, STATE, T, T + 1)
  return Object.fromEntries(STATE.map((f) => [f, (row[f] as ArrayLike<number>)[0]])) as Holding['state']
}

/**
 * Day `t`'s attribution of one holding's return: [market, sector, subsector, residual] from the
 * deepest level whose decomposition exists that day; none → the whole return is residual.
 * Returns false when the holding has no return that day.
 */
export function attributeDay(h: Holding, t: number, out: Float64Array): boolean {
  const s = h.series
  const r = s.returns_gross[t]
  if (Number.isNaN(r)) return false
  const f1 = s.l1_fr[t]
  const f2 = s.l2_fr[t]
  const f3 = s.l3_fr[t]
  out.fill(0)
  if (Number.isNaN(f1)) {
    out[3] = r
    return true
  }
  out[0] = f1
  if (Number.isNaN(f2)) {
    out[3] = s.l1_rr[t]
    return true
  }
  out[1] = f2
  if (Number.isNaN(f3)) {
    out[3] = s.l2_rr[t]
    return true
  }
  out[2] = f3
  out[3] = s.l3_rr[t]
  return true
}
