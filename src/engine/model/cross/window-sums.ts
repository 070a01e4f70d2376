/**
 * Trailing-window aggregates for the ranking metrics: three compounded series (returns, l2_rr,
 * l3_rr) and three summed ones (l1_mkt_er, l2_mkt_er + l2_sec_er, l3_res_er), over the nested
 * windows of 1, 21, 63 and 252 days ending at t. The six are "lanes" processed together: one loop
 * over several series keeps several cache misses in flight and the dependent multiply-add chains
 * of the different lanes overlap.
 *
 * A window is split on fixed 16-day blocks of the calendar index (block b = days 16b..16b+15):
 * the part of t's own block up to t, the whole blocks in between, and the part of the window's
 * first block. Block totals depend only on the data, so a batch of days computes each block once
 * per stock and reuses it (month-ends 21 days apart share most of their 252-day windows), and
 * a single day gets bit-identical numbers from one backward sweep (`sweepWindows`) that adds the
 * same days in the same order. Nulls need no test: NaN propagates through every sum and product, so any window
 * with a null day ends NaN, as docs/methodology.md §12 requires.
 *
 * Compounding uses R ← R·(1 + x) + x (= (1 + R)(1 + x) - 1) from the newest day back: a one-day
 * window yields x itself, where (1 + x) - 1 would round, and small returns keep their low bits.
 * A later span R and an earlier span E combine as R·(1 + E) + E.
 */

export const BLOCK_SHIFT = 4
const BLOCK = 1 << BLOCK_SHIFT
/** Lanes per stock: 0..2 compounded, 3..5 summed. */
export const LANES = 6
/** Window lengths in days, ascending (RANKING_WINDOWS order). */
export const WINDOW_LENGTHS = Int32Array.of(1, 21, 63, 252)
const NW = WINDOW_LENGTHS.length

/** One stock's input series in lane order (the sum lane 4 adds two series). */
export interface StockSeries {
  r: Float64Array
  q2: Float64Array
  q3: Float64Array
  e1: Float64Array
  e2a: Float64Array
  e2b: Float64Array
  e3: Float64Array
}

/** Aggregates of days hi down to lo (inclusive) into out[at .. at + 6). */
function rangeInto(s: StockSeries, lo: number, hi: number, out: Float64Array, at: number): void {
  const { r, q2, q3, e1, e2a, e2b, e3 } = s
  let g = 0
  let x2 = 0
  let x3 = 0
  let m1 = 0
  let m2 = 0
  let m3 = 0
  for (let k = hi; k >= lo; k--) {
    let v = r[k]
    g = g * (1 + v) + v
    v = q2[k]
    x2 = x2 * (1 + v) + v
    v = q3[k]
    x3 = x3 * (1 + v) + v
    m1 += e1[k]
    m2 += e2a[k] + e2b[k]
    m3 += e3[k]
  }
  out[at] = g
  out[at + 1] = x2
  out[at + 2] = x3
  out[at + 3] = m1
  out[at + 4] = m2
  out[at + 5] = m3
}

/** Appends the earlier span `src[sa ..]` to the later span `acc[aa ..]`, in place. */
function extend(acc: Float64Array, aa: number, src: Float64Array, sa: number): void {
  for (let l = 0; l < 3; l++) acc[aa + l] = acc[aa + l] * (1 + src[sa + l]) + src[sa + l]
  for (let l = 3; l < LANES; l++) acc[aa + l] += src[sa + l]
}

/** Lowest block a window ending at t reads whole (the blocks strictly inside its longest window). */
export function firstWholeBlock(t: number): number {
  let lo = t
  for (let w = NW - 1; w >= 0; w--) {
    if (t - WINDOW_LENGTHS[w] + 1 >= 0) {
      lo = t - WINDOW_LENGTHS[w] + 1
      break
    }
  }
  return (lo >> BLOCK_SHIFT) + 1
}

/** Block totals of blocks [from, to] into blocks[b · 6 ..] (the caller sizes `blocks`). */
export function blockTotals(s: StockSeries, from: number, to: number, blocks: Float64Array): void {
  for (let b = from; b <= to; b++)
    rangeInto(s, b << BLOCK_SHIFT, (b << BLOCK_SHIFT) + BLOCK - 1, blocks, b * LANES)
}

/**
 * Window aggregates of one stock at day t, from block totals that cover the blocks strictly
 * between each window's first block and t's block. Writes, per lane and window, out[at + l · 4 + w]:
 * the compounded return, or the window mean for the summed lanes; NaN for a window reaching
 * before day 0. `scratch` holds 3 × 6 values.
 */
