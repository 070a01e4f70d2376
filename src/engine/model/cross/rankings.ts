/**
 * Daily cross-sectional rankings (docs/methodology.md §12): every metric × window, over three cohorts.
 *
 * - Universe cohort: active default-universe members at t with a non-NaN value. Sector and
 *   subsector cohorts: the universe cohort members that share the stock's sector ETF (resp. the
 *   subsector ETF in effect, i.e. the sector ETF on fallback days) that day; a stock without one
 *   (-1) is in no such cohort.
 * - Higher value ranks first; ties by symbol index, which is the symbol-key order because the
 *   caller passes symbols sorted by key. A cohort ranking is the universe order restricted to the
 *   cohort, so the three rankings always agree with one another.
 * - Ordinals and cohort sizes are Int16 (0 = not in the cohort); a cohort over 32767 members is
 *   a RangeError rather than a silent wrap (the default universe has 3000).
 */
import {
  metricValues,
  RANKING_METRICS,
  RANKING_WINDOWS,
  type RankingInput,
  type RankingMetric,
  type RankingWindow,
  rankingMetricValue,
} from './ranking-values.ts'
import { denseGroups, groupOrdinals, MAX_COHORT, type OrderScratch, orderBy, orderScratch } from './sort.ts'

export const COHORTS = ['universe', 'sector', 'subsector'] as const
export type Cohort = (typeof COHORTS)[number]

export interface RankDay {
  metric: RankingMetric
  window: RankingWindow
  /** Per symbol: the ranked value, NaN when not ranked (not active or no value). */
  values: Float64Array
  /** Per symbol: 1 = best, 0 = not in the cohort. */
  ordinal: Record<Cohort, Int16Array>
  /** Per symbol: the size of its cohort, 0 when not in it. */
  cohortSize: Record<Cohort, Int16Array>
}

/**
 * `100 × (1 - (ordinal - 1) / size)`: 100 for the best; NaN when not ranked (ordinal 0). Evaluated
 * as 100 × (size - ordinal + 1) / size — the same number, but one rounding instead of three, so
 * ordinal 10 of 10 gives exactly 10.
 */
export function rankPercentile(ordinal: number, size: number): number {
  return ordinal >= 1 && size >= 1 ? (100 * (size - ordinal + 1)) / size : Number.NaN
}

/** `ceil(10 × ordinal / size)`: 1 holds the best; 0 when not ranked (ordinal 0). */
export function rankDecile(ordinal: number, size: number): number {
  return ordinal >= 1 && size >= 1 ? Math.ceil((10 * ordinal) / size) : 0
}

/** Per-symbol column of a per-symbol series at day t. */
function column(series: Int16Array[], t: number): Int16Array {
  const out = new Int16Array(series.length)
  for (let i = 0; i < series.length; i++) out[i] = series[i][t]
  return out
}

interface DayContext {
  active: Uint8Array
  sector: Int16Array
  subsector: Int16Array
  nSector: number
  nSubsector: number
  members: Int32Array
  scratch: OrderScratch
}

function dayContext(x: RankingInput, t: number): DayContext {
  const n = x.returns.length
  const active = new Uint8Array(n)
  for (let i = 0; i < n; i++) active[i] = x.active(i, t) ? 1 : 0
  const sector = denseGroups(column(x.sectorEtf, t))
  const subsector = denseGroups(column(x.subsectorEtf, t))
  return {
    active,
    sector: sector.ids,
    subsector: subsector.ids,
    nSector: sector.n,
    nSubsector: subsector.n,
    members: new Int32Array(n),
    scratch: orderScratch(n),
  }
}

