import { ESTIMATORS, type EstimatorName } from '../../../engine/model/risk-forecast/estimators.ts'
import { biasStatistic, rollingMrad } from '../../../engine/model/risk-forecast/quality.ts'
import type { DatasetOrigin } from '../../../engine/model-store/layout.ts'
import type { ModelStore } from '../../../engine/model-store/reader.ts'
import { datasetOf } from '../../models.ts'
import type { DateRecord, EvaluateOptions } from './run.ts'

/** Stress windows reported apart: the calendar years of the 2008 crisis and the 2020 crash. */
const STRESS_WINDOWS = ['2008', '2020'] as const

interface BiasFigures {
  /** Bias statistic over every date and slot. */
  bias: number
  n: number
  /** Mean |rolling 12-month bias − 1|. */
  mrad: number
  /** Bias within each stress year (null: no date in it). */
  stress: Record<(typeof STRESS_WINDOWS)[number], number | null>
  /** Rolling 12-month bias (mean across slots) at each window's last date. */
  rolling: { date: string; bias: number }[]
}

interface HedgeFigures {
  /** Books (stock-dates for single stocks) pooled. */
  n: number
  /** Σ hedged² / Σ unhedged² of the horizon return, per level. */
  l1: number
  l2: number
  l3: number
  lstar: number
}

export interface EvaluationResult {
  build: string | null
  data_as_of: string
  dataset: DatasetOrigin
  generated_at: string
  seconds: number
  options: EvaluateOptions
  dates: { count: number; first: string | null; last: string | null }
  estimators: { name: EstimatorName; description: string }[]
  /** Per estimator, per book size ('1' = single stocks). */
  bias: Record<string, Record<string, BiasFigures>>
  hedge: { single: HedgeFigures; book: HedgeFigures & { size: number } }
  /** The estimator with the smallest worst |bias − 1| across sizes plus mean MRAD. */
  recommended: EstimatorName | null
}

function biasFigures(
  store: ModelStore,
  records: DateRecord[],
  est: string,
  size: string,
  window: number,
): BiasFigures {
  const rows = records.map((r) => r.z[est]?.[size] ?? [])
  const all = rows.flat().filter((x) => !Number.isNaN(x))
  const stress = Object.fromEntries(
    STRESS_WINDOWS.map((y) => {
      const z = records
        .filter((r) => store.date(r.t).startsWith(y))
        .flatMap((r) => r.z[est]?.[size] ?? [])
        .filter((x) => !Number.isNaN(x))
      return [y, z.length >= 2 ? biasStatistic(z) : null]
    }),
  ) as BiasFigures['stress']
  const { mrad, rolling } = rollingMrad(rows, window)
  return {
    bias: biasStatistic(all),
    n: all.length,
    mrad,
    stress,
    rolling: rolling.map((p) => ({ date: store.date((records[p.end] as DateRecord).t), bias: p.bias })),
  }
}

function hedgeFigures(records: DateRecord[], kind: 'single' | 'book'): HedgeFigures {
  const s = { n: 0, unhedged: 0, l1: 0, l2: 0, l3: 0, lstar: 0 }
  for (const r of records) for (const k of Object.keys(s) as (keyof typeof s)[]) s[k] += r.hedge[kind][k]
  const ratio = (x: number) => (s.unhedged > 0 ? x / s.unhedged : Number.NaN)
  return { n: s.n, l1: ratio(s.l1), l2: ratio(s.l2), l3: ratio(s.l3), lstar: ratio(s.lstar) }
}

export function summarise(
  store: ModelStore,
  o: EvaluateOptions,
  records: DateRecord[],
  seconds: number,
): EvaluationResult {
  // 12 months of dates at their actual spacing (thinned dates are further apart than `step`).
  const span =
    records.length > 1
      ? ((records.at(-1) as DateRecord).t - (records[0] as DateRecord).t) / (records.length - 1)
      : o.step
  const window = Math.max(2, Math.round(252 / span))
  const sizes = ['1', ...o.sizes.map(String)]
  const bias: EvaluationResult['bias'] = {}
  for (const e of o.estimators)
    bias[e] = Object.fromEntries(sizes.map((s) => [s, biasFigures(store, records, e, s, window)]))
  const score = (e: string) => {
    // Sizes without figures (larger than the eligible stocks) do not count.
    const f = Object.values(bias[e] ?? {}).filter((x) => Number.isFinite(x.bias))
    const mrad = f.filter((x) => Number.isFinite(x.mrad))
    const mean = mrad.length > 0 ? mrad.reduce((a, x) => a + x.mrad, 0) / mrad.length : 0
    return f.length > 0 ? Math.max(...f.map((x) => Math.abs(x.bias - 1))) + mean : Number.NaN
  }
  const ranked = o.estimators.filter((e) => Number.isFinite(score(e))).sort((a, b) => score(a) - score(b))
  const first = records[0]
  const last = records[records.length - 1]
  return {
    build: store.buildId,
    data_as_of: store.dataAsOf,
    dataset: datasetOf(store),
    generated_at: new Date().toISOString(),
    seconds,
    options: o,
    dates: {
      count: records.length,
      first: first ? store.date(first.t) : null,
      last: last ? store.date(last.t) : null,
    },
    estimators: o.estimators.map((e) => ({ name: e, description: ESTIMATORS[e].description })),
    bias,
    hedge: {
      single: hedgeFigures(records, 'single'),
      book: { ...hedgeFigures(records, 'book'), size: o.sizes[Math.floor(o.sizes.length / 2)] ?? 0 },
    },
    recommended: ranked[0] ?? null,
  }
}
