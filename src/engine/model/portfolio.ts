/**
 * Portfolio risk arithmetic (docs/methodology.md §13 "Portfolio risk"): sample
 * covariance of ETF returns, quadratic forms, Euler contributions and geometric compounding of
 * daily attribution strips. Pure functions over typed arrays; NaN is a missing value.
 */

/** Sample covariance (n − 1) of `series` over the days of [from, to) where every series has a value. */
export function sampleCovariance(
  series: readonly Float64Array[],
  from: number,
  to: number,
): { cov: Float64Array; days: number } {
  const n = series.length
  const days: number[] = []
  for (let t = from; t < to; t++) {
    let ok = true
    for (let j = 0; j < n && ok; j++) ok = !Number.isNaN((series[j] as Float64Array)[t])
    if (ok) days.push(t)
  }
  const cov = new Float64Array(n * n)
  const m = days.length
  if (m < 2) return { cov: cov.fill(Number.NaN), days: m }
  const mean = new Float64Array(n)
  for (let j = 0; j < n; j++) {
    const s = series[j] as Float64Array
    let acc = 0
    for (const t of days) acc += s[t]
    mean[j] = acc / m
  }
  const dev = new Float64Array(n)
  for (const t of days) {
    for (let j = 0; j < n; j++) dev[j] = (series[j] as Float64Array)[t] - mean[j]
    for (let a = 0; a < n; a++) {
      const da = dev[a]
      for (let b = a; b < n; b++) cov[a * n + b] = cov[a * n + b] + da * dev[b]
    }
  }
  for (let a = 0; a < n; a++)
    for (let b = a; b < n; b++) {
      const v = cov[a * n + b] / (m - 1)
      cov[a * n + b] = v
      cov[b * n + a] = v
    }
  return { cov, days: m }
}

/** Sample variance (n − 1) of the non-null values of `x` over [from, to), with their count. */
export function sampleVariance(
  x: ArrayLike<number>,
  from: number,
  to: number,
): { variance: number; n: number } {
  let n = 0
  let sum = 0
  for (let t = from; t < to; t++) {
    const v = x[t]
    if (Number.isNaN(v)) continue
    n++
    sum += v
  }
  if (n < 2) return { variance: Number.NaN, n }
  const mean = sum / n
  let ss = 0
  for (let t = from; t < to; t++) {
    const v = x[t]
    if (!Number.isNaN(v)) ss += (v - mean) * (v - mean)
  }
  return { variance: ss / (n - 1), n }
}

/** `S·x` for a dense symmetric n×n `S`. */
export function matVec(s: Float64Array, x: Float64Array): Float64Array {
  const n = x.length
  const out = new Float64Array(n)
  for (let a = 0; a < n; a++) {
    let acc = 0
    for (let b = 0; b < n; b++) acc += s[a * n + b] * x[b]
    out[a] = acc
  }
  return out
}

export function dot(x: ArrayLike<number>, y: ArrayLike<number>): number {
  let acc = 0
  for (let i = 0; i < x.length; i++) acc += x[i] * y[i]
  return acc
}

/** Daily layer strips of a book (equal lengths); `gross` is the book's own return. */
export interface Strips {
  gross: ArrayLike<number>
  market: ArrayLike<number>
  sector: ArrayLike<number>
  subsector: ArrayLike<number>
}

/**
 * Geometric multi-day totals: market Π(1+m)−1, sector Π(1+m+s)−Π(1+m), subsector
 * Π(1+m+s+u)−Π(1+m+s), residual Π(1+g)−Π(1+m+s+u), systematic Π(1+m+s+u)−1; the four layers
 * sum to the gross total Π(1+g)−1.
 */
export function compoundStrips(s: Strips): {
  gross: number
  market: number
  sector: number
  subsector: number
  residual: number
  systematic: number
} {
  let pm = 1
  let pms = 1
  let pmsu = 1
  let pg = 1
  for (let t = 0; t < s.gross.length; t++) {
    const m = s.market[t]
    const ms = m + s.sector[t]
    const msu = ms + s.subsector[t]
    pm *= 1 + m
    pms *= 1 + ms
    pmsu *= 1 + msu
    pg *= 1 + s.gross[t]
  }
  return {
    gross: pg - 1,
    market: pm - 1,
    sector: pms - pm,
    subsector: pmsu - pms,
    residual: pg - pmsu,
    systematic: pmsu - 1,
  }
}

/** Cumulative return Π(1+r)−1 to date and drawdown (1+cum)/max(1, running max of 1+cum) − 1. */
export function cumulativeAndDrawdown(r: ArrayLike<number>): {
  cumulative: Float64Array
  drawdown: Float64Array
  maxDrawdown: number
} {
  const cumulative = new Float64Array(r.length)
  const drawdown = new Float64Array(r.length)
  let level = 1
  let peak = 1
  let maxDrawdown = 0
  for (let t = 0; t < r.length; t++) {
    level *= 1 + r[t]
    if (level > peak) peak = level
    cumulative[t] = level - 1
    const dd = level / peak - 1
    drawdown[t] = dd
    if (dd < maxDrawdown) maxDrawdown = dd
  }
  return { cumulative, drawdown, maxDrawdown }
}
