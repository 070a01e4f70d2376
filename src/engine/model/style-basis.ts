import { WindowMoments } from './moments.ts'
import type { ModelParams } from './params.ts'

/**
 * The shared half of the style split (style.ts, whose comment has the method): per hedge-ETF pair
 * and day, the Cholesky factorisation of the Gram matrix of (ETFs, style ETFs), which does not
 * depend on the stock; `StyleBasis` computes it once per pair over the whole calendar.
 */

/** Columns of the joint system: at most 3 ETFs and 15 style factors (masks are int16). */
const MAX_STYLE = 15

/** Packed lower-triangular index of (i, k), k <= i. */
export const tri = (i: number, k: number) => (i * (i + 1)) / 2 + k

/**
 * Per ETF pair and day: the shared factorisation (see the module comment), stored compactly for
 * the per-stock forward substitution: the kept columns only (ETFs first, then style factors),
 * packed row by row, each row's entries left of the diagonal followed by its reciprocal diagonal.
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

/** Allocates a pair basis's arrays: plain, or on SharedArrayBuffers to share them across threads. */
export type BasisAlloc = <C>(ctor: new (length: number) => C, length: number) => C

const plainAlloc: BasisAlloc = (ctor, length) => new ctor(length)

/**
 * Style factorisations per ETF pair, computed on first use over the calendar from the last
 * scheduled rebase day at or before `from` (an incremental run's stocks replay from that day, so
 * they read no earlier day; a rebase there gives the full run's values bit for bit).
 */
export class StyleBasis {
  private readonly pairs = new Map<number, PairBasis>()
  /** First day factorised (days before it are left zero). */
  private readonly start: number

  constructor(
    readonly m: Float64Array,
    readonly etf: readonly Float64Array[],
    readonly style: readonly Float64Array[],
    readonly weights: Float64Array,
    readonly params: ModelParams,
    from = 0,
    private readonly alloc: BasisAlloc = plainAlloc,
  ) {
    this.start = from - (from % params.rebaseEvery)
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

  /** Every pair basis computed (or adopted) so far, by pair key. */
  get computed(): ReadonlyMap<number, PairBasis> {
    return this.pairs
  }

  /**
   * Takes pair bases another StyleBasis of the same inputs computed (the same numbers: a pair's
   * factorisation depends only on the shared inputs), so threads can share one copy of them.
   */
  adopt(pairs: ReadonlyMap<number, PairBasis>): void {
    for (const [key, b] of pairs) if (!this.pairs.has(key)) this.pairs.set(key, b)
  }

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
      count: this.alloc(Int32Array, T),
      mask: this.alloc(Int16Array, T),
      etfKept: this.alloc(Int8Array, T),
      styleKept: this.alloc(Int16Array, T),
      l: this.alloc(Float64Array, T * stride),
      stride,
      nx,
    }
    const mm = new WindowMoments(p, this.weights, nx)
    const vars = [...xs, ...this.style]
    const cols = new Int32Array(p)
    const full = new Float64Array(stride)
    const tol = this.params.degenerateTol
    for (let t = this.start; t < T; t++) {
      if (t === this.start || t % this.params.rebaseEvery === 0) mm.rebase(vars, t)
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
      // Compact, kept rows and columns only, row by row: L_ik for kept k < i, then 1 / L_ii.
      let at = t * stride
      const l = out.l
      for (let i = 0; i < n; i++) {
        if (!(kept & (1 << i))) continue
        const row = (i * (i + 1)) >> 1
        for (let k = 0; k < i; k++) if (kept & (1 << k)) l[at++] = full[row + k]
        l[at++] = 1 / full[row + i]
        const c = cols[i]
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
export function choleskyInto(
  mm: WindowMoments,
  off: number,
  cols: Int32Array,
  n: number,
  tol: number,
  l: Float64Array,
  at: number,
): number {
  // mm.get(a, b) and tri(i, k) written out with the sums' and the factor's row offsets.
  const sums = mm.sums
  const K = mm.k
  let kept = 0
  for (let i = 0; i < n; i++) {
    const ci = cols[i] + off
    const rowI = ci * K - ((ci * (ci - 1)) >> 1) - ci
    const diag = sums[rowI + ci]
    const li = at + ((i * (i + 1)) >> 1)
    let d = diag
    for (let k = 0; k < i; k++) if (kept & (1 << k)) d -= l[li + k] ** 2
    if (!(d > tol * diag)) continue
    kept |= 1 << i
    const lii = Math.sqrt(d)
    l[li + i] = lii
    for (let j = i + 1; j < n; j++) {
      const cj = cols[j] + off
      let v = cj <= ci ? sums[cj * K - ((cj * (cj - 1)) >> 1) - cj + ci] : sums[rowI + cj]
      const lj = at + ((j * (j + 1)) >> 1)
      for (let k = 0; k < i; k++) if (kept & (1 << k)) v -= l[lj + k] * l[li + k]
      l[lj + i] = v / lii
    }
  }
  return kept
}

/** Output of a style split: the share and the style factors that took part. */
