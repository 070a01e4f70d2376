import { FULL_METRICS_ALIASES } from '../../contract/ops/batch-full-metrics.ts'
import type { FlatTable } from '../../contract/table.ts'
import type { ModelStore } from '../../engine/model-store/reader.ts'
import { AppError } from '../../platform/errors.ts'
import type { ModelEnvironment, ModelRegistry } from '../models.ts'
import { type BatchPage, pageFields, perTicker, unionRange } from './batch.ts'
import { type L3Monthly, l3Monthly } from './l3-decomposition.ts'
import { metricsSnapshot, stateDay, stateOn } from './metrics.ts'
import { dateColumn, doubleColumn, type Num, nullable, num, seriesConfidence, textColumn } from './series.ts'
import type { ResolvedTicker } from './tickers.ts'
import { type HistorySpan, historyWindow, spanLabel } from './window.ts'

/** POST /batch/analyze: per-ticker returns, hedge ratios, metrics and L3 series. */

const BATCH_METRICS = ['returns', 'hedge_ratios', 'full_metrics', 'l3_decomposition'] as const
export type BatchMetric = (typeof BATCH_METRICS)[number]
const DEFAULT_BATCH_METRICS: readonly BatchMetric[] = ['returns', 'hedge_ratios']

/** `returns`: gross returns and the rolling L3 market/sector/subsector HR histories. */
interface BatchReturns {
  dates: string[]
  values: Num[]
  l1: Num[]
  l2: Num[]
  l3: Num[]
}

const HEDGE_FIELDS = ['l1_mkt_hr', 'l2_mkt_hr', 'l2_sec_hr', 'l3_mkt_hr', 'l3_sec_hr', 'l3_sub_hr'] as const

interface Analyzed {
  ticker: string
  symbol: string
  asset_type: 'stock' | 'etf' | null
  teo: string | null
  returns?: BatchReturns
  hedge_ratios?: Record<string, Num>
  full_metrics?: Record<string, Num>
  l3_decomposition?: L3Monthly
}

export async function batchAnalyze(
  models: ModelRegistry,
  env: ModelEnvironment,
  tickers: readonly string[],
  opts: {
    years?: number | undefined
    start?: string | undefined
    end?: string | undefined
    metrics?: readonly BatchMetric[] | undefined
    page?: BatchPage | undefined
    /** The day of the state (point in time); undefined = the latest. */
    asOf?: string | undefined
  },
) {
  const years = opts.years ?? 1
  const store = models.store(env)
  const { day, note } = stateDay(store, opts.asOf)
  const span = { years, start: opts.start, end: opts.end ?? (day === null ? undefined : store.date(day)) }
  if (day !== null && opts.end !== undefined && opts.end > store.date(day))
    throw new AppError('INVALID_REQUEST', `end ${opts.end} is after as_of ${store.date(day)}`, {
      fields: [{ field: 'body.end', message: 'after as_of' }],
    })
  const wanted = new Set(opts.metrics ?? DEFAULT_BATCH_METRICS)
  const job: BatchJob = {
    models,
    env,
    store,
    span,
    wanted,
    ranges: [],
    populated: 0,
    counted: 0,
    day,
    asOf: opts.asOf,
  }
  const { results, ok } = await perTicker(store, tickers, (r) => analyzeOne(job, r), opts.page)
  const { populated, counted } = job
  const range = unionRange(job.ranges)
  const table = () => returnsTable(wanted, ok)
  return {
    body: {
      years,
      metrics: BATCH_METRICS.filter((m) => wanted.has(m)),
      succeeded: ok.length,
      failed: tickers.length - ok.length,
      ...pageFields(tickers, opts.page),
      results,
      _metadata: { ...models.metadata(store, range), ...note },
    },
    store,
    confidence: seriesConfidence(populated, counted, range?.[1] === store.dataAsOf),
    positions: ok.length,
    table,
    filename: `batch-analyze_${ok.length}-tickers_${spanLabel(span)}`,
  }
}

/** The request, and what the tickers' answers add up to: the dates they span and how many had a model. */
interface BatchJob {
  models: ModelRegistry
  env: ModelEnvironment
  store: ModelStore
  span: HistorySpan
  wanted: Set<BatchMetric>
  ranges: ([string, string] | null)[]
  /** Tickers with an L1 hedge ratio on the day served, of those counted. */
  populated: number
  counted: number
  /** as_of as a calendar index (null: the latest state), and as asked. */
  day: number | null
  asOf: string | undefined
}

