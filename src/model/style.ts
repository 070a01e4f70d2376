import { WindowMoments } from './moments.ts'
import type { ModelParams } from './params.ts'

/**
 * The style split of the residual variance (attribution only, never a hedge).
 *
 * On the level's own contributing days and weights, the stock return r is regressed jointly on
 * the hedge ETFs x (m, s, u at L3; m, s on subsector-fallback days) and the style ETF returns f,
 * with no intercept. By Frisch–Waugh–Lovell the style factors' increment to the explained sum of
 * squares is the in-sample residual e of the ETF fit regressed on the style returns purged of
 * the ETFs (f⊥ = f − projection of f on x), so
 *
 *   style = <e, P_f⊥ e> / <r, r>,   stock_specific = l3_res_er − style,
 *
 * and market + sector + subsector + style + stock_specific = 1. Purging matters: a style ETF is
 * mostly market, and only what it adds beyond the ETFs the stock is hedged with is style.
 *
 * It is computed as a Cholesky factorisation of the joint weighted Gram matrix, ETFs first, with
 * right-hand side <r, ·>: the squared forward-substituted coefficients of the style columns sum
 * to <e, P_f⊥ e>. A column whose remaining variance is at most `degenerateTol` of its own is
 * dropped, as the cascade drops a degenerate s* or u*. A style factor takes part on day t when it
 * has a return on every day of the window on which the stock's hedge ETFs have returns: before
 * an ETF's inception, or across a gap in its prices, it is left out, never zero-filled.
 *
 * Cost: the Gram matrix of (ETFs, style ETFs) and its factorisation do not depend on the stock
 * whenever the stock has a return on every day its ETFs have one, so `StyleBasis` computes them
 * once per ETF pair and day; a stock then adds only <r, f> (eight running sums) and one forward
 * substitution per day. A stock with missing returns in the window (a listing's first year, a
 * halt) falls back to its own full moment matrix for as long as the gap is in the window.
 */

/** Columns of the joint system: at most 3 ETFs and 16 style factors (masks are int16). */
const MAX_STYLE = 15

/** Packed lower-triangular index of (i, k), k <= i. */
const tri = (i: number, k: number) => (i * (i + 1)) / 2 + k

/**
 * Per ETF pair and day: the shared factorisation (see the module comment), stored compactly for
 * the per-stock forward substitution: the kept columns only (ETFs first, then style factors),
 * packed column by column, each column's reciprocal diagonal followed by its entries below it.
 */
export interface PairBasis {
  /** Contributing days of the window (the ETFs' non-null days). */
  count: Int32Array
  /** Bit j: style factor j covers the window (and has variance). */
  mask: Int16Array
  /** Bit a: ETF column a (0 = m) was kept (not degenerate). */
  etfKept: Int8Array
  /** Bit j: style factor j was kept (covers the window and is not degenerate). */
  styleKept: Int16Array
  /** Packed compact factor per day: up to `stride` values from t × stride. */
  l: Float64Array
  stride: number
  /** ETF columns (2 or 3). */
  nx: number
}

/** Style factorisations per ETF pair, computed on first use over the whole calendar. */
export class StyleBasis {
  private readonly pairs = new Map<number, PairBasis>()

  constructor(
    private readonly m: Float64Array,
    private readonly etf: readonly Float64Array[],
    readonly style: readonly Float64Array[],
    private readonly weights: Float64Array,
    private readonly params: ModelParams,
  ) {
    if (style.length > MAX_STYLE) throw new RangeError(`at most ${MAX_STYLE} style factors`)
    const ns = style.length
    const T = m.length
    this.styleZ = new Float64Array(T * ns)
    for (let j = 0; j < ns; j++) {
      const f = style[j]
      for (let t = 0; t < T; t++) this.styleZ[t * ns + j] = Number.isNaN(f[t]) ? 0 : f[t]
    }
  }

  /**
   * The style returns with nulls as 0, day-major (day t's factors at [t × ns, (t+1) × ns)), for
   * the running <r, f> sums (CrossSums).
   */
  readonly styleZ: Float64Array

  /** u = -1: the subsector fell back to the sector ETF (ETFs m, s). */
  pair(sec: number, u: number): PairBasis {
    const key = sec * 65536 + (u + 1)
    let b = this.pairs.get(key)
    if (!b) {
      b = this.compute(sec, u)
      this.pairs.set(key, b)
    }
    return b
  }

