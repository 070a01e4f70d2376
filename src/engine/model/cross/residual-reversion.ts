/**
 * Residual reversion signal (docs/methodology.md §12):
 * z = (sum of the last 5 l3_rr) / (std of the last 60 l3_rr × sqrt(5)).
 *
 * Null rules (chosen here, and stated in docs/methodology.md §12):
 * - the 5 short-window days t-4..t must all be non-null (a partial sum is not comparable);
 * - the 60-day std is the sample std (n - 1) of the non-null values among t-59..t, and needs at
 *   least 30 of them — half the window, the same proportion as the model's min_obs (126 of 252)
 *   and the same count as the 30-pair minimum of the correlation products;
 * - days before the start of the data count as null;
 * - z is NaN when the std is 0 (a constant window; the variance is then exactly 0, see
 *   windowStats) or the variance rounds to <= 0.
 *
 * The 60-day variance is a sliding Welford update (mean and centred sum of squares, so a mean
 * far from zero costs no precision), O(1) per day. Removing a value that dwarfed the rest of the
 * window would leave its rounding error behind (docs/methodology.md §15), so the state is rebuilt
 * from the window by two passes whenever the centred sum falls below 1/16 of its peak since the
 * last rebuild, and on a fixed schedule every 60th day (t % 60 === 0). Both rules depend only on
 * the data, so a replay from a scheduled day reproduces the state bit for bit. The 5-day sum is
 * summed directly (5 adds), which is exact enough and has no state.
 */
import type { Panel } from '../panel.ts'
import { type OrderScratch, orderBy, orderScratch } from './sort.ts'

export interface ReversionOptions {
  /** Days in the summed residual (default 5). */
  shortDays?: number
  /** Days in the std window (default 60). */
  longDays?: number
  /** Non-null days the std needs among longDays (default 30). */
  minObs?: number
}

export const REVERSION_DEFAULTS: Readonly<Required<ReversionOptions>> = {
  shortDays: 5,
  longDays: 60,
  minObs: 30,
}

/** Two-pass count, mean and centred sum of squares of the non-null x over the L days ending at t. */
function windowStats(x: Float64Array, t: number, L: number, st: Float64Array): void {
  const first = Math.max(0, t - L + 1)
  let n = 0
  let sum = 0
  let lo = Number.POSITIVE_INFINITY
  let hi = Number.NEGATIVE_INFINITY
  for (let d = first; d <= t; d++) {
    const v = x[d]
    if (!Number.isNaN(v)) {
      sum += v
      n++
      if (v < lo) lo = v
      if (v > hi) hi = v
    }
  }
  // A constant window has mean exactly its value and no spread; sum / n could be off by an ulp
  // and turn a zero std into a tiny one (and z into a huge number).
  const mean = n === 0 ? 0 : lo === hi ? lo : sum / n
  let m2 = 0
  if (lo !== hi) {
    for (let d = first; d <= t; d++) {
      const v = x[d]
      if (!Number.isNaN(v)) m2 += (v - mean) * (v - mean)
    }
  }
  st[0] = n
  st[1] = mean
  st[2] = m2
}

/** z for one stock's series into `out`; one kernel so the loop stays monomorphic. */
function reversionSeries(x: Float64Array, out: Float64Array, o: Required<ReversionOptions>): void {
  const { shortDays: S, longDays: L, minObs } = o
  const scale = Math.sqrt(S)
  let n = 0
  let mean = 0
  let m2 = 0
  let peak = 0
  const st = new Float64Array(3)
  for (let t = 0; t < x.length; t++) {
    const v = x[t]
    if (!Number.isNaN(v)) {
      n++
      const delta = v - mean
      mean += delta / n
      m2 += delta * (v - mean)
      if (m2 > peak) peak = m2
    }
    const gone = t >= L ? x[t - L] : Number.NaN
    if (!Number.isNaN(gone)) {
      n--
      if (n === 0) {
        mean = 0
        m2 = 0
      } else {
        const delta = gone - mean
        mean -= delta / n
        m2 -= delta * (gone - mean)
      }
    }
    if (t % L === 0 || m2 < peak * 0.0625) {
      windowStats(x, t, L, st)
      n = st[0]
      mean = st[1]
      m2 = st[2]
      peak = m2
    }
    out[t] = Number.NaN
    if (t < S - 1 || n < minObs || n < 2) continue
    let s = 0
    for (let d = t - S + 1; d <= t; d++) s += x[d]
    if (Number.isNaN(s)) continue
    const variance = m2 / (n - 1)
    if (variance > 0) out[t] = s / (Math.sqrt(variance) * scale)
  }
}

