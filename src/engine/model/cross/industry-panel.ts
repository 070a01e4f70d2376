/**
 * Industry beta panel (docs/methodology.md §12): per industry code and level, the log-market-cap
 * weighted (without market caps: equally weighted) mean and variance of the level's beta over
 * active default-universe members.
 *
 * - Members at t: active, an industry code (>= 0), a non-NaN beta, and a market cap that is
 *   finite and >= 0. A stock without a usable cap is left out altogether (not given weight 0 and
 *   not counted in n_companies): its weight is undefined, and counting it would make n_companies
 *   disagree with the weights.
 * - w = ln(1 + market_cap), computed as log1p. beta_variance is the weighted population variance
 *   Σw(β - mean)² / Σw, taken in a second pass around the mean (no cancellation).
 * - Industries with fewer than minPeers members are left out; rows come in industry-index order.
 *   If every member has cap 0 (Σw = 0) the mean and variance are NaN.
 * - weightBasis 'equal' (a dataset without market caps, see defaultUniverseBasis): every member
 *   weighs 1 and needs no cap, so total_log_mcap_weight is the member count.
 */
import type { Panel } from '../panel.ts'
import type { WeightBasis } from './universe.ts'

export type PanelLevel = 'market' | 'sector' | 'subsector'

export interface PanelInput {
  /** Industry code index per stock and day, -1 none. */
  industry: Int16Array[]
  nIndustries: number
  marketCap: Panel
  l1MktBeta: Panel
  l2SecBeta: Panel
  l3SubBeta: Panel
  /** Default-universe active membership. */
  active: (i: number, t: number) => boolean
  /** Default 'log_market_cap'. */
  weightBasis?: WeightBasis
}

export interface IndustryPanelDay {
  level: PanelLevel
  industry: Int16Array
  beta_mean: Float64Array
  beta_variance: Float64Array
  n_companies: Int32Array
  total_log_mcap_weight: Float64Array
}

export const DEFAULT_MIN_PEERS = 5

function betaPanel(x: PanelInput, level: PanelLevel): Panel {
  return level === 'market' ? x.l1MktBeta : level === 'sector' ? x.l2SecBeta : x.l3SubBeta
}

export function industryPanelDay(
  x: PanelInput,
  t: number,
  level: PanelLevel,
  minPeers = DEFAULT_MIN_PEERS,
): IndustryPanelDay {
  const beta = betaPanel(x, level)
  const nSym = beta.length
  const nInd = x.nIndustries
  const code = new Int32Array(nSym).fill(-1)
  const w = new Float64Array(nSym)
  const b = new Float64Array(nSym)
  const equal = x.weightBasis === 'equal'
  const count = new Int32Array(nInd)
  const sw = new Float64Array(nInd)
  const swb = new Float64Array(nInd)
  for (let i = 0; i < nSym; i++) {
    const g = x.industry[i][t]
    const bi = beta[i][t]
    const cap = x.marketCap[i][t]
    if (g >= nInd) throw new RangeError(`industry index ${g} of symbol ${i} is not below ${nInd}`)
    if (g < 0 || Number.isNaN(bi)) continue
    if (!equal && (!(cap >= 0) || cap === Number.POSITIVE_INFINITY)) continue
    if (!x.active(i, t)) continue
    code[i] = g
    w[i] = equal ? 1 : Math.log1p(cap)
    b[i] = bi
    count[g]++
    sw[g] += w[i]
    swb[g] += w[i] * bi
  }
  const mean = new Float64Array(nInd)
  for (let g = 0; g < nInd; g++) mean[g] = swb[g] / sw[g]
  const sdev = new Float64Array(nInd)
  for (let i = 0; i < nSym; i++) {
    const g = code[i]
    if (g < 0) continue
    const d = b[i] - mean[g]
    sdev[g] += w[i] * d * d
  }
  let rows = 0
  for (let g = 0; g < nInd; g++) if (count[g] >= minPeers && count[g] > 0) rows++
  const out: IndustryPanelDay = {
    level,
    industry: new Int16Array(rows),
    beta_mean: new Float64Array(rows),
    beta_variance: new Float64Array(rows),
    n_companies: new Int32Array(rows),
    total_log_mcap_weight: new Float64Array(rows),
  }
  for (let g = 0, r = 0; g < nInd; g++) {
    if (count[g] < minPeers || count[g] === 0) continue
    out.industry[r] = g
    out.beta_mean[r] = mean[g]
    out.beta_variance[r] = sdev[g] / sw[g]
    out.n_companies[r] = count[g]
    out.total_log_mcap_weight[r] = sw[g]
    r++
  }
  return out
}

