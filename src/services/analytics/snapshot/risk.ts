import { dot, matVec } from '../../../engine/model/portfolio.ts'
import type { Leg } from './holdings.ts'

/**
 * A book's risk in ETF space (docs/methodology.md §13 "Portfolio risk"): exposures per level,
 * variance and its cascade split, Euler contributions. The same code serves the portfolio, its
 * benchmark and the active book (portfolio − benchmark).
 */

const ANN = 252

/** Dense index of the ETFs in play. */
export class EtfSpace {
  readonly index = new Map<string, number>()
  readonly etfs: string[] = []
  add(etf: string): number {
    let j = this.index.get(etf)
    if (j === undefined) {
      j = this.etfs.length
      this.index.set(etf, j)
      this.etfs.push(etf)
    }
    return j
  }
  vector(legs: readonly Leg[], scale = 1): Float64Array {
    const v = new Float64Array(this.etfs.length)
    // Every leg's ETF was add()ed to the space before any vector is built.
    for (const l of legs) v[this.index.get(l.etf) as number] += scale * l.hr
    return v
  }
}

/** One covered member of a book: weight, level-1..3 exposure vectors, residual variance. */
export interface Member {
  key: string
  weight: number
  exposures: [Float64Array, Float64Array, Float64Array]
  residualVar: number
}

export const NULL_CONTRIBUTION: Contribution = { marginal: null, component: null, percent: null }

export interface LayerSplit {
  market: number | null
  sector: number | null
  subsector: number | null
  residual: number | null
  systematic: number | null
}

export const NULL_SPLIT: LayerSplit = {
  market: null,
  sector: null,
  subsector: null,
  residual: null,
  systematic: null,
}

export interface BookRisk {
  /** Σ w·b^k per level. */
  h: [Float64Array, Float64Array, Float64Array]
  /** h^k'Σh^k per level (daily). */
  v: [number, number, number]
  /** Σ w²σ²_res (daily). */
  d: number
  /** V = V_3 + D (daily). */
  variance: number
}

export function bookExposures(
  members: readonly Member[],
  n: number,
): [Float64Array, Float64Array, Float64Array] {
  const h: [Float64Array, Float64Array, Float64Array] = [
    new Float64Array(n),
    new Float64Array(n),
    new Float64Array(n),
  ]
  for (const m of members)
    for (let k = 0; k < 3; k++) {
      const hk = h[k] as Float64Array
      const bk = m.exposures[k] as Float64Array
      for (let j = 0; j < n; j++) hk[j] = hk[j] + m.weight * bk[j]
    }
  return h
}

export function bookRisk(
  h: [Float64Array, Float64Array, Float64Array],
  d: number,
  cov: Float64Array,
): BookRisk {
  const v = h.map((x) => dot(x, matVec(cov, x))) as [number, number, number]
  return { h, v, d, variance: v[2] + d }
}

export const residualVariance = (members: readonly Member[]) =>
  members.reduce((acc, m) => acc + m.weight * m.weight * m.residualVar, 0)

/** market V1/V, sector (V2−V1)/V, subsector (V3−V2)/V, residual D/V, systematic V3/V; null when V ≤ 0. */
export function layerSplit(r: BookRisk): LayerSplit {
  const V = r.variance
  if (!(V > 0)) return NULL_SPLIT
  const [v1, v2, v3] = r.v
  return {
    market: v1 / V,
    sector: (v2 - v1) / V,
    subsector: (v3 - v2) / V,
    residual: r.d / V,
    systematic: v3 / V,
  }
}

export const annualVol = (dailyVariance: number) =>
  dailyVariance >= 0 ? Math.sqrt(ANN * dailyVariance) : null

export interface Contribution {
  marginal: number | null
  component: number | null
  percent: number | null
}

/**
 * Euler contributions to the annualised volatility: per member (components sum to it) and per
 * ETF plus the residual (these sum to it as well).
 */
export function eulerContributions(
  members: readonly Member[],
  r: BookRisk,
  cov: Float64Array,
): {
  members: Contribution[]
  etfs: Contribution[]
  residual: Contribution
  /** Each member's stand-alone annualised volatility under the model. */
  standalone: number[]
  /** Σ |w|·σ_i / σ (null when V ≤ 0). */
  diversification: number | null
} {
  const V = r.variance
  const h3 = r.h[2]
  const sh = matVec(cov, h3)
  const scale = V > 0 ? Math.sqrt(ANN) / Math.sqrt(V) : Number.NaN
  const contribution = (weight: number, cw: number): Contribution =>
    V > 0
      ? { marginal: scale * cw, component: weight * scale * cw, percent: (weight * cw) / V }
      : NULL_CONTRIBUTION
  const members_ = members.map((m) =>
    contribution(m.weight, dot(m.exposures[2], sh) + m.weight * m.residualVar),
  )
  const etfs = Array.from(h3, (x, j) => contribution(x, sh[j]))
  const residual: Contribution =
    V > 0 ? { marginal: null, component: scale * r.d, percent: r.d / V } : NULL_CONTRIBUTION
  const standalone = members.map((m) =>
    Math.sqrt(ANN * (dot(m.exposures[2], matVec(cov, m.exposures[2])) + m.residualVar)),
  )
  const diversification =
    V > 0 ? members.reduce((a, m, i) => a + Math.abs(m.weight) * standalone[i], 0) / Math.sqrt(ANN * V) : null
  return { members: members_, etfs, residual, standalone, diversification }
}