/** The reversion z per stock and day (NaN where undefined; see the header for the rules). */
export function residualReversion(l3Rr: Panel, options: ReversionOptions = {}): Panel {
  const o = { ...REVERSION_DEFAULTS, ...options }
  if (o.minObs > o.longDays || o.shortDays > o.longDays || o.longDays < 2) {
    throw new RangeError('residualReversion: need 2 <= longDays, shortDays <= longDays, minObs <= longDays')
  }
  return l3Rr.map((x) => {
    const out = new Float64Array(x.length)
    reversionSeries(x, out, o)
    return out
  })
}

/**
 * Cross-sectional buckets at day t over the active default-universe members:
 * - decile 1..10 of z ascending (1 = most negative), ordinal k of n → ceil(10k / n), ties by
 *   symbol index; 0 = no z or not active;
 * - qualityQuintile 1..5 of l3_sub_er ascending (5 = highest), ceil(5k / n) over the members that
 *   have a decile and a non-null l3_sub_er: the quintile qualifies the signal, so it is ranked
 *   among the stocks that carry one; 0 = none.
 */
export function reversionDeciles(
  z: Panel,
  l3SubEr: Panel,
  t: number,
  active: (i: number) => boolean,
  /** Buffers reused from day to day (decileScratch): the result is then a view into them. */
  scratch: DecileScratch = decileScratch(z.length),
): { decile: Int8Array; qualityQuintile: Int8Array } {
  const nSym = z.length
  const { zt, qt, withZ, withQ, decile, qualityQuintile, order } = scratch
  if (zt.length !== nSym) throw new RangeError(`decile scratch for ${zt.length} symbols, not ${nSym}`)
  decile.fill(0)
  qualityQuintile.fill(0)
  let nz = 0
  let nq = 0
  for (let i = 0; i < nSym; i++) {
    zt[i] = z[i][t]
    qt[i] = l3SubEr[i][t]
    if (Number.isNaN(zt[i]) || !active(i)) continue
    withZ[nz++] = i
    if (!Number.isNaN(qt[i])) withQ[nq++] = i
  }
  bucket(orderBy(zt, withZ, nz, false, order), 10, decile)
  bucket(orderBy(qt, withQ, nq, false, order), 5, qualityQuintile)
  return { decile, qualityQuintile }
}

/** reversionDeciles' buffers for `n` symbols (a build sweeps thousands of days with one). */
export interface DecileScratch {
  zt: Float64Array
  qt: Float64Array
  withZ: Int32Array
  withQ: Int32Array
  decile: Int8Array
  qualityQuintile: Int8Array
  order: OrderScratch
}

export function decileScratch(n: number): DecileScratch {
  return {
    zt: new Float64Array(n),
    qt: new Float64Array(n),
    withZ: new Int32Array(n),
    withQ: new Int32Array(n),
    decile: new Int8Array(n),
    qualityQuintile: new Int8Array(n),
    order: orderScratch(n),
  }
}

function bucket(order: Int32Array, buckets: number, out: Int8Array): void {
  const n = order.length
  for (let k = 0; k < n; k++) out[order[k]] = Math.ceil((buckets * (k + 1)) / n)
}