export function windowAggregates(
  s: StockSeries,
  blocks: Float64Array,
  t: number,
  out: Float64Array,
  at: number,
  scratch: Float64Array,
): void {
  const tailLo = (t >> BLOCK_SHIFT) << BLOCK_SHIFT
  const ACC = 0
  const PART = LANES
  let covered = -1 // acc holds [covered, t]; -1 = not started
  for (let w = 0; w < NW; w++) {
    const len = WINDOW_LENGTHS[w]
    const lo = t - len + 1
    if (lo < 0) {
      for (let l = 0; l < LANES; l++) for (let k = w; k < NW; k++) out[at + l * NW + k] = Number.NaN
      return
    }
    if (lo >= tailLo) {
      rangeInto(s, lo, t, scratch, PART)
    } else {
      if (covered < 0) {
        rangeInto(s, tailLo, t, scratch, ACC)
        covered = tailLo
      }
      const headBlock = lo >> BLOCK_SHIFT
      while (covered > (headBlock + 1) << BLOCK_SHIFT) {
        covered -= BLOCK
        extend(scratch, ACC, blocks, (covered >> BLOCK_SHIFT) * LANES)
      }
      rangeInto(s, lo, (headBlock << BLOCK_SHIFT) + BLOCK - 1, scratch, PART)
      for (let l = 0; l < LANES; l++) scratch[2 * LANES + l] = scratch[ACC + l]
      extend(scratch, 2 * LANES, scratch, PART)
      for (let l = 0; l < LANES; l++) scratch[PART + l] = scratch[2 * LANES + l]
    }
    for (let l = 0; l < 3; l++) out[at + l * NW + w] = scratch[PART + l]
    for (let l = 3; l < LANES; l++) out[at + l * NW + w] = scratch[PART + l] / len
  }
}

/**
 * `windowAggregates` for a single day without precomputed blocks: one backward sweep from t with
 * a fresh accumulator per block. When the sweep reaches a window's first day, the block
 * accumulator holds exactly that window's head part (same days, same order as `rangeInto`), and
 * the running total holds the tail and whole blocks folded in the same order — so the result is
 * bit-identical to `windowAggregates`, at the cost of one pass over the 252 days.
 */
// One long kernel on purpose: twelve accumulators stay in registers only inside one loop.
export function sweepWindows(s: StockSeries, t: number, out: Float64Array, at: number): void {
  const { r, q2, q3, e1, e2a, e2b, e3 } = s
  const tailLo = (t >> BLOCK_SHIFT) << BLOCK_SHIFT
  // Block accumulators (a*) and the running total of completed blocks (p*), per lane.
  let a0 = 0
  let a1 = 0
  let a2 = 0
  let a3 = 0
  let a4 = 0
  let a5 = 0
  let p0 = 0
  let p1 = 0
  let p2 = 0
  let p3 = 0
  let p4 = 0
  let p5 = 0
  let w = 0
  let nextLo = t - WINDOW_LENGTHS[0] + 1
  for (let k = t; k >= 0; k--) {
    let v = r[k]
    a0 = a0 * (1 + v) + v
    v = q2[k]
    a1 = a1 * (1 + v) + v
    v = q3[k]
    a2 = a2 * (1 + v) + v
    a3 += e1[k]
    a4 += e2a[k] + e2b[k]
    a5 += e3[k]
    if (k === nextLo) {
      const len = WINDOW_LENGTHS[w]
      if (k >= tailLo) {
        out[at + w] = a0
        out[at + NW + w] = a1
        out[at + 2 * NW + w] = a2
        out[at + 3 * NW + w] = a3 / len
        out[at + 4 * NW + w] = a4 / len
        out[at + 5 * NW + w] = a5 / len
      } else {
        out[at + w] = p0 * (1 + a0) + a0
        out[at + NW + w] = p1 * (1 + a1) + a1
        out[at + 2 * NW + w] = p2 * (1 + a2) + a2
        out[at + 3 * NW + w] = (p3 + a3) / len
        out[at + 4 * NW + w] = (p4 + a4) / len
        out[at + 5 * NW + w] = (p5 + a5) / len
      }
      if (++w === NW) return
      nextLo = t - WINDOW_LENGTHS[w] + 1
    }
    if ((k & (BLOCK - 1)) === 0) {
      if (k === tailLo) {
        p0 = a0
        p1 = a1
        p2 = a2
        p3 = a3
        p4 = a4
        p5 = a5
      } else {
        p0 = p0 * (1 + a0) + a0
        p1 = p1 * (1 + a1) + a1
        p2 = p2 * (1 + a2) + a2
        p3 += a3
        p4 += a4
        p5 += a5
      }
      a0 = 0
      a1 = 0
      a2 = 0
      a3 = 0
      a4 = 0
      a5 = 0
    }
  }
  for (let l = 0; l < LANES; l++) for (let k = w; k < NW; k++) out[at + l * NW + k] = Number.NaN
}
