import { TICKER_RETURNS_FIELDS } from '../../contract/ops/history.ts'
import { dateMillis, type FlatTable, type TableColumn } from '../../contract/table.ts'
import { MARKET_ETF } from '../../engine/data/etf-registry.ts'
import type { ModelStore } from '../../engine/model-store/reader.ts'
import { AppError } from '../../platform/errors.ts'
import type { ModelEnvironment, ModelRegistry } from '../models.ts'
import { keepColumns, keepFields, parseFields } from './fields.ts'
import { etfOf } from './hedge-levels.ts'
import { type ResolvedTicker, resolveTicker } from './tickers.ts'
import { type HistorySpan, historyWindow, spanLabel } from './window.ts'

/** The L3 fields of a stock row of TickerReturnsDailyRow, in wire order. */
export const TICKER_RETURNS_L3_FIELDS = [
  'l3_mkt_hr',
  'l3_sec_hr',
  'l3_sub_hr',
  'l3_mkt_er',
  'l3_sec_er',
  'l3_sub_er',
  'l3_res_er',
] as const

const nul = (x: number): number | null => (Number.isNaN(x) ? null : x)

function confidence(rows: number, populated: number) {
  // Coverage: the share of returned days whose L3 state exists (1 for an ETF's plain series).
  const coverage = rows === 0 ? 0 : populated / rows
  return { overall: coverage, factors: { model_coverage: coverage } }
}

function dates(store: ModelStore, from: number, to: number): string[] {
  const out = new Array<string>(to - from)
  for (let t = from; t < to; t++) out[t - from] = store.date(t)
  return out
}

function dateColumn(ds: string[]): TableColumn {
  return { name: 'date', type: 'TIMESTAMP_MILLIS', values: ds.map(dateMillis) }
}

/** TickerReturnsResponseV3 without `_agent`, and its flat table. */
export async function tickerReturns(
  models: ModelRegistry,
  env: ModelEnvironment,
  rawTicker: string,
  span: HistorySpan,
  rawFields?: string | readonly string[],
) {
  const selected = parseFields(rawFields, TICKER_RETURNS_FIELDS)
  const store = models.store(env)
  const r = resolveTicker(store, rawTicker)
  const isEtf = store.symbols[r.index]?.asset_type === 'etf'
  const w = await historyWindow(store, r.index, span)
  const ds = dates(store, w.from, w.to)
  const ret = w.returns.subarray(w.from, w.to)
  const px = w.price.subarray(w.from, w.to)
  const l3 = isEtf ? {} : await store.history(r.index, TICKER_RETURNS_L3_FIELDS, w.from, w.to)
  const cols = TICKER_RETURNS_L3_FIELDS.map((f) => l3[f] as Float64Array)
  const n = ds.length
  // Rows straight from the typed arrays: one object literal per day keeps the JSON fast.
  const data = new Array<Record<string, string | number | null>>(n)
  let populated = 0
  for (let k = 0; k < n; k++) {
    if (isEtf) {
      data[k] = {
        date: ds[k] as string,
        returns_gross: nul(ret[k]),
        price_close: nul(px[k]),
      }
      continue
    }
    const [mh, sh, uh, me, se, ue, re] = cols as [
      Float64Array,
      Float64Array,
      Float64Array,
      Float64Array,
      Float64Array,
      Float64Array,
      Float64Array,
    ]
    if (!Number.isNaN(re[k])) populated++
    data[k] = {
      date: ds[k] as string,
      returns_gross: nul(ret[k]),
      price_close: nul(px[k]),
      l3_mkt_hr: nul(mh[k]),
      l3_sec_hr: nul(sh[k]),
      l3_sub_hr: nul(uh[k]),
      l3_mkt_er: nul(me[k]),
      l3_sec_er: nul(se[k]),
      l3_sub_er: nul(ue[k]),
      l3_res_er: nul(re[k]),
    }
  }
  let sectorEtf: string | null = null
  let subsectorEtf: string | null = null
  if (!isEtf && w.to > w.from) {
    const codes = await store.history(r.index, ['sector_etf', 'subsector_etf'], w.to - 1, w.to)
    sectorEtf = etfOf(store, codes.sector_etf?.[0])
    subsectorEtf = etfOf(store, codes.subsector_etf?.[0])
  }
  const body = {
    symbol: r.symbol,
    ticker: r.ticker,
    asset_type: isEtf ? ('etf' as const) : ('stock' as const),
    periodicity: 'daily',
    data: selected ? data.map((row) => keepFields(row, TICKER_RETURNS_FIELDS, selected)) : data,
    meta: {
      market_etf: MARKET_ETF,
      sector_etf: sectorEtf,
      subsector_etf: subsectorEtf,
      universe: isEtf ? 'US_ETF' : 'US_EQUITY',
    },
    _metadata: models.metadata(store, w.range ?? undefined, r),
  }
  const table = (): FlatTable => {
    const columns: TableColumn[] = [
      dateColumn(ds),
      { name: 'returns_gross', type: 'DOUBLE', values: ret },
      { name: 'price_close', type: 'DOUBLE', values: px },
    ]
    if (!isEtf)
      TICKER_RETURNS_L3_FIELDS.forEach((name, i) => {
        columns.push({ name, type: 'DOUBLE', values: cols[i] as Float64Array })
      })
    return keepColumns({ columns }, TICKER_RETURNS_FIELDS, selected)
  }
  return {
    body,
    store,
    confidence: confidence(n, isEtf ? n : populated),
    table,
    filename: `ticker-returns_${r.symbol}_${spanLabel(span)}`,
  }
}

function requireKind(store: ModelStore, r: ResolvedTicker, kind: 'stock' | 'etf'): void {
  const actual = store.symbols[r.index]?.asset_type
  if (actual === kind) return
  throw new AppError(
    'INVALID_TICKER',
    kind === 'stock'
      ? `${r.ticker} is an ETF: use GET /etf-returns for ETF returns`
      : `${r.ticker} is a stock: use GET /returns for stock returns`,
  )
}

/** GET /returns (a stock) and GET /etf-returns (an ETF): parallel `dates` and `returns_gross`. */
export async function grossReturns(
  models: ModelRegistry,
  env: ModelEnvironment,
  rawTicker: string,
  span: HistorySpan,
  kind: 'stock' | 'etf',
) {
  const store = models.store(env)
  const r = resolveTicker(store, rawTicker)
  requireKind(store, r, kind)
  const w = await historyWindow(store, r.index, span)
  const ds = dates(store, w.from, w.to)
  const ret = w.returns.subarray(w.from, w.to)
  const values = Array.from(ret, nul)
  const body = {
    ticker: r.ticker,
    symbol: r.symbol,
    dates: ds,
    returns_gross: values,
    _metadata: models.metadata(store, w.range ?? undefined, r),
  }
  const finite = values.filter((v) => v !== null).length
  const coverage = ds.length === 0 ? 0 : finite / ds.length
  return {
    body,
    store,
    confidence: { overall: coverage, factors: { returns_coverage: coverage } },
    table: (): FlatTable => ({
      columns: [dateColumn(ds), { name: 'returns_gross', type: 'DOUBLE', values: ret }],
    }),
    filename: `${kind === 'etf' ? 'etf-returns' : 'returns'}_${r.symbol}_${spanLabel(span)}`,
  }
}
