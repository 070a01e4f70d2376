import type { ModelParams } from './params.ts'

/**
 * Lstar (docs/methodology.md §9): null when both marginal ERs are null; L3 when l3_sub_er >= θ; else L2
 * when l2_sec_er >= θ; else L1. Ties use >=; a null l3_sub_er fails the L3 test. Returns 1, 2, 3
 * or NaN.
 */
export function lstarLevel(l2SecEr: number, l3SubEr: number, theta: number): number {
  if (Number.isNaN(l2SecEr) && Number.isNaN(l3SubEr)) return Number.NaN
  if (l3SubEr >= theta) return 3
  if (l2SecEr >= theta) return 2
  return 1
}

interface LevelState {
  l1_mkt_hr: Float64Array
  l2_mkt_hr: Float64Array
  l2_sec_hr: Float64Array
  l2_sec_er: Float64Array
  l3_mkt_hr: Float64Array
  l3_sec_hr: Float64Array
  l3_sub_hr: Float64Array
  l3_sub_er: Float64Array
}

/**
 * The economic recommendation: start at Lstar (L1 when Lstar is null), step down from L3 when
 * the L3 gross hedge exceeds the leverage cap or the haircut marginal ER is below the fixed
 * minimum, then apply the same test at L2. Strict inequalities; never below L1; NaN without an
 * L1 model.
 */
export function recommendedLevel(f: LevelState, t: number, lstar: number, p: ModelParams): number {
  if (Number.isNaN(f.l1_mkt_hr[t])) return Number.NaN
  let level = Number.isNaN(lstar) ? 1 : lstar
  if (level === 3) {
    const gross = Math.abs(f.l3_mkt_hr[t]) + Math.abs(f.l3_sec_hr[t]) + Math.abs(f.l3_sub_hr[t])
    if (gross > p.leverageCap || p.haircut * f.l3_sub_er[t] < p.minMarginalEr) level = 2
  }
  if (level === 2) {
    const gross = Math.abs(f.l2_mkt_hr[t]) + Math.abs(f.l2_sec_hr[t])
    if (gross > p.leverageCap || p.haircut * f.l2_sec_er[t] < p.minMarginalEr) level = 1
  }
  return level
}
