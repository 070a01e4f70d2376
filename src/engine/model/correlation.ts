/**
 * Macro and style correlation (docs/methodology.md §13): Pearson or Spearman correlation of a stock's
 * return series with a factor series over the trailing `windowDays` *paired* days.
 *
 * Series are indexed by calendar day with NaN for null (the `Panel` layout). The window counts
 * pairs, not calendar days: it walks back from `end` collecting the days where both sides are
 * present, so a factor that starts late or a stock with gaps still gets `windowDays`
 * observations when history allows. A day counts as paired when both values are finite; ±∞ is
 * treated like a null (it would turn every moment into NaN).
 *
 * Given a `CorrelationScratch`, the kernels allocate no working arrays per call (only small
 * result objects and views): one stock against 18 factors reuses one scratch across all of
 * them (bench/correlation.ts).
 */
import { type OrderScratch, orderBy, orderScratch } from './cross/sort.ts'

export type CorrelationMethod = 'pearson' | 'spearman'

/** Fewest pairs for a reported correlation (docs/methodology.md §13). */
export const MIN_PAIRS = 30

/** Reusable working memory; arrays grow on demand, so any starting capacity works. */
export interface CorrelationScratch {
  xs: Float64Array
  ys: Float64Array
  /** Day index of each pair of the last window. */
  days: Int32Array
  /** The days whose ranks of the stock series `correlations` holds in `rx`. */
  rankedDays: Int32Array
  rx: Float64Array
  ry: Float64Array
  /** 0, 1, 2, … (the member list `orderBy` sorts). */
  identity: Int32Array
  order: OrderScratch
}

export function createCorrelationScratch(capacity = 256): CorrelationScratch {
  return {
    xs: new Float64Array(capacity),
    ys: new Float64Array(capacity),
    days: new Int32Array(capacity),
    rankedDays: new Int32Array(capacity),
    rx: new Float64Array(capacity),
    ry: new Float64Array(capacity),
    identity: Int32Array.from({ length: capacity }, (_, i) => i),
    order: orderScratch(capacity),
  }
}

function ensureCapacity(s: CorrelationScratch, n: number): void {
  if (s.xs.length < n) Object.assign(s, createCorrelationScratch(Math.max(n, 2 * s.xs.length)))
}

export interface PairedWindow {
  /** The paired values in day order (oldest first); views into the scratch when one is given. */
  xs: Float64Array
  ys: Float64Array
  /** Day index of each pair. */
  days: Int32Array
  /** Number of pairs found (≤ windowDays). */
  pairs: number
  /** Day index of the oldest pair, or -1 without pairs. */
  first: number
}

/**
 * The last `windowDays` paired days at or before `end` (inclusive), fewer when the series start
 * is reached first. Days past the end of either series count as missing. The returned arrays
 * are valid until the scratch's next use.
 */
export function pairedWindow(
  x: ArrayLike<number>,
  y: ArrayLike<number>,
  end: number,
  windowDays: number,
  scratch: CorrelationScratch = createCorrelationScratch(0),
): PairedWindow {
  // First pass finds the oldest paired day so the second can copy in day order.
  let t = Math.min(end, x.length - 1, y.length - 1)
  let pairs = 0
  let first = -1
  for (; t >= 0 && pairs < windowDays; t--) {
    if (Number.isFinite(x[t]) && Number.isFinite(y[t])) {
      pairs++
      first = t
    }
  }
  ensureCapacity(scratch, pairs)
  const { xs, ys, days } = scratch
  let j = 0
  for (let d = first; j < pairs; d++) {
    const a = x[d]
    const b = y[d]
    if (Number.isFinite(a) && Number.isFinite(b)) {
      xs[j] = a
      ys[j] = b
      days[j] = d
      j++
    }
  }
  return { xs: xs.subarray(0, pairs), ys: ys.subarray(0, pairs), days: days.subarray(0, pairs), pairs, first }
}

/**
 * Pearson correlation of `xs[0..n)` and `ys[0..n)` (n defaults to the shorter length).
 * Two-pass and centred (with the corrected-two-pass term for the rounding left in the means):
 * the means first, then the centred cross moments, each deviation scaled
 * by the side's range so that neither tiny nor large returns underflow or overflow the squares
 * (the correlation is scale-free). Null with fewer than two values or when either side is
 * constant (all values equal: zero variance, no correlation defined). Values must be finite.
 * Rounding can push |r| an ulp or so past 1; the result is clamped to [-1, 1].
 */
