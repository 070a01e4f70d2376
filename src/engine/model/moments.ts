/**
 * Rolling half-life-weighted, uncentred moment matrices over a fixed calendar window
 * (docs/methodology.md §4): S = Σ_k w_k x_{t-k} x_{t-k}ᵀ over the contributing days, w_k = λ^k.
 *
 * Updated in O(1) per day: S ← λS + x_t x_tᵀ − λ^W x_{t-W} x_{t-W}ᵀ. Every update rounds
 * relative to the sums as they were, so once large values have left the window their rounding
 * error stays behind in a much smaller sum (a property test found exactly this). The error is
 * bounded by the largest diagonal sum held since the last rebase, so the sums are recomputed
 * from the window whenever a diagonal falls below 1/64 of that peak — also after a cascade of
 * departures each below 64× what remained (300², then 40², 5², 0.8²: a property test found
 * that too) — and every `rebaseEvery` days on a fixed schedule.
 * Both rules depend only on the data, so a replay from a scheduled rebase day reproduces the
 * running state bit for bit.
 *
 * Variables are passed as series (index = day); the upper triangle is stored row by row.
 */
export class WindowMoments {
  readonly k: number
  readonly sums: Float64Array
  count = 0
  readonly lambda: number
  readonly lambdaW: number
  /** Scratch rows (not state). */
  readonly x: Float64Array
  readonly departing: Float64Array
  /** Largest value of each diagonal sum since the last rebase (state: replays reproduce it). */
  private readonly peak: Float64Array
  /**
   * Variables [required, k) are optional: a day contributes when the required ones are non-null,
   * and a null optional value enters the sums as 0. `nulls[j]` counts the contributing days of the
   * window on which optional variable `required + j` was null, so its sums are exact (those of
   * its own non-null days) exactly when the count is 0.
   */
  readonly required: number
  readonly nulls: Int32Array
  /** After `advance`: day t contributed (its values are in `x`); the departing day did (in `departing`). */
  entered = false
  left = false

  constructor(
    k: number,
    private readonly weights: Float64Array,
    required = k,
  ) {
    this.k = k
    this.required = required
    this.nulls = new Int32Array(k - required)
    this.sums = new Float64Array((k * (k + 1)) / 2)
    this.lambda = weights.length > 1 ? weights[1] : 1
    this.lambdaW = this.lambda * weights[weights.length - 1]
    this.x = new Float64Array(k)
    this.departing = new Float64Array(k)
    this.peak = new Float64Array(k)
  }

  /** Values `saveState` writes for a matrix of k variables, `required` of them required. */
  static stateSize(k: number, required = k): number {
    return (k * (k + 1)) / 2 + 1 + k + (k - required)
  }

  /**
   * Writes the running state (sums, count, peaks, null counts) at `out[at …]`; returns the index
   * after it. `loadState` of it continues the window exactly where this one stands (an
   * incremental build resumes from the previous build's state instead of replaying).
   */
  saveState(out: Float64Array, at: number): number {
    out.set(this.sums, at)
    let p = at + this.sums.length
    out[p++] = this.count
    out.set(this.peak, p)
    p += this.k
    for (let j = 0; j < this.nulls.length; j++) out[p++] = this.nulls[j]
    return p
  }

  /** Restores a state `saveState` wrote at `src[at …]`; returns the index after it. */
  loadState(src: Float64Array, at: number): number {
    this.sums.set(src.subarray(at, at + this.sums.length))
    let p = at + this.sums.length
    this.count = src[p++]
    this.peak.set(src.subarray(p, p + this.k))
    p += this.k
    for (let j = 0; j < this.nulls.length; j++) this.nulls[j] = src[p++]
    return p
  }

  /** Index of <x_a, x_b> (a <= b) in `sums`. */
  idx(a: number, b: number): number {
    return a * this.k - (a * (a - 1)) / 2 + (b - a)
  }

