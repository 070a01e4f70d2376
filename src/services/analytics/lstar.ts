import { LSTAR_FIELDS } from '../../contract/ops/analytics.ts'
import type { FlatTable } from '../../contract/table.ts'
import { lstarLevel } from '../../engine/model/levels.ts'
import type { ModelStore } from '../../engine/model-store/reader.ts'
import type { ModelEnvironment, ModelRegistry } from '../models.ts'
import { keepColumns, keepFields, parseFields } from './fields.ts'
import {
  dateColumn,
  doubleColumn,
  type LevelName,
  levelName,
  type Num,
  num,
  seriesConfidence,
  textColumn,
} from './series.ts'
import { type ResolvedTicker, resolveTicker } from './tickers.ts'
import { type HistorySpan, historyWindow, spanLabel } from './window.ts'

/** GET /lstar and the per-ticker series of POST /batch/lstar (docs/methodology.md §9). */

const DEFAULT_THRESHOLD = 0.01

const FIELDS = [
  'l1_mkt_hr',
  'l2_mkt_hr',
  'l2_sec_hr',
  'l3_mkt_hr',
  'l3_sec_hr',
  'l3_sub_hr',
  'l1_res_er',
  'l2_res_er',
  'l3_res_er',
  'l2_sec_er',
  'l3_sub_er',
  'l1_rr',
  'l2_rr',
  'l3_rr',
] as const

export interface LstarSeries {
  dates: string[]
  lstar: LevelName[]
  market_hr: Num[]
  sector_hr: Num[]
  subsector_hr: Num[]
  total_er: Num[]
  residual_return: Num[]
  l2_sector_er: Num[]
  l3_subsector_er: Num[]
}

const LSTAR_SERIES_KEYS = [
  'market_hr',
  'sector_hr',
  'subsector_hr',
  'total_er',
  'residual_return',
  'l2_sector_er',
  'l3_subsector_er',
] as const

/**
 * One symbol's Lstar series over a `years` window. The level of day t is the §7 rule on that
 * day's state (l2_sec_er, l3_sub_er) with `theta`; the HRs and total ER are those of that level
 * on day t. `residual_return` on day t is the residual at the level chosen at t−1 — the hedge held
 * during day t, exactly as `lstar_rr` is defined — so at θ = 0.01 it equals the stored lstar_rr.
 */
export async function lstarSeries(
  store: ModelStore,
  symbol: number,
  span: HistorySpan,
  theta: number,
): Promise<{ series: LstarSeries; range: [string, string] | null; populated: number }> {
  const w = await historyWindow(store, symbol, span)
  const n = w.to - w.from
  const s: LstarSeries = {
    dates: [],
    lstar: [],
    market_hr: [],
    sector_hr: [],
    subsector_hr: [],
    total_er: [],
    residual_return: [],
    l2_sector_er: [],
    l3_subsector_er: [],
  }
  if (n === 0) return { series: s, range: null, populated: 0 }
  // One day before the window: the first day's residual is dispatched by the previous state.
  const base = Math.max(0, w.from - 1)
  const h = await store.history(symbol, FIELDS, base, w.to)
  const at = (f: (typeof FIELDS)[number], t: number) => num(h[f][t - base])
  const level = (t: number) =>
    t < 0 ? Number.NaN : lstarLevel(h.l2_sec_er[t - base], h.l3_sub_er[t - base], theta)
  let populated = 0
  for (let t = w.from; t < w.to; t++) {
    const k = level(t)
    const prev = level(t - 1)
    s.dates.push(store.date(t))
    s.lstar.push(levelName(k))
    if (k >= 1) populated++
    s.market_hr.push(
      k === 1 ? at('l1_mkt_hr', t) : k === 2 ? at('l2_mkt_hr', t) : k === 3 ? at('l3_mkt_hr', t) : null,
    )
    s.sector_hr.push(k === 2 ? at('l2_sec_hr', t) : k === 3 ? at('l3_sec_hr', t) : null)
    s.subsector_hr.push(k === 3 ? at('l3_sub_hr', t) : null)
    const res =
      k === 1 ? at('l1_res_er', t) : k === 2 ? at('l2_res_er', t) : k === 3 ? at('l3_res_er', t) : null
    s.total_er.push(res === null ? null : 1 - res)
    s.residual_return.push(
      prev === 1 ? at('l1_rr', t) : prev === 2 ? at('l2_rr', t) : prev === 3 ? at('l3_rr', t) : null,
    )
    s.l2_sector_er.push(at('l2_sec_er', t))
    s.l3_subsector_er.push(at('l3_sub_er', t))
  }
  return { series: s, range: w.range, populated }
}

/** The long table of one or more tickers' series (GET /lstar and POST /batch/lstar share it). */
export function lstarTable(rows: { ticker: string; series: LstarSeries }[]): FlatTable {
  const tickers: string[] = []
  const dates: string[] = []
  const levels: LevelName[] = []
  const cols: Record<(typeof LSTAR_SERIES_KEYS)[number], Num[]> = {
    market_hr: [],
    sector_hr: [],
    subsector_hr: [],
    total_er: [],
    residual_return: [],
    l2_sector_er: [],
    l3_subsector_er: [],
  }
  for (const { ticker, series } of rows) {
    for (let i = 0; i < series.dates.length; i++) tickers.push(ticker)
    dates.push(...series.dates)
    levels.push(...series.lstar)
    for (const k of LSTAR_SERIES_KEYS) cols[k].push(...series[k])
  }
  return {
    columns: [
      textColumn('ticker', tickers),
      dateColumn('date', dates),
      textColumn('lstar', levels),
      ...LSTAR_SERIES_KEYS.map((k) => doubleColumn(k, cols[k])),
    ],
  }
}

/** GET /lstar: the body without `_agent`, and its tabular form. */
export async function getLstar(
  models: ModelRegistry,
  env: ModelEnvironment,
  rawTicker: string,
  span: HistorySpan = 1,
  theta = DEFAULT_THRESHOLD,
  rawFields?: string | readonly string[],
) {
  const selected = parseFields(rawFields, LSTAR_FIELDS)
  const store = models.store(env)
  const r: ResolvedTicker = resolveTicker(store, rawTicker)
  const { series, range, populated } = await lstarSeries(store, r.index, span, theta)
  const body = {
    ticker: r.ticker,
    symbol: r.symbol,
    threshold_used: theta,
    ...keepFields(series, LSTAR_FIELDS, selected),
    _metadata: models.metadata(store, range ?? undefined, r),
  }
  return {
    body,
    store,
    confidence: seriesConfidence(populated, series.dates.length, range?.[1] === store.dataAsOf),
    table: () => keepColumns(lstarTable([{ ticker: r.ticker, series }]), LSTAR_FIELDS, selected),
    filename: `lstar_${r.symbol}_${spanLabel(span)}`,
  }
}
