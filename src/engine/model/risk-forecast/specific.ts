import { expWeights } from './covariance.ts'

/**
 * Specific (residual) risk and the volatility-regime adjustment of the risk forecast
 * (docs/methodology.md §13 "Risk forecast"). Pure; series oldest first, NaN missing.
 */

export interface SpecificOptions {
  /** Half-life of the weights (Infinity: equal weights). */
  halfLife: number
  /** Below this many observations the estimate is the peer prior alone. */
  minDays: number
  /** From this many observations on, the stock's own estimate alone. */
  fullDays: number
}

/** The shrinkage days of the exponentially weighted estimators (`erm3 evaluate` and POST /snapshot alike). */
export const SPECIFIC_DAYS = { minDays: 20, fullDays: 126 } as const

/**
 * A stock's specific variance over [from, to): the weighted variance v of its non-null residuals
 * (weighted mean removed, normalised as in `weightedCovariance`), shrunk toward the peers' `prior`
 * by γ = clamp((n − minDays)/(fullDays − minDays), 0, 1): γ·v + (1 − γ)·prior. Without a prior
 * (NaN) it is v (NaN with fewer than two observations).
 */
export function specificVariance(
  residual: ArrayLike<number>,
  from: number,
  to: number,
  prior: number,
  o: SpecificOptions,
): { variance: number; n: number; shrinkage: number } {
  const vals: number[] = []
  for (let t = Math.max(0, from); t < to; t++) if (!Number.isNaN(residual[t])) vals.push(residual[t])
  const n = vals.length
  const v = weightedVariance(vals, o.halfLife)
  if (Number.isNaN(prior)) return { variance: v, n, shrinkage: 0 }
  const span = Math.max(1, o.fullDays - o.minDays)
  const gamma = Number.isNaN(v) ? 0 : Math.min(1, Math.max(0, (n - o.minDays) / span))
  return { variance: gamma === 0 ? prior : gamma * v + (1 - gamma) * prior, n, shrinkage: 1 - gamma }
}

/** Weighted variance of values (oldest first), weighted mean removed; NaN with fewer than two. */
function weightedVariance(vals: readonly number[], halfLife: number): number {
  const m = vals.length
  if (m < 2) return Number.NaN
  const w = expWeights(m, halfLife)
  let sw = 0
  let sw2 = 0
  let mean = 0
  for (let k = 0; k < m; k++) {
    sw += w[k]
    sw2 += w[k] * w[k]
    mean += w[k] * (vals[k] as number)
  }
  mean /= sw
  let ss = 0
  for (let k = 0; k < m; k++) ss += w[k] * ((vals[k] as number) - mean) ** 2
  return ss / (sw - sw2 / sw)
}

/**
 * The one-day-ahead variance forecast at every day: out[t] = the exponentially weighted mean of
 * x² over the non-null days before t (zero mean, half-life `halfLife`), NaN until `minDays` such
 * days were seen. With a finite `clip` k, each x enters clipped to ±k·√out[t] (once there is a
 * forecast), so one jump does not inflate the forecast for months. Used to standardise returns
 * for the volatility-regime adjustment.
 */
export function runningVariance(
  x: ArrayLike<number>,
  halfLife: number,
  minDays: number,
  clip = Number.POSITIVE_INFINITY,
): Float64Array {
  const out = new Float64Array(x.length).fill(Number.NaN)
  const decay = 0.5 ** (1 / halfLife)
  let num = 0
  let den = 0
  let seen = 0
  for (let t = 0; t < x.length; t++) {
    if (seen >= minDays && den > 0) out[t] = num / den
    let v = x[t]
    if (Number.isNaN(v)) continue
    const f = out[t]
    if (Number.isFinite(clip) && f > 0) v = Math.max(-clip * Math.sqrt(f), Math.min(clip * Math.sqrt(f), v))
    num = decay * num + v * v
    den = decay * den + 1
    seen++
  }
  return out
}

/**
 * The cross-sectional bias statistic of one day: B² = mean of z² over the assets with a
 * standardised return z = r/σ (σ the forecast made before the day), each z clipped to ±zCap so
 * one outlier does not set the regime. NaN when no asset has one.
 */
export function crossSectionalBias(
  returns: ArrayLike<number>,
  variances: ArrayLike<number>,
  zCap = 5,
): number {
  let acc = 0
  let n = 0
  for (let i = 0; i < returns.length; i++) {
    const r = returns[i]
    const v = variances[i]
    if (Number.isNaN(r) || !(v > 0)) continue
    const z = Math.max(-zCap, Math.min(zCap, r / Math.sqrt(v)))
    acc += z * z
    n++
  }
  return n > 0 ? acc / n : Number.NaN
}

/**
 * The volatility-regime multiplier λ² at the end of `b2` (a day series of B², oldest first): the
 * exponentially weighted mean (half-life `halfLife`) of its non-null values over [from, to). A
 * covariance multiplied by λ² is scaled to the recent realised-to-forecast ratio; 1 when there is
 * no value.
 */
export function regimeMultiplier(b2: ArrayLike<number>, from: number, to: number, halfLife: number): number {
  const decay = 0.5 ** (1 / halfLife)
  let num = 0
  let den = 0
  for (let t = Math.max(0, from); t < to; t++) {
    num *= decay
    den *= decay
    const v = b2[t]
    if (Number.isNaN(v)) continue
    num += v
    den += 1
  }
  return den > 0 ? num / den : 1
}