  private compute(sec: number, u: number): PairBasis {
    const T = this.m.length
    const ns = this.style.length
    const xs = u < 0 ? [this.m, this.etf[sec]] : [this.m, this.etf[sec], this.etf[u]]
    const nx = xs.length
    const p = nx + ns
    const stride = (p * (p + 1)) / 2
    const out: PairBasis = {
      count: new Int32Array(T),
      mask: new Int16Array(T),
      etfKept: new Int8Array(T),
      styleKept: new Int16Array(T),
      l: new Float64Array(T * stride),
      stride,
      nx,
    }
    const mm = new WindowMoments(p, this.weights, nx)
    const vars = [...xs, ...this.style]
    const cols = new Int32Array(p)
    const full = new Float64Array(stride)
    const tol = this.params.degenerateTol
    for (let t = 0; t < T; t++) {
      if (t % this.params.rebaseEvery === 0) mm.rebase(vars, t)
      else mm.advance(vars, t)
      out.count[t] = mm.count
      if (mm.count === 0) continue
      let n = 0
      for (let a = 0; a < nx; a++) cols[n++] = a
      let mask = 0
      for (let j = 0; j < ns; j++) {
        const c = nx + j
        if (mm.nulls[j] === 0 && mm.get(c, c) > 0) {
          cols[n++] = c
          mask |= 1 << j
        }
      }
      out.mask[t] = mask
      const kept = choleskyInto(mm, 0, cols, n, tol, full, 0)
      // Compact, kept rows and columns only, column by column: 1 / L_kk, then L_ik for i > k.
      let at = t * stride
      for (let k = 0; k < n; k++) {
        if (!(kept & (1 << k))) continue
        out.l[at++] = 1 / full[tri(k, k)]
        for (let i = k + 1; i < n; i++) if (kept & (1 << i)) out.l[at++] = full[tri(i, k)]
        const c = cols[k]
        if (c < nx) out.etfKept[t] |= 1 << c
        else out.styleKept[t] |= 1 << (c - nx)
      }
    }
    return out
  }
}

/**
 * Packed lower Cholesky factor of the Gram matrix of columns `cols[0..n)` of `mm` (offset `off`
 * into the variable indices), written at `l[at …]`; returns the kept-column bits. A degenerate
 * column (remaining variance ≤ tol × its own) is skipped: its row of the factor is left unused.
 */
function choleskyInto(
  mm: WindowMoments,
  off: number,
  cols: Int32Array,
  n: number,
  tol: number,
  l: Float64Array,
  at: number,
): number {
  let kept = 0
  for (let i = 0; i < n; i++) {
    const ci = cols[i] + off
    const diag = mm.get(ci, ci)
    let d = diag
    for (let k = 0; k < i; k++) if (kept & (1 << k)) d -= l[at + tri(i, k)] ** 2
    if (!(d > tol * diag)) continue
    kept |= 1 << i
    const lii = Math.sqrt(d)
    l[at + tri(i, i)] = lii
    for (let j = i + 1; j < n; j++) {
      let v = mm.get(cols[j] + off, ci)
      for (let k = 0; k < i; k++) if (kept & (1 << k)) v -= l[at + tri(j, k)] * l[at + tri(i, k)]
      l[at + tri(j, i)] = v / lii
    }
  }
  return kept
}

/**
 * Σ_k w_k r_{t-k} f_{t-k} over the level's contributing days (r and its ETFs non-null), one sum
 * per style factor, a null factor return counting as 0 (a factor with a null on a contributing
 * day never takes part, so its sum is never read). Rebased whenever the level's own moment
 * matrix is, so replays reproduce it bit for bit.
 */
export class CrossSums {
  readonly sums: Float64Array
  private readonly lambda: number
  private readonly lambdaW: number

  constructor(
    n: number,
    private readonly weights: Float64Array,
  ) {
    this.sums = new Float64Array(n)
    this.lambda = weights.length > 1 ? weights[1] : 1
    this.lambdaW = this.lambda * weights[weights.length - 1]
  }

  /** `styleZ`: the style returns with nulls as 0, day-major (StyleBasis.styleZ). */
  rebase(level: readonly Float64Array[], styleZ: Float64Array, t: number): void {
    const { sums, weights } = this
    const n = sums.length
    sums.fill(0)
    const first = Math.max(0, t - weights.length + 1)
    for (let d = t; d >= first; d--) {
      if (!contributes(level, d)) continue
      const wr = weights[t - d] * level[0][d]
      for (let j = 0, q = d * n; j < n; j++, q++) sums[j] += wr * styleZ[q]
    }
  }

  /**
   * Advances to t after `level.advance(…, t)` returned true: day t and the departing day are added
   * and removed as the level's own sums just did (its `entered`/`left` flags and rows; variable
   * 0 is r). Adding r·0 for a null factor return leaves a sum unchanged, bit for bit.
   */
  advance(level: WindowMoments, styleZ: Float64Array, t: number): void {
    const { sums, lambda } = this
    const n = sums.length
    if (level.entered) {
      const r = level.x[0]
      for (let j = 0, q = t * n; j < n; j++, q++) sums[j] = sums[j] * lambda + r * styleZ[q]
    } else for (let j = 0; j < n; j++) sums[j] *= lambda
    if (level.left) {
      const wr = this.lambdaW * level.departing[0]
      for (let j = 0, q = (t - this.weights.length) * n; j < n; j++, q++) sums[j] -= wr * styleZ[q]
    }
  }
}

