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
