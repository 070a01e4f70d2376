import { WindowMoments } from './moments.ts'
import { choleskyInto, type PairBasis, type StyleBasis, tri } from './style-basis.ts'
import { type Substitution, substitution } from './style-substitution.ts'

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
 * halt) falls back to its own full moment matrix for as long as the gap is in the window. The
 * kernel's day loop only records what the split needs of each day (`StyleDays`); `styleSplit`
 * then runs over a stock's days as a tight loop of its own, which keeps the kernel's loop as it
 * is without the split and is cheaper than interleaving the two (docs/performance.md).
 */

interface StyleResult {
  /** Style share of the total (uncentred, weighted) variance; NaN when no style factor took part. */
  share: number
  /** Bit j set: style factor j took part (and was not degenerate). */
  mask: number
}

/** Scratch for the forward substitution and the fallback factorisation. */
interface StyleScratch {
  z: Float64Array
  cols: Int32Array
  l: Float64Array
}

function styleScratch(nStyle: number): StyleScratch {
  const p = 3 + nStyle
  return { z: new Float64Array(p), cols: new Int32Array(p), l: new Float64Array((p * (p + 1)) / 2) }
}

/**
 * The share from the stock's own moment matrix `mm` (variable 0 = r, then the ETFs as required
 * variables, then the style factors as optional ones), for days on which the stock misses returns
 * its ETFs have; `allowed` is the pair's coverage mask of the day.
 */
