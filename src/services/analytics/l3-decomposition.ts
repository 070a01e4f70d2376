import { L3_DECOMPOSITION_FIELDS } from '../../contract/ops/analytics.ts'
import type { FlatTable } from '../../contract/table.ts'
import type { ModelStore } from '../../engine/model-store/reader.ts'
import { monthOf } from '../../platform/dates.ts'
import type { ModelEnvironment, ModelRegistry } from '../models.ts'
import { keepColumns, keepFields, parseFields } from './fields.ts'
import { dateColumn, doubleColumn, etfOf, type Num, num, seriesConfidence, textColumn } from './series.ts'
import { resolveTicker } from './tickers.ts'
import { type HistorySpan, historyWindow, spanLabel } from './window.ts'

/**
 * GET /l3-decomposition and the `l3_decomposition` block of POST /batch/analyze: the L3 hedge
 * ratios and explained-risk fractions at each month end (the last trading day of each calendar
 * month in the window; the window's last day closes the current, possibly partial, month so the
 * series always ends at the latest state), with the sector and subsector ETFs in effect that day.
 */

const DEFAULT_L3_YEARS = 5

const L3_KEYS = [
  'l3_mkt_hr',
  'l3_sec_hr',
  'l3_sub_hr',
  'l3_mkt_er',
  'l3_sec_er',
  'l3_sub_er',
  'l3_res_er',
] as const
type L3Key = (typeof L3_KEYS)[number]

export type L3Monthly = {
  dates: string[]
  sector_etf: (string | null)[]
  subsector_etf: (string | null)[]
} & Record<L3Key, Num[]>

/** Month-end days of [from, to): the last calendar day of each month, and to − 1. */
export function monthEnds(calendar: Int32Array, from: number, to: number): number[] {
  const out: number[] = []
  for (let t = from; t < to; t++) {
    const last = t === to - 1 || monthOf(calendar[t]) !== monthOf(calendar[t + 1])
    if (last) out.push(t)
  }
  return out
}

export async function l3Monthly(
  store: ModelStore,
  symbol: number,
  span: HistorySpan,
): Promise<{ series: L3Monthly; range: [string, string] | null; populated: number }> {
  const w = await historyWindow(store, symbol, span)
  const ends = monthEnds(store.calendar, w.from, w.to)
  const series: L3Monthly = {
    dates: [],
    sector_etf: [],
    subsector_etf: [],
    l3_mkt_hr: [],
    l3_sec_hr: [],
    l3_sub_hr: [],
    l3_mkt_er: [],
    l3_sec_er: [],
    l3_sub_er: [],
    l3_res_er: [],
  }
  if (ends.length === 0) return { series, range: null, populated: 0 }
  const h = await store.history(symbol, [...L3_KEYS, 'sector_etf', 'subsector_etf'], w.from, w.to)
  let populated = 0
  for (const t of ends) {
    const i = t - w.from
    series.dates.push(store.date(t))
    for (const k of L3_KEYS) series[k].push(num(h[k][i]))
    if (series.l3_res_er[series.l3_res_er.length - 1] !== null) populated++
    series.sector_etf.push(etfOf(store, h.sector_etf[i]))
    series.subsector_etf.push(etfOf(store, h.subsector_etf[i]))
  }
  const range: [string, string] = [series.dates[0] as string, series.dates[series.dates.length - 1] as string]
  return { series, range, populated }
}

function l3Table(series: L3Monthly): FlatTable {
  return {
    columns: [
      dateColumn('date', series.dates),
      ...L3_KEYS.map((k) => doubleColumn(k, series[k])),
      textColumn('sector_etf', series.sector_etf),
      textColumn('subsector_etf', series.subsector_etf),
    ],
  }
}

export async function getL3Decomposition(
  models: ModelRegistry,
  env: ModelEnvironment,
  rawTicker: string,
  span: HistorySpan = DEFAULT_L3_YEARS,
  rawFields?: string | readonly string[],
) {
  const selected = parseFields(rawFields, L3_DECOMPOSITION_FIELDS)
  const store = models.store(env)
  const r = resolveTicker(store, rawTicker)
  const { series, range, populated } = await l3Monthly(store, r.index, span)
  return {
    body: {
      ticker: r.ticker,
      symbol: r.symbol,
      periodicity: 'monthly',
      ...keepFields(series, L3_DECOMPOSITION_FIELDS, selected),
      _metadata: models.metadata(store, range ?? undefined, r),
    },
    store,
    confidence: seriesConfidence(populated, series.dates.length, range?.[1] === store.dataAsOf),
    table: () => keepColumns(l3Table(series), L3_DECOMPOSITION_FIELDS, selected),
    filename: `l3-decomposition_${r.symbol}_${spanLabel(span, DEFAULT_L3_YEARS)}`,
  }
}