/** The hedge fields on the day served; a ticker not yet listed that day has none (t = −1). */
async function hedgeState(store: ModelStore, index: number, day: number | null) {
  if (day !== null && day < (await store.listedLife(index)).first)
    return { t: -1, values: {} as Record<(typeof HEDGE_FIELDS)[number], number | undefined> }
  return stateOn(store, index, day, HEDGE_FIELDS)
}

/** One ticker's answer: the parts asked for, each from the same store. */
async function analyzeOne(job: BatchJob, r: ResolvedTicker): Promise<Analyzed> {
  const { models, env, store, span, wanted, ranges } = job
  const latest = await hedgeState(store, r.index, job.day)
  const out: Analyzed = {
    ticker: r.ticker,
    symbol: r.symbol,
    asset_type: store.symbols[r.index]?.asset_type ?? null,
    teo: latest.t >= 0 ? store.date(latest.t) : null,
  }
  job.counted++
  if (num(latest.values.l1_mkt_hr) !== null) job.populated++
  if (wanted.has('returns')) {
    const w = await historyWindow(store, r.index, span)
    const h = await store.history(r.index, ['l3_mkt_hr', 'l3_sec_hr', 'l3_sub_hr'], w.from, w.to)
    out.returns = {
      dates: Array.from({ length: w.to - w.from }, (_, i) => store.date(w.from + i)),
      values: nullable(w.returns, w.from, w.to),
      l1: nullable(h.l3_mkt_hr, w.from, w.to, w.from),
      l2: nullable(h.l3_sec_hr, w.from, w.to, w.from),
      l3: nullable(h.l3_sub_hr, w.from, w.to, w.from),
    }
    ranges.push(w.range)
  }
  if (wanted.has('hedge_ratios')) {
    const v = latest.values
    out.hedge_ratios = {
      l1_market: num(v.l1_mkt_hr),
      l2_market: num(v.l2_mkt_hr),
      l2_sector: num(v.l2_sec_hr),
      l3_market: num(v.l3_mkt_hr),
      l3_sector: num(v.l3_sec_hr),
      l3_subsector: num(v.l3_sub_hr),
    }
  }
  if (wanted.has('full_metrics') && (job.day === null || latest.t >= 0)) {
    // The same snapshot GET /metrics/{ticker} serves (on as_of too), not a copy of its logic.
    const m = (await metricsSnapshot(models, env, r.ticker, job.asOf)).body.metrics
    out.full_metrics = {
      ...m,
      ...Object.fromEntries(FULL_METRICS_ALIASES.map(([short, long]) => [long, m[short]])),
    }
  }
  if (wanted.has('l3_decomposition')) {
    const m = await l3Monthly(store, r.index, span)
    out.l3_decomposition = m.series
    ranges.push(m.range)
  }
  if (out.teo) ranges.push([out.teo, out.teo])
  return out
}

/** The Parquet/CSV form: the returns part, one row per ticker and day. */
function returnsTable(wanted: Set<BatchMetric>, ok: readonly Analyzed[]): FlatTable {
  if (!wanted.has('returns')) {
    throw new AppError(
      'INVALID_REQUEST',
      "The Parquet/CSV form of /batch/analyze is the returns table: include 'returns' in metrics",
      { fields: [{ field: 'metrics', message: "must include 'returns' for format parquet or csv" }] },
    )
  }
  const rows = ok.filter((x) => x.returns !== undefined)
  const col = (pick: (x: BatchReturns) => Num[]) => rows.flatMap((x) => pick(x.returns as BatchReturns))
  return {
    columns: [
      textColumn(
        'ticker',
        rows.flatMap((x) => (x.returns as BatchReturns).dates.map(() => x.ticker)),
      ),
      dateColumn(
        'date',
        rows.flatMap((x) => (x.returns as BatchReturns).dates),
      ),
      doubleColumn(
        'gross_return',
        col((x) => x.values),
      ),
      doubleColumn(
        'l1',
        col((x) => x.l1),
      ),
      doubleColumn(
        'l2',
        col((x) => x.l2),
      ),
      doubleColumn(
        'l3',
        col((x) => x.l3),
      ),
    ],
  }
}