/** Per level, columns [industry][day] of the panel (NaN and 0 where an industry has no member). */
export interface IndustryPanelSeries {
  beta_mean: Float64Array[]
  beta_variance: Float64Array[]
  total_log_mcap_weight: Float64Array[]
  n_companies: Int32Array[]
}

/**
 * industryPanelDay with minPeers 1 for every day of [start, days) and the three levels at once,
 * into per-industry columns (the build's layout). Symbols are the outer loop and days the inner,
 * so every panel is read along its columns; each (day, industry) still sums its members in
 * symbol order, so the values are those of industryPanelDay bit for bit. `out` holds one series
 * per level, in the order of `levels`; only days from `start` on are written.
 */
export function industryPanelSeries(
  x: PanelInput,
  levels: readonly PanelLevel[],
  start: number,
  out: IndustryPanelSeries[],
): void {
  const betas = levels.map((l) => betaPanel(x, l))
  const nSym = x.industry.length
  const nInd = x.nIndustries
  const days = x.industry[0]?.length ?? 0
  const equal = x.weightBasis === 'equal'
  // Member weight of (i, t), NaN when not a member for any level (the beta test comes after).
  const weightOf = (i: number, t: number): number => {
    const g = x.industry[i][t]
    if (g >= nInd) throw new RangeError(`industry index ${g} of symbol ${i} is not below ${nInd}`)
    if (g < 0) return Number.NaN
    const cap = x.marketCap[i][t]
    if (!equal && (!(cap >= 0) || cap === Number.POSITIVE_INFINITY)) return Number.NaN
    if (!x.active(i, t)) return Number.NaN
    return equal ? 1 : Math.log1p(cap)
  }
  for (const o of out) {
    for (let g = 0; g < nInd; g++) {
      o.n_companies[g].fill(0, start, days)
      o.total_log_mcap_weight[g].fill(0, start, days)
      o.beta_mean[g].fill(0, start, days)
      o.beta_variance[g].fill(0, start, days)
    }
  }
  for (let i = 0; i < nSym; i++) {
    const ind = x.industry[i]
    for (let t = start; t < days; t++) {
      const w = weightOf(i, t)
      if (Number.isNaN(w)) continue
      const g = ind[t]
      for (let l = 0; l < betas.length; l++) {
        const bi = betas[l][i][t]
        if (Number.isNaN(bi)) continue
        const o = out[l]
        o.n_companies[g][t]++
        o.total_log_mcap_weight[g][t] += w
        o.beta_mean[g][t] += w * bi
      }
    }
  }
  for (const o of out)
    for (let g = 0; g < nInd; g++) divideInto(o.beta_mean[g], o.total_log_mcap_weight[g], start)
  for (let i = 0; i < nSym; i++) {
    const ind = x.industry[i]
    for (let t = start; t < days; t++) {
      const w = weightOf(i, t)
      if (Number.isNaN(w)) continue
      const g = ind[t]
      for (let l = 0; l < betas.length; l++) {
        const bi = betas[l][i][t]
        if (Number.isNaN(bi)) continue
        const d = bi - out[l].beta_mean[g][t]
        out[l].beta_variance[g][t] += w * d * d
      }
    }
  }
  for (const o of out) {
    for (let g = 0; g < nInd; g++) {
      const n = o.n_companies[g]
      divideInto(o.beta_variance[g], o.total_log_mcap_weight[g], start)
      for (let t = start; t < days; t++) {
        if (n[t] > 0) continue
        o.beta_mean[g][t] = Number.NaN
        o.beta_variance[g][t] = Number.NaN
        o.total_log_mcap_weight[g][t] = Number.NaN
      }
    }
  }
}

function divideInto(num: Float64Array, den: Float64Array, start: number): void {
  for (let t = start; t < num.length; t++) num[t] = num[t] / den[t]
}
