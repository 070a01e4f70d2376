/**
 * Factor covariance estimators of the risk forecast (docs/methodology.md §13 "Risk forecast"):
 * exponentially weighted moments with separate half-lives for volatilities and correlations, the
 * Newey-West serial-correlation adjustment, and winsorised inputs. Pure functions over typed
 * arrays, series oldest first; NaN is a missing value. A half-life of Infinity is equal weights.
 */

/** Weights of days [0, n) oldest first: w_k = 0.5^((n − 1 − k)/H); all 1 when H is Infinity. */
export function expWeights(n: number, halfLife: number): Float64Array {
  const w = new Float64Array(n)
  for (let k = 0; k < n; k++) w[k] = Number.isFinite(halfLife) ? 0.5 ** ((n - 1 - k) / halfLife) : 1
  return w
}

/** The days of [from, to) on which every series has a value. */
function commonDays(series: readonly Float64Array[], from: number, to: number): number[] {
  const days: number[] = []
  for (let t = Math.max(0, from); t < to; t++) {
    let ok = true
    for (let j = 0; j < series.length && ok; j++) ok = !Number.isNaN((series[j] as Float64Array)[t])
    if (ok) days.push(t)
  }
  return days
}

export interface WeightedCovarianceOptions {
  /** Half-life in days of the observation weights (Infinity: equal weights). */
  halfLife: number
  /** Newey-West lags (0: none): adds Σ_l (1 − l/(L+1))·(Γ_l + Γ_l'). */
  lags?: number
  /** Only the variances (the diagonal; the off-diagonal entries stay 0). */
  diagonalOnly?: boolean
}

/**
 * Weighted covariance of `series` over the common days of [from, to): weighted mean removed,
 * normalised by Σw − Σw²/Σw (with equal weights that is the sample covariance, n − 1). With
 * `lags` L > 0, the lag-l cross-covariances Γ_l (pairs of common days l apart, weighted by the
 * later day) are added with Bartlett weights 1 − l/(L+1), so that an h-day variance is h times
 * the result when returns are serially correlated.
 */
export function weightedCovariance(
  series: readonly Float64Array[],
  from: number,
  to: number,
  o: WeightedCovarianceOptions,
): { cov: Float64Array; days: number } {
  const n = series.length
  const days = commonDays(series, from, to)
  const m = days.length
  const cov = new Float64Array(n * n)
  if (m < 2) return { cov: cov.fill(Number.NaN), days: m }
  const w = expWeights(m, o.halfLife)
  let sw = 0
  let sw2 = 0
  for (let k = 0; k < m; k++) {
    sw += w[k]
    sw2 += w[k] * w[k]
  }
  const mean = new Float64Array(n)
  for (let j = 0; j < n; j++) {
    const s = series[j] as Float64Array
    let acc = 0
    for (let k = 0; k < m; k++) acc += w[k] * s[days[k] as number]
    mean[j] = acc / sw
  }
  const dev = deviations(series, days, mean)
  const norm = sw - sw2 / sw
  const lags = Math.min(o.lags ?? 0, m - 1)
  for (let l = 0; l <= lags; l++) {
    const bartlett = l === 0 ? 1 : 1 - l / (lags + 1)
    addLagged(cov, { dev, w, n, m, diagonalOnly: o.diagonalOnly === true }, l, bartlett / norm)
  }
  return { cov, days: m }
}

/** dev[k·n + j] = series j on common day k minus its mean. */
function deviations(series: readonly Float64Array[], days: number[], mean: Float64Array): Float64Array {
  const n = series.length
  const dev = new Float64Array(days.length * n)
  for (let k = 0; k < days.length; k++)
    for (let j = 0; j < n; j++) dev[k * n + j] = (series[j] as Float64Array)[days[k] as number] - mean[j]
  return dev
}

/** Deviations dev[k·n + j] over m common days, their weights, and whether only the diagonal is wanted. */
interface Lagged {
  dev: Float64Array
  w: Float64Array
  n: number
  m: number
  diagonalOnly: boolean
}

