import { isoFromDay } from '../../../platform/dates.ts'
import type { QualityFinding } from '../format.ts'

/** A run of at least this many identical consecutive prices is reported (stale or filled data). */
const FLAT_RUN_MIN = 5
/** One-day moves larger than this in absolute value are reported (unadjusted split, bad tick). */
const LARGE_MOVE = 0.5

/**
 * Data-quality findings for one calendar-aligned adjusted-close series. None of them stops the
 * import: they describe the data the model will see (docs/methodology.md §2 makes a gap's next return
 * null, so gaps matter to users even when they are real).
 */
export function seriesFindings(symbol: string, calendar: Int32Array, px: Float64Array): QualityFinding[] {
  return [
    ...gaps(symbol, calendar, px),
    ...flatRuns(symbol, calendar, px),
    ...largeMoves(symbol, calendar, px),
  ]
}

/** Missing prices between the first and the last price, one finding per run of missing days. */
function gaps(symbol: string, calendar: Int32Array, px: Float64Array): QualityFinding[] {
  const out: QualityFinding[] = []
  let seen = false
  let runStart = -1
  for (let t = 0; t < px.length; t++) {
    if (Number.isNaN(px[t])) {
      if (seen && runStart < 0) runStart = t
      continue
    }
    if (runStart >= 0) {
      const n = t - runStart
      out.push({
        kind: 'gap',
        symbol,
        from: isoFromDay(calendar[runStart]),
        to: isoFromDay(calendar[t - 1]),
        detail: `${n} missing price${n === 1 ? '' : 's'} between priced days`,
      })
      runStart = -1
    }
    seen = true
  }
  return out
}

/** Runs of identical consecutive prices (a missing day ends a run). */
function flatRuns(symbol: string, calendar: Int32Array, px: Float64Array): QualityFinding[] {
  const out: QualityFinding[] = []
  let start = 0
  for (let t = 1; t <= px.length; t++) {
    if (t < px.length && px[t] === px[t - 1]) continue
    const n = t - start
    if (n >= FLAT_RUN_MIN && !Number.isNaN(px[start])) {
      out.push({
        kind: 'flat_run',
        symbol,
        from: isoFromDay(calendar[start]),
        to: isoFromDay(calendar[t - 1]),
        detail: `price ${px[start]} unchanged on ${n} consecutive days`,
      })
    }
    start = t
  }
  return out
}

/** One-day returns beyond ±50 % between consecutive calendar days. */
function largeMoves(symbol: string, calendar: Int32Array, px: Float64Array): QualityFinding[] {
  const out: QualityFinding[] = []
  for (let t = 1; t < px.length; t++) {
    const r = px[t] / px[t - 1] - 1
    if (!(Math.abs(r) > LARGE_MOVE)) continue
    out.push({
      kind: 'large_move',
      symbol,
      from: isoFromDay(calendar[t - 1]),
      to: isoFromDay(calendar[t]),
      detail: `one-day move of ${(r * 100).toFixed(1)}% (${px[t - 1]} → ${px[t]})`,
    })
  }
  return out
}