function styleFromMoments(
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

/**
 * What the style split needs of each day of one stock, recorded by the kernel's day loop
 * (stock-kernel.ts) as it runs the level moments: the split then runs as a loop of its own.
 */
export class StyleDays {
  /** (sector ETF << 16) | subsector ETF (0xffff: fallback to the sector ETF); -1: no model level. */
  readonly key: Int32Array
  /** Bit 0: fallback (level L2); 1: the level's sums were rebased; 2 / 3: its entered / left. */
  readonly flags: Uint8Array
  /** The level's contributing days. */
  readonly count: Int32Array
  /** The level's packed sums [<r, r>, <r, m>, <r, s>, <r, u> (L3)] at 4t. */
  readonly sums: Float64Array

  private constructor(readonly capacity: number) {
    this.key = new Int32Array(capacity)
    this.flags = new Uint8Array(capacity)
    this.count = new Int32Array(capacity)
    this.sums = new Float64Array(4 * capacity)
  }

  private static shared: StyleDays | null = null

  /** Scratch for at least `days` days, reused from stock to stock (single-threaded). */
  static scratch(days: number): StyleDays {
    if (!StyleDays.shared || StyleDays.shared.capacity < days) StyleDays.shared = new StyleDays(days)
    return StyleDays.shared
  }
}

/** Values of the style split's saved state (see `styleSplit`) with `ns` style factors. */
export function styleStateSize(ns: number): number {
  return 2 + ns + 1 + WindowMoments.stateSize(3 + ns, 3) + 1 + WindowMoments.stateSize(4 + ns, 4)
}

/** Where the style split keeps its state in the kernel's (stock-kernel.ts `StockOutput.state`). */
export interface StyleState {
  state: Float64Array
  at: number
  /** Continue from the state at `at` (saved by a run that ended at `from`) instead of replaying. */
  resume: boolean
}

/**
 * The style split of days [from, to) of one stock (replayed from `start`, the kernel's replay
 * day, so an incremental run reproduces a full run's state; or, with `saved.resume`, continued
 * from the saved state, start = from): `resEr` is the level's residual share (l3_res_er), `er`
 * and `factors` receive l3_style_er and style_factors. With `saved`, the state after the last
 * day is written there: the previous day's level key, whether it used the stock's own moments,
 * <r, f>, and the stock's own L2 and L3 moment matrices (each flagged present), canonical as the
 * kernel's: what the next day would rebase is saved as zeros.
 *
 * <r, f> of the level (one sum per style factor, a null factor return counting as 0: a factor
 * with a null on a contributing day never takes part, so its sum is never read) follow the
 * level's own moment matrix: rebased with it (and whenever the level switches, which always
 * rebases it), else advanced with the day that entered and the one that left as the level's sums
 * just were (adding r·0 for a null factor return leaves a sum unchanged, bit for bit). The
 * stock's own full moment matrix runs only while it has a model and misses returns its ETFs have.
 */
export function styleSplit(
  basis: StyleBasis,
  r: Float64Array,
  sd: StyleDays,
  start: number,
  from: number,
  to: number,
  resEr: Float64Array,
  er: Float64Array,
  factors: Float64Array,
  saved?: StyleState,
): void {
  const { m, etf, params, weights, styleZ, style } = basis
  const ns = style.length
  const W = weights.length
  const lambda = W > 1 ? weights[1] : 1
  const lambdaW = lambda * weights[W - 1]
  const cross = new Float64Array(ns)
  const scratch = styleScratch(ns)
  const res: StyleResult = { share: Number.NaN, mask: 0 }
  let full2: WindowMoments | null = null
  let full3: WindowMoments | null = null
  let vFull: Float64Array[] = []
  let prevKey = -1
  let prevOwn = false
  let pairKey = -1
  let pb: PairBasis | null = null
  let sub: Substitution = substitution(0, 0, 0)
  let subStyle = 0
  let subEtf = 0
  let subNx = 0
  const resume = saved?.resume === true
  const size2 = WindowMoments.stateSize(3 + ns, 3)
  const size3 = WindowMoments.stateSize(4 + ns, 4)
  if (saved && resume) {
    const st = saved.state
    let at = saved.at
    prevKey = st[at++]
    prevOwn = st[at++] === 1
    cross.set(st.subarray(at, at + ns))
    at += ns
    if (st[at++] === 1) full2 = new WindowMoments(3 + ns, weights, 3)
    at = full2 ? full2.loadState(st, at) : at + size2
    if (st[at++] === 1) full3 = new WindowMoments(4 + ns, weights, 4)
    if (full3) full3.loadState(st, at)
    if (prevOwn) {
      const sec = prevKey >> 16
      const u = prevKey & 0xffff
      vFull = u === 0xffff ? [r, m, etf[sec], ...style] : [r, m, etf[sec], etf[u], ...style]
    }
  }
  for (let t = start; t < to; t++) {
    const key = sd.key[t]
    if (key < 0) {
      prevKey = -1
      prevOwn = false
      if (t >= from) {
        er[t] = Number.NaN
        factors[t] = 0
      }
      continue
    }
    const flags = sd.flags[t]
    const fallback = (flags & 1) !== 0
    const sec = key >> 16
    const u = fallback ? -1 : key & 0xffff
    if (flags & 2) {
      // Rebase: Σ_k w_k r_{t-k} f_{t-k} over the level's contributing days of the window.
      cross.fill(0)
      const su = u >= 0 ? etf[u] : m
      const ss = etf[sec]
      for (let d = t, first = Math.max(0, t - W + 1); d >= first; d--) {
        const rd = r[d]
        if (Number.isNaN(rd) || Number.isNaN(m[d]) || Number.isNaN(ss[d]) || Number.isNaN(su[d])) continue
        const wr = weights[t - d] * rd
        for (let j = 0, q = d * ns; j < ns; j++, q++) cross[j] += wr * styleZ[q]
      }
    } else {
      // Day t enters (flag 4) and day t − W leaves (flag 8), each rounded as a step of its own.
      const q0 = t * ns
      const q1 = (t - W) * ns
      if ((flags & 12) === 12) {
        const rt = r[t]
        const wr = lambdaW * r[t - W]
        for (let j = 0; j < ns; j++) cross[j] = cross[j] * lambda + rt * styleZ[q0 + j] - wr * styleZ[q1 + j]
      } else if (flags & 4) {
        const rt = r[t]
        for (let j = 0; j < ns; j++) cross[j] = cross[j] * lambda + rt * styleZ[q0 + j]
      } else if (flags & 8) {
        const wr = lambdaW * r[t - W]
        for (let j = 0; j < ns; j++) cross[j] = cross[j] * lambda - wr * styleZ[q1 + j]
      } else for (let j = 0; j < ns; j++) cross[j] *= lambda
    }
    if (pb === null || key !== pairKey) {
      pb = basis.pair(sec, u)
      pairKey = key
    }
    const count = sd.count[t]
    const own = count >= params.minObs && count !== pb.count[t]
    let full: WindowMoments | null = null
    if (own) {
      if (fallback) full = full2 ??= new WindowMoments(3 + ns, weights, 3)
      else full = full3 ??= new WindowMoments(4 + ns, weights, 4)
      const fresh = key !== prevKey || !prevOwn
      if (fresh) vFull = fallback ? [r, m, etf[sec], ...style] : [r, m, etf[sec], etf[u], ...style]
      if ((t === start && !resume) || t % params.rebaseEvery === 0 || fresh) full.rebase(vFull, t)
      else full.advance(vFull, t)
    }
    prevKey = key
    prevOwn = own
    if (t < from) continue
    const resT = resEr[t]
    if (Number.isNaN(resT)) {
      er[t] = Number.NaN
      factors[t] = 0
    } else if (full) {
      styleFromMoments(full, pb.mask[t], resT, params.degenerateTol, scratch, res)
      er[t] = res.share
      factors[t] = res.mask
    } else {
      // The shared factorisation, with right-hand side <r, column> of the kept columns.
      const styleKept = pb.styleKept[t]
      const rr = sd.sums[4 * t]
      if (styleKept === 0 || !(rr > 0)) {
        er[t] = Number.NaN
        factors[t] = 0
        continue
      }
      const etfKept = pb.etfKept[t]
      if (styleKept !== subStyle || etfKept !== subEtf || pb.nx !== subNx) {
        sub = substitution(pb.nx, etfKept, styleKept)
        subStyle = styleKept
        subEtf = etfKept
        subNx = pb.nx
      }
      const share = sub(pb.l, t * pb.stride, sd.sums, 4 * t, cross)
      er[t] = Math.min(Math.max(share / rr, 0), resT)
      factors[t] = styleKept
    }
  }
  if (saved) {
    // Only what the next day reads: <r, f> while the level lasts, the own matrix in use.
    const st = saved.state
    let at = saved.at
    st[at++] = prevKey
    st[at++] = prevOwn ? 1 : 0
    if (prevKey >= 0) st.set(cross, at)
    else st.fill(0, at, at + ns)
    at += ns
    const own2 = prevOwn && (prevKey & 0xffff) === 0xffff ? full2 : null
    const own3 = prevOwn && (prevKey & 0xffff) !== 0xffff ? full3 : null
    st[at++] = own2 ? 1 : 0
    if (own2) own2.saveState(st, at)
    else st.fill(0, at, at + size2)
    at += size2
    st[at++] = own3 ? 1 : 0
    if (own3) own3.saveState(st, at)
    else st.fill(0, at, at + size3)
  }
}