function contributes(vars: readonly Float64Array[], d: number): boolean {
  for (let a = 0; a < vars.length; a++) if (Number.isNaN(vars[a][d])) return false
  return true
}

/** Output of a style split: the share and the style factors that took part. */
export interface StyleResult {
  /** Style share of the total (uncentred, weighted) variance; NaN when no style factor took part. */
  share: number
  /** Bit j set: style factor j took part (and was not degenerate). */
  mask: number
}

/** Scratch for the forward substitution and the fallback factorisation. */
export interface StyleScratch {
  z: Float64Array
  cols: Int32Array
  l: Float64Array
}

export function styleScratch(nStyle: number): StyleScratch {
  const p = 3 + nStyle
  return { z: new Float64Array(p), cols: new Int32Array(p), l: new Float64Array((p * (p + 1)) / 2) }
}

/**
 * The share from a shared factorisation: `level` holds the level's moments (variable 0 = r, then
 * its ETFs), `rf[j]` = <r, f_j>; capped at the level's residual share (rounding can only pass it
 * by ulps).
 */
export function styleFromBasis(
  b: PairBasis,
  t: number,
  level: WindowMoments,
  rf: Float64Array,
  resEr: number,
  s: StyleScratch,
  out: StyleResult,
): void {
  const styleKept = b.styleKept[t]
  // Row 0 of the level's packed moments: <r, r>, then <r, x_a> at a + 1.
  const sums = level.sums
  const rr = sums[0]
  out.mask = 0
  if (styleKept === 0 || !(rr > 0) || Number.isNaN(resEr)) {
    out.share = Number.NaN
    return
  }
  // Right-hand side <r, column> of the kept columns, in the factor's order.
  const { z } = s
  const etfKept = b.etfKept[t]
  let n = 0
  for (let a = 0; a < b.nx; a++) if (etfKept & (1 << a)) z[n++] = sums[a + 1]
  const nxKept = n
  for (let j = 0; j < rf.length; j++) if (styleKept & (1 << j)) z[n++] = rf[j]
  // Forward substitution in place, column by column (z_k = y_k / L_kk, then y_i −= L_ik z_k for
  // i > k): the updates of one column are independent, so they pipeline instead of forming one
  // long chain of dependent subtractions.
  const l = b.l
  let at = t * b.stride
  let style = 0
  for (let k = 0; k < n; k++) {
    const zk = z[k] * l[at++]
    z[k] = zk
    if (k >= nxKept) style += zk * zk
    for (let i = k + 1; i < n; i++) z[i] -= l[at++] * zk
  }
  out.mask = styleKept
  out.share = Math.min(Math.max(style / rr, 0), resEr)
}

/**
 * The share from the stock's own moment matrix `mm` (variable 0 = r, then the ETFs as required
 * variables, then the style factors as optional ones), for days on which the stock misses returns
 * its ETFs have; `allowed` is the pair's coverage mask of the day.
 */
export function styleFromMoments(
  mm: WindowMoments,
  allowed: number,
  resEr: number,
  tol: number,
  s: StyleScratch,
  out: StyleResult,
): void {
  const nx = mm.required - 1
  const rr = mm.get(0, 0)
  out.mask = 0
  let n = 0
  for (let a = 1; a <= nx; a++) s.cols[n++] = a
  for (let j = 0; j < mm.k - mm.required; j++) {
    const c = mm.required + j
    if (allowed & (1 << j) && mm.nulls[j] === 0 && mm.get(c, c) > 0) s.cols[n++] = c
  }
  if (n === nx || !(rr > 0) || Number.isNaN(resEr)) {
    out.share = Number.NaN
    return
  }
  const kept = choleskyInto(mm, 0, s.cols, n, tol, s.l, 0)
  let style = 0
  for (let i = 0; i < n; i++) {
    if (!(kept & (1 << i))) continue
    let v = mm.get(0, s.cols[i])
    for (let k = 0; k < i; k++) if (kept & (1 << k)) v -= s.l[tri(i, k)] * s.z[k]
    const zi = v / s.l[tri(i, i)]
    s.z[i] = zi
    if (i >= nx) {
      style += zi * zi
      out.mask |= 1 << (s.cols[i] - mm.required)
    }
  }
  out.share = Math.min(Math.max(style / rr, 0), resEr)
}
