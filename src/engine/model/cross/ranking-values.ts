/**
 * Ranking metric values (docs/methodology.md §12) for one stock and day, all four windows at once.
 *
 * - Windows are the last w calendar (trading) days ending at t, inclusive; a window needs every
 *   one of its days non-null, and days before the start of the data are null, so a window
 *   reaching before day 0 has no value.
 * - gross_return, sector_residual, subsector_residual compound: prod(1 + x) - 1.
 * - er_l1 = mean l1_mkt_er, er_l2 = mean(l2_mkt_er + l2_sec_er) (a day needs both), er_l3 =
 *   mean(1 - l3_res_er) = 1 - mean(l3_res_er).
 * - mkt_cap is the value at t whatever the window (a level, not a flow: docs/methodology.md
 *   §12), so its four windows rank identically.
 *
 * All values come from the kernels of window-sums.ts (which say how they are computed), so
 * `rankDay`, `rankAllMetrics`, `rankAllMetricsDays` and `rankingMetricValue` agree bit for bit.
 */
import type { Panel } from '../panel.ts'
import {
  BLOCK_SHIFT,
  blockTotals,
  firstWholeBlock,
  LANES,
  type StockSeries,
  sweepWindows,
  WINDOW_LENGTHS,
  windowAggregates,
} from './window-sums.ts'

export const RANKING_METRICS = [
  'mkt_cap',
  'gross_return',
  'sector_residual',
  'subsector_residual',
  'er_l1',
  'er_l2',
  'er_l3',
] as const
export type RankingMetric = (typeof RANKING_METRICS)[number]

export const RANKING_WINDOWS = ['1d', '21d', '63d', '252d'] as const
export type RankingWindow = (typeof RANKING_WINDOWS)[number]

/** Window lengths in trading days, in RANKING_WINDOWS order (ascending, nested). */
export const WINDOW_DAYS: Readonly<Record<RankingWindow, number>> = {
  '1d': 1,
  '21d': 21,
  '63d': 63,
  '252d': 252,
}
const LENGTHS = RANKING_WINDOWS.map((w) => WINDOW_DAYS[w])
if (LENGTHS.some((n, w) => n !== WINDOW_LENGTHS[w])) throw new Error('window lengths out of sync')

export interface RankingInput {
  returns: Panel
  marketCap: Panel
  l2Rr: Panel
  l3Rr: Panel
  l1MktEr: Panel
  l2MktEr: Panel
  l2SecEr: Panel
  l3ResEr: Panel
  /** ETF index in effect per stock and day (-1 none). */
  sectorEtf: Int16Array[]
  /** Subsector ETF in effect per stock and day (the sector ETF on fallback days; -1 none). */
  subsectorEtf: Int16Array[]
  /** Default-universe (uni_mc_3000) active membership. */
  active: (i: number, t: number) => boolean
}

const NW = LENGTHS.length
/** Values per stock and day: metric-major (RANKING_METRICS order), then window. */
const METRIC_WINDOWS = RANKING_METRICS.length * NW

function stockSeries(x: RankingInput, i: number): StockSeries {
  return {
    r: x.returns[i],
    q2: x.l2Rr[i],
    q3: x.l3Rr[i],
    e1: x.l1MktEr[i],
    e2a: x.l2MktEr[i],
    e2b: x.l2SecEr[i],
    e3: x.l3ResEr[i],
  }
}

/** Lane aggregates (window-sums.ts order) → metric values, at out[at + m · 4 + w]. */
function writeMetrics(cap: number, lanes: Float64Array, out: Float64Array, at: number): void {
  for (let w = 0; w < NW; w++) {
    out[at + w] = cap
    for (let l = 0; l < 5; l++) out[at + (l + 1) * NW + w] = lanes[l * NW + w]
    // mean(1 - l3_res_er) taken as 1 - mean(l3_res_er): the same number, one rounding.
    out[at + 6 * NW + w] = 1 - lanes[5 * NW + w]
  }
}

/**
 * Every metric × window value of every symbol on each of `days` (out[j][m · 4 + w][i], NaN where
 * undefined or where `include(j, i)` is false). Stock by stock: for several days the block totals
 * they need are computed once per stock and shared by all of them; a single day takes one sweep
 * (`blocked` forces the block path, for tests). Both give the same numbers (window-sums.ts).
 */
export function metricValues(
  x: RankingInput,
  days: readonly number[],
  include: (j: number, i: number) => boolean,
  blocked = days.length > 1,
): Float64Array[][] {
  const nSym = x.returns.length
  const nDays = nSym > 0 ? x.returns[0].length : 0
  for (const t of days) {
    if (!Number.isInteger(t) || t < 0 || t >= nDays)
      throw new RangeError(`day ${t} is not in 0..${nDays - 1}`)
  }
  const out = days.map(() =>
    Array.from({ length: METRIC_WINDOWS }, () => new Float64Array(nSym).fill(Number.NaN)),
  )
  let fromBlock = Number.POSITIVE_INFINITY
  let toBlock = -1
  for (const t of days) {
    fromBlock = Math.min(fromBlock, firstWholeBlock(t))
    toBlock = Math.max(toBlock, (t >> BLOCK_SHIFT) - 1)
  }
  // Only blocks some day reads whole: days far apart must not pay for the gaps between them.
  const needed = new Uint8Array(Math.max(0, toBlock + 1))
  for (const t of days) needed.fill(1, firstWholeBlock(t), Math.max(firstWholeBlock(t), t >> BLOCK_SHIFT))
  const blocks = new Float64Array(needed.length * LANES)
  const lanes = new Float64Array(LANES * NW)
  const vals = new Float64Array(METRIC_WINDOWS)
  const scratch = new Float64Array(3 * LANES)
  const single = days.length === 1 && !blocked
  for (let i = 0; i < nSym; i++) {
    let any = false
    for (let j = 0; j < days.length && !any; j++) any = include(j, i)
    if (!any) continue
    const s = stockSeries(x, i)
    if (single) {
      sweepWindows(s, days[0], lanes, 0)
      writeMetrics(x.marketCap[i][days[0]], lanes, vals, 0)
      for (let k = 0; k < METRIC_WINDOWS; k++) out[0][k][i] = vals[k]
      continue
    }
    for (let b = needed.length - 1; b >= Math.max(0, fromBlock); b--)
      if (needed[b]) blockTotals(s, b, b, blocks)
    for (let j = 0; j < days.length; j++) {
      if (!include(j, i)) continue
      const t = days[j]
      windowAggregates(s, blocks, t, lanes, 0, scratch)
      writeMetrics(x.marketCap[i][t], lanes, vals, 0)
      const o = out[j]
      for (let k = 0; k < METRIC_WINDOWS; k++) o[k][i] = vals[k]
    }
  }
  return out
}

/** The metric's value for stock i at day t over `window`; NaN when undefined. */
export function rankingMetricValue(
  x: RankingInput,
  metric: RankingMetric,
  window: RankingWindow,
  i: number,
  t: number,
): number {
  const lanes = new Float64Array(LANES * NW)
  sweepWindows(stockSeries(x, i), t, lanes, 0)
  const vals = new Float64Array(METRIC_WINDOWS)
  writeMetrics(x.marketCap[i][t], lanes, vals, 0)
  return vals[RANKING_METRICS.indexOf(metric) * NW + RANKING_WINDOWS.indexOf(window)]
}
