/**
 * Ranking metric values (METHODOLOGY §10) for one stock and day, all four windows at once.
 *
 * - Windows are the last w calendar (trading) days ending at t, inclusive; a window needs every
 *   one of its days non-null, and days before the start of the data are null, so a window
 *   reaching before day 0 has no value.
 * - gross_return, sector_residual, subsector_residual compound: prod(1 + x) - 1, accumulated as
 *   R ← R + x + R·x so that a one-day window returns x itself (1 + x - 1 would not) and small
 *   returns keep their low bits.
 * - er_l1 = mean l1_mkt_er, er_l2 = mean(l2_mkt_er + l2_sec_er) (a day needs both), er_l3 =
 *   mean(1 - l3_res_er).
 * - mkt_cap is the value at t whatever the window (a level, not a flow: the spec says "value at
 *   teo"), so its four windows rank identically.
 *
 * One backward pass from t serves all four nested windows: the product (or sum) is read off as it
 * passes each window length, and the pass stops at the first null (every longer window is then
 * null too). Products and sums run newest to oldest in every code path, so `rankDay` and `rankAllMetrics`
 * give bit-identical values.
 */
import type { Panel } from '../panel.ts'

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
const LONGEST = LENGTHS[LENGTHS.length - 1]

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

/** Writes prod(1 + a) - 1 for each window into out[at + w] (NaN when the window has a null). */
function compounded(a: Float64Array, t: number, out: Float64Array, at: number): void {
  let p = 0
  let w = 0
  const last = Math.min(LONGEST, t + 1)
  for (let d = 0; d < last; d++) {
    const v = a[t - d]
    if (Number.isNaN(v)) break
    p += v + p * v
    if (d + 1 === LENGTHS[w]) out[at + w++] = p
  }
  for (; w < LENGTHS.length; w++) out[at + w] = Number.NaN
}

/** Writes the window means of f(day) into out[at + w]; `kind` picks the ER combination. */
function averaged(
  kind: 'er_l1' | 'er_l2' | 'er_l3',
  x: RankingInput,
  i: number,
  t: number,
  out: Float64Array,
  at: number,
): void {
  const a = kind === 'er_l1' ? x.l1MktEr[i] : kind === 'er_l2' ? x.l2MktEr[i] : x.l3ResEr[i]
  const b = x.l2SecEr[i]
  let s = 0
  let w = 0
  const last = Math.min(LONGEST, t + 1)
  for (let d = 0; d < last; d++) {
    const v = kind === 'er_l2' ? a[t - d] + b[t - d] : kind === 'er_l3' ? 1 - a[t - d] : a[t - d]
    if (Number.isNaN(v)) break
    s += v
    if (d + 1 === LENGTHS[w]) {
      out[at + w] = s / LENGTHS[w]
      w++
    }
  }
  for (; w < LENGTHS.length; w++) out[at + w] = Number.NaN
}

/**
 * The metric's value for stock i at day t over each window, written into out[at .. at + 4) in
 * RANKING_WINDOWS order. NaN where undefined.
 */
export function metricWindows(
  x: RankingInput,
  metric: RankingMetric,
  i: number,
  t: number,
  out: Float64Array,
  at = 0,
): void {
  switch (metric) {
    case 'mkt_cap': {
      const v = x.marketCap[i][t]
      for (let w = 0; w < LENGTHS.length; w++) out[at + w] = v
      return
    }
    case 'gross_return':
      compounded(x.returns[i], t, out, at)
      return
    case 'sector_residual':
      compounded(x.l2Rr[i], t, out, at)
      return
    case 'subsector_residual':
      compounded(x.l3Rr[i], t, out, at)
      return
    default:
      averaged(metric, x, i, t, out, at)
      return
  }
}

const scratch = new Float64Array(LENGTHS.length)

/** The metric's value for stock i at day t over `window`; NaN when undefined. */
export function rankingMetricValue(
  x: RankingInput,
  metric: RankingMetric,
  window: RankingWindow,
  i: number,
  t: number,
): number {
  metricWindows(x, metric, i, t, scratch)
  return scratch[RANKING_WINDOWS.indexOf(window)]
}