export function pearson(
  xs: ArrayLike<number>,
  ys: ArrayLike<number>,
  n = Math.min(xs.length, ys.length),
): number | null {
  if (n < 2) return null
  let sx = 0
  let sy = 0
  let xMin = xs[0]
  let xMax = xs[0]
  let yMin = ys[0]
  let yMax = ys[0]
  for (let i = 0; i < n; i++) {
    const a = xs[i]
    const b = ys[i]
    sx += a
    sy += b
    if (a < xMin) xMin = a
    else if (a > xMax) xMax = a
    if (b < yMin) yMin = b
    else if (b > yMax) yMax = b
  }
  if (xMin === xMax || yMin === yMax) return null
  const mx = sx / n
  const my = sy / n
  const kx = 1 / (xMax - xMin)
  const ky = 1 / (yMax - yMin)
  let ex = 0
  let ey = 0
  let sxx = 0
  let syy = 0
  let sxy = 0
  for (let i = 0; i < n; i++) {
    const dx = (xs[i] - mx) * kx
    const dy = (ys[i] - my) * ky
    ex += dx
    ey += dy
    sxx += dx * dx
    syy += dy * dy
    sxy += dx * dy
  }
  // The corrected two-pass form: ex, ey are the rounding error left in the means.
  sxx -= (ex * ex) / n
  syy -= (ey * ey) / n
  sxy -= (ex * ey) / n
  if (!(sxx > 0 && syy > 0)) return null // only when the range overflows (|values| near 1e308)
  const r = sxy / Math.sqrt(sxx * syy)
  return r > 1 ? 1 : r < -1 ? -1 : r
}

/**
 * Average ranks (1-based; a run of ties gets the mean of its positions, −0 and +0 tie) of
 * `xs[0..n)` into `out`. The order comes from the radix `orderBy` of the cross-sectional
 * rankings: O(n) passes plus an exact re-sort of near-tied runs, without the mispredicted
 * comparisons that make a comparator sort the cost of Spearman (bench/correlation.ts).
 */
export function averageRanks(
  xs: Float64Array,
  n: number,
  out: Float64Array,
  scratch: CorrelationScratch,
): void {
  ensureCapacity(scratch, n)
  const idx = orderBy(xs, scratch.identity, n, false, scratch.order)
  for (let s = 0; s < n; ) {
    const v = xs[idx[s]]
    let e = s + 1
    while (e < n && xs[idx[e]] === v) e++
    const rank = (s + 1 + e) / 2
    for (let j = s; j < e; j++) out[idx[j]] = rank
    s = e
  }
}

/** Spearman correlation: Pearson of the average ranks. Null rules as `pearson`. */
export function spearman(
  xs: Float64Array,
  ys: Float64Array,
  n = Math.min(xs.length, ys.length),
  scratch: CorrelationScratch = createCorrelationScratch(n),
): number | null {
  if (n < 2) return null
  ensureCapacity(scratch, n) // before reading scratch.rx: growing replaces it
  averageRanks(xs, n, scratch.rx, scratch)
  averageRanks(ys, n, scratch.ry, scratch)
  return pearson(scratch.rx, scratch.ry, n)
}

export interface CorrelationOptions {
  windowDays: number
  method: CorrelationMethod
  /** Fewer pairs than this → null (default MIN_PAIRS). */
  minPairs?: number
  scratch?: CorrelationScratch
}

export interface CorrelationResult {
  /** Null with fewer than `minPairs` pairs or when either side is constant over the window. */
  value: number | null
  /** Pairs in the window (reported as overlap_days even when the value is null). */
  pairs: number
}

/** Correlation of x and y over the trailing `windowDays` paired days ending at `end`. */
export function correlation(
  x: ArrayLike<number>,
  y: ArrayLike<number>,
  end: number,
  { windowDays, method, minPairs = MIN_PAIRS, scratch = createCorrelationScratch(0) }: CorrelationOptions,
): CorrelationResult {
  const w = pairedWindow(x, y, end, windowDays, scratch)
  if (w.pairs < Math.max(2, minPairs)) return { value: null, pairs: w.pairs }
  const value = method === 'pearson' ? pearson(w.xs, w.ys, w.pairs) : spearman(w.xs, w.ys, w.pairs, scratch)
  return { value, pairs: w.pairs }
}

/**
 * One stock against many factors: `correlation(x, factors[k], end, options)` for each k.
 * For Spearman the stock's ranks are kept while consecutive factors pair on exactly the same
 * days (the usual case: factors without gaps in the window), which halves the ranking work.
 */
export function correlations(
  x: ArrayLike<number>,
  factors: readonly ArrayLike<number>[],
  end: number,
  { windowDays, method, minPairs = MIN_PAIRS, scratch = createCorrelationScratch(0) }: CorrelationOptions,
): CorrelationResult[] {
  // Sized up front: growing mid-loop would replace rx and rankedDays.
  ensureCapacity(scratch, Math.min(windowDays, x.length))
  const results: CorrelationResult[] = []
  let ranked = -1 // pairs in scratch.rankedDays; -1 = none
  for (const y of factors) {
    const w = pairedWindow(x, y, end, windowDays, scratch)
    if (w.pairs < Math.max(2, minPairs)) {
      results.push({ value: null, pairs: w.pairs })
      continue
    }
    if (method === 'pearson') {
      results.push({ value: pearson(w.xs, w.ys, w.pairs), pairs: w.pairs })
      continue
    }
    if (!sameDays(scratch.rankedDays, ranked, w.days)) {
      averageRanks(w.xs, w.pairs, scratch.rx, scratch)
      scratch.rankedDays.set(w.days)
      ranked = w.pairs
    }
    averageRanks(w.ys, w.pairs, scratch.ry, scratch)
    results.push({ value: pearson(scratch.rx, scratch.ry, w.pairs), pairs: w.pairs })
  }
  return results
}

function sameDays(a: Int32Array, n: number, b: Int32Array): boolean {
  if (n !== b.length) return false
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return false
  return true
}