/** Ranks `values` (NaN = not ranked) into the three cohorts. */
function rankValues(
  metric: RankingMetric,
  window: RankingWindow,
  values: Float64Array,
  ctx: DayContext,
): RankDay {
  const nSym = values.length
  const members = ctx.members
  let n = 0
  for (let i = 0; i < nSym; i++) if (!Number.isNaN(values[i])) members[n++] = i
  if (n > MAX_COHORT) throw new RangeError(`ranking cohort of ${n} exceeds ${MAX_COHORT}`)
  const order = orderBy(values, members, n, true, ctx.scratch)
  // One allocation for the six per-symbol columns (hundreds of RankDays per build).
  const cols = new Int16Array(6 * nSym)
  const col = (k: number) => cols.subarray(k * nSym, (k + 1) * nSym)
  const ordinal = { universe: col(0), sector: col(1), subsector: col(2) }
  const cohortSize = { universe: col(3), sector: col(4), subsector: col(5) }
  for (let r = 0; r < n; r++) {
    ordinal.universe[order[r]] = r + 1
    cohortSize.universe[order[r]] = n
  }
  groupOrdinals(order, ctx.sector, ctx.nSector, ordinal.sector, cohortSize.sector)
  groupOrdinals(order, ctx.subsector, ctx.nSubsector, ordinal.subsector, cohortSize.subsector)
  return { metric, window, values, ordinal, cohortSize }
}

/**
 * One metric × window ranking at day t. Each value takes the same window pass as all 28 do, so
 * for more than one ranking of a day use `rankAllMetrics` (or `rankAllMetricsDays`).
 */
export function rankDay(x: RankingInput, t: number, metric: RankingMetric, window: RankingWindow): RankDay {
  const ctx = dayContext(x, t)
  const values = new Float64Array(ctx.active.length).fill(Number.NaN)
  for (let i = 0; i < values.length; i++) {
    if (ctx.active[i]) values[i] = rankingMetricValue(x, metric, window, i, t)
  }
  return rankValues(metric, window, values, ctx)
}

/**
 * All 28 metric × window rankings at day t, metric-major in RANKING_METRICS × RANKING_WINDOWS
 * order. mkt_cap is ranked once and its result copied to the four windows.
 */
export function rankAllMetrics(x: RankingInput, t: number): RankDay[] {
  return rankChunk(x, [t], false)[0]
}

/**
 * `rankAllMetrics` for many days, yielded in the order given. Days are computed `chunk` at a time
 * stock by stock, so each stock's series are read from memory once per chunk rather than once
 * per day (month-end days 21 apart share most of their 252-day windows); memory stays bounded
 * by the chunk. Pass days ascending (or at least clustered) to get that sharing. Results are
 * identical to `rankAllMetrics` day by day, whatever the order or chunking.
 */
export function* rankAllMetricsDays(
  x: RankingInput,
  days: ArrayLike<number>,
  chunk = 12,
): Generator<{ t: number; rankings: RankDay[] }> {
  for (let k = 0; k < days.length; k += chunk) {
    const ts = Array.from({ length: Math.min(chunk, days.length - k) }, (_, j) => days[k + j])
    const ranked = rankChunk(x, ts, true)
    for (let j = 0; j < ts.length; j++) yield { t: ts[j], rankings: ranked[j] }
  }
}

function rankChunk(x: RankingInput, ts: number[], blocked: boolean): RankDay[][] {
  const ctxs = ts.map((t) => dayContext(x, t))
  const values = metricValues(x, ts, (j, i) => ctxs[j].active[i] === 1, blocked)
  return ts.map((_, j) => {
    const out: RankDay[] = []
    RANKING_METRICS.forEach((metric, m) => {
      if (metric === 'mkt_cap') {
        const day = rankValues(metric, RANKING_WINDOWS[0], values[j][0], ctxs[j])
        RANKING_WINDOWS.forEach((window, w) => {
          out.push(w === 0 ? day : copyDay(day, window))
        })
      } else {
        RANKING_WINDOWS.forEach((window, w) => {
          out.push(rankValues(metric, window, values[j][m * RANKING_WINDOWS.length + w], ctxs[j]))
        })
      }
    })
    return out
  })
}

function copyDay(d: RankDay, window: RankingWindow): RankDay {
  const copy = (r: Record<Cohort, Int16Array>) => ({
    universe: r.universe.slice(),
    sector: r.sector.slice(),
    subsector: r.subsector.slice(),
  })
  return {
    metric: d.metric,
    window,
    values: d.values.slice(),
    ordinal: copy(d.ordinal),
    cohortSize: copy(d.cohortSize),
  }
}
