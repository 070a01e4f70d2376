/**
 * A guaranteed positive semi-definite covariance (docs/methodology.md §13 "Risk forecast"): the
 * symmetric eigen-decomposition (cyclic Jacobi), negative eigenvalues clipped to zero, and the
 * matrix rebuilt. Pure; n×n row-major Float64Array.
 */

/** Eigenvalues and eigenvectors (columns of `vectors`, row-major n×n) of a symmetric matrix. */
function symmetricEigen(s: Float64Array, n: number): { values: Float64Array; vectors: Float64Array } {
  const a = Float64Array.from(s)
  const v = new Float64Array(n * n)
  for (let i = 0; i < n; i++) v[i * n + i] = 1
  for (let sweep = 0; sweep < 100; sweep++) {
    let off = 0
    let diag = 0
    for (let p = 0; p < n; p++) {
      diag += a[p * n + p] * a[p * n + p]
      for (let q = p + 1; q < n; q++) off += a[p * n + q] * a[p * n + q]
    }
    if (off <= 1e-30 * Math.max(diag, 1e-300)) break
    for (let p = 0; p < n; p++) for (let q = p + 1; q < n; q++) rotate(a, v, n, p, q)
  }
  const values = new Float64Array(n)
  for (let i = 0; i < n; i++) values[i] = a[i * n + i]
  return { values, vectors: v }
}

/** One Jacobi rotation zeroing a[p][q]. */
function rotate(a: Float64Array, v: Float64Array, n: number, p: number, q: number): void {
  const apq = a[p * n + q]
  if (apq === 0) return
  const theta = (a[q * n + q] - a[p * n + p]) / (2 * apq)
  const t = Math.sign(theta || 1) / (Math.abs(theta) + Math.sqrt(theta * theta + 1))
  const c = 1 / Math.sqrt(t * t + 1)
  const s = t * c
  for (let k = 0; k < n; k++) {
    const akp = a[k * n + p]
    const akq = a[k * n + q]
    a[k * n + p] = c * akp - s * akq
    a[k * n + q] = s * akp + c * akq
  }
  for (let k = 0; k < n; k++) {
    const apk = a[p * n + k]
    const aqk = a[q * n + k]
    a[p * n + k] = c * apk - s * aqk
    a[q * n + k] = s * apk + c * aqk
  }
  for (let k = 0; k < n; k++) {
    const vkp = v[k * n + p]
    const vkq = v[k * n + q]
    v[k * n + p] = c * vkp - s * vkq
    v[k * n + q] = s * vkp + c * vkq
  }
}

/**
 * Whether the Cholesky factorisation of a symmetric matrix exists (every pivot > 0): the matrix is
 * positive definite. A backward-stable test, so a matrix that passes has no eigenvalue below
 * −n·ε·‖s‖, far inside the −1e-12 relative tolerance of `nearestPsd`.
 */
function positiveDefinite(s: Float64Array, n: number): boolean {
  const l = new Float64Array(n * n)
  for (let j = 0; j < n; j++) {
    let d = s[j * n + j]
    for (let k = 0; k < j; k++) d -= l[j * n + k] * l[j * n + k]
    if (!(d > 0)) return false
    const ljj = Math.sqrt(d)
    l[j * n + j] = ljj
    for (let i = j + 1; i < n; i++) {
      let v = s[i * n + j]
      for (let k = 0; k < j; k++) v -= l[i * n + k] * l[j * n + k]
      l[i * n + j] = v / ljj
    }
  }
  return true
}

export interface PsdResult {
  cov: Float64Array
  /** Eigenvalues below zero that were set to zero. */
  clipped: number
  /** The factors outnumber the observations less one: the sample covariance is singular. */
  rankDeficient: boolean
}

/**
 * The nearest (Frobenius) positive semi-definite matrix of a symmetrised `s`: V·max(Λ, 0)·V'.
 * A matrix that is already PSD is returned symmetrised, unchanged otherwise. `observations` (the
 * days the estimate used) sets `rankDeficient` when n > observations − 1.
 */
export function nearestPsd(s: Float64Array, n: number, observations: number): PsdResult {
  const sym = new Float64Array(n * n)
  for (let a = 0; a < n; a++) for (let b = 0; b < n; b++) sym[a * n + b] = 0.5 * (s[a * n + b] + s[b * n + a])
  const rankDeficient = n > observations - 1
  if (n === 0 || sym.some((x) => Number.isNaN(x))) return { cov: sym, clipped: 0, rankDeficient }
  // Positive definite (the usual case): no eigenvalue to clip, so no eigen-decomposition needed.
  if (positiveDefinite(sym, n)) return { cov: sym, clipped: 0, rankDeficient }
  const { values, vectors } = symmetricEigen(sym, n)
  let clipped = 0
  const scale = values.reduce((m, x) => Math.max(m, Math.abs(x)), 0)
  for (let i = 0; i < n; i++) if (values[i] < -1e-12 * scale) clipped++
  if (clipped === 0) return { cov: sym, clipped, rankDeficient }
  const out = new Float64Array(n * n)
  for (let k = 0; k < n; k++) {
    const lam = Math.max(0, values[k])
    if (lam === 0) continue
    for (let a = 0; a < n; a++) {
      const va = lam * vectors[a * n + k]
      for (let b = 0; b < n; b++) out[a * n + b] += va * vectors[b * n + k]
    }
  }
  return { cov: out, clipped, rankDeficient }
}