/**
 * cov += scale·Σ_k w_k·x_k·x_{k−l}' (+ its transpose when l > 0), symmetric; with `diagonalOnly`
 * only the diagonal entries (the same operations in the same order).
 */
function addLagged(cov: Float64Array, x: Lagged, l: number, scale: number): void {
  const { dev, w, n, m, diagonalOnly } = x
  const g = new Float64Array(n * n)
  for (let k = l; k < m; k++) {
    const wk = w[k]
    const a0 = k * n
    const b0 = (k - l) * n
    for (let a = 0; a < n; a++) {
      const da = wk * dev[a0 + a]
      if (da === 0) continue
      const lo = diagonalOnly ? a : 0
      const hi = diagonalOnly ? a + 1 : n
      for (let b = lo; b < hi; b++) g[a * n + b] += da * dev[b0 + b]
    }
  }
  for (let a = 0; a < n; a++) {
    const lo = diagonalOnly ? a : 0
    const hi = diagonalOnly ? a + 1 : n
    for (let b = lo; b < hi; b++)
      cov[a * n + b] += scale * (l === 0 ? g[a * n + b] : g[a * n + b] + g[b * n + a])
  }
}

export interface FactorCovarianceOptions {
  /** Half-life of the volatilities (days). */
  volHalfLife: number
  /** Half-life of the correlations (days). */
  corrHalfLife: number
  /** Newey-West lags applied to both (0: none). */
  lags: number
}

/**
 * Σ = D·R·D: the volatilities D from weights of half-life `volHalfLife`, the correlation R from
 * weights of half-life `corrHalfLife` (both with the same Newey-West lags). Equal half-lives give
 * the weighted covariance itself.
 */
export function factorCovariance(
  series: readonly Float64Array[],
  from: number,
  to: number,
  o: FactorCovarianceOptions,
): { cov: Float64Array; days: number } {
  const n = series.length
  const corr = weightedCovariance(series, from, to, { halfLife: o.corrHalfLife, lags: o.lags })
  if (o.volHalfLife === o.corrHalfLife || corr.days < 2) return corr
  const vol = weightedCovariance(series, from, to, {
    halfLife: o.volHalfLife,
    lags: o.lags,
    diagonalOnly: true,
  })
  const cov = new Float64Array(n * n)
  for (let a = 0; a < n; a++)
    for (let b = 0; b < n; b++) {
      const ca = corr.cov[a * n + a]
      const cb = corr.cov[b * n + b]
      const r = a === b ? 1 : ca > 0 && cb > 0 ? corr.cov[a * n + b] / Math.sqrt(ca * cb) : 0
      cov[a * n + b] = r * Math.sqrt(Math.max(0, vol.cov[a * n + a]) * Math.max(0, vol.cov[b * n + b]))
    }
  return { cov, days: corr.days }
}

/**
 * A copy of x over [from, to) with each value clipped to median ± k·1.4826·MAD of the window's
 * values (a robust standard deviation); NaN stays NaN. k = Infinity leaves the values unchanged.
 */
export function winsorise(x: Float64Array, from: number, to: number, k: number): Float64Array {
  const out = Float64Array.from(x)
  if (!Number.isFinite(k)) return out
  const vals: number[] = []
  for (let t = Math.max(0, from); t < to; t++) if (!Number.isNaN(x[t])) vals.push(x[t])
  if (vals.length < 3) return out
  const med = median(vals)
  const mad = median(vals.map((v) => Math.abs(v - med))) * 1.4826
  if (!(mad > 0)) return out
  const lo = med - k * mad
  const hi = med + k * mad
  for (let t = Math.max(0, from); t < to; t++) {
    const v = x[t]
    if (!Number.isNaN(v)) out[t] = v < lo ? lo : v > hi ? hi : v
  }
  return out
}

export function median(values: readonly number[]): number {
  if (values.length === 0) return Number.NaN
  const s = [...values].sort((a, b) => a - b)
  const h = s.length >> 1
  return s.length % 2 ? (s[h] as number) : 0.5 * ((s[h - 1] as number) + (s[h] as number))
}