  /** Recomputes the sums for the window ending at t from scratch. */
  rebase(vars: readonly Float64Array[], t: number): void {
    const { k, sums, x, weights } = this
    sums.fill(0)
    this.count = 0
    this.nulls.fill(0)
    const first = Math.max(0, t - weights.length + 1)
    for (let d = t; d >= first; d--) {
      if (!this.loadDay(vars, d, x, 1)) continue
      const w = weights[t - d]
      let p = 0
      for (let a = 0; a < k; a++) {
        const wa = w * x[a]
        for (let b = a; b < k; b++) sums[p++] += wa * x[b]
      }
      this.count++
    }
    for (let a = 0; a < k; a++) this.peak[a] = Math.abs(sums[this.idx(a, a)])
  }

  /**
   * Advances the window from t-1 to t. Returns false when a rebase was needed instead (the sums
   * are then already recomputed).
   */
  advance(vars: readonly Float64Array[], t: number): boolean {
    const { k, sums, x, departing, lambda, lambdaW, peak } = this
    for (let p = 0; p < sums.length; p++) sums[p] *= lambda
    this.entered = this.loadDay(vars, t, x, 1)
    if (this.entered) {
      addOuter(sums, x, k)
      this.count++
    }
    const d = t - this.weights.length
    this.left = d >= 0 && this.loadDay(vars, d, departing, -1)
    if (this.left) {
      let p = 0
      for (let a = 0; a < k; a++) {
        for (let b = a; b < k; b++) sums[p++] -= lambdaW * departing[a] * departing[b]
      }
      this.count--
    }
    let small = false
    for (let a = 0, p = 0; a < k; p += k - a, a++) {
      const v = Math.abs(sums[p])
      if (v > peak[a]) peak[a] = v
      else if (64 * v < peak[a]) small = true
    }
    if (small) {
      this.rebase(vars, t)
      return false
    }
    return true
  }

  /** Loads day d (false: not a contributing day); counts its null optional values with `sign`. */
  private loadDay(vars: readonly Float64Array[], d: number, out: Float64Array, sign: 1 | -1): boolean {
    const { required, k } = this
    if (required === k) return load(vars, d, out)
    for (let a = 0; a < required; a++) {
      const v = vars[a][d]
      if (Number.isNaN(v)) return false
      out[a] = v
    }
    for (let a = required; a < k; a++) {
      const v = vars[a][d]
      if (Number.isNaN(v)) {
        out[a] = 0
        this.nulls[a - required] += sign
      } else out[a] = v
    }
    return true
  }

  get(a: number, b: number): number {
    return a <= b ? this.sums[this.idx(a, b)] : this.sums[this.idx(b, a)]
  }
}

/** sums += x xᵀ (upper triangle); unrolled for the sizes the model uses, the hottest loop of a build. */
function addOuter(sums: Float64Array, x: Float64Array, k: number): void {
  if (k === 2) {
    const a = x[0]
    const b = x[1]
    sums[0] += a * a
    sums[1] += a * b
    sums[2] += b * b
  } else if (k === 3) {
    const a = x[0]
    const b = x[1]
    const c = x[2]
    sums[0] += a * a
    sums[1] += a * b
    sums[2] += a * c
    sums[3] += b * b
    sums[4] += b * c
    sums[5] += c * c
  } else if (k === 4) {
    const a = x[0]
    const b = x[1]
    const c = x[2]
    const d = x[3]
    sums[0] += a * a
    sums[1] += a * b
    sums[2] += a * c
    sums[3] += a * d
    sums[4] += b * b
    sums[5] += b * c
    sums[6] += b * d
    sums[7] += c * c
    sums[8] += c * d
    sums[9] += d * d
  } else {
    let p = 0
    for (let i = 0; i < k; i++) for (let j = i; j < k; j++) sums[p++] += x[i] * x[j]
  }
}

/** Loads day d of every variable into out; false when any is null (not a contributing day). */
function load(vars: readonly Float64Array[], d: number, out: Float64Array): boolean {
  for (let a = 0; a < vars.length; a++) {
    const v = vars[a][d]
    if (Number.isNaN(v)) return false
    out[a] = v
  }
  return true
}
