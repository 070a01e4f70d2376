import { canonicalTicker } from '../../engine/data/aliases.ts'
import { FLOAT_FIELDS } from '../../engine/model-store/layout.ts'
import type { ModelStore, StoreField } from '../../engine/model-store/reader.ts'
import type { Column } from '../../engine/zarr/index.ts'
import { parseIsoDay } from '../../platform/dates.ts'
import { AppError } from '../../platform/errors.ts'

/**
 * The long panel of `erm3 export`: one row per (ticker, date) of the symbol's listed life (its
 * first to its last priced day, so a day without a close inside it has a row: null price and
 * returns, the model of the window ending that day), columns `date, ticker` then the fields,
 * named as in the API (MetricsV3), then
 * `recommended_level, sector_etf, subsector_etf`. Rows come ticker by ticker in date order, in
 * blocks, so an export of the whole store never sits in memory.
 */
export const EXPORT_FIELDS = [
  ...FLOAT_FIELDS.slice(0, FLOAT_FIELDS.indexOf('lstar_rr') + 1),
  'lstar_level',
  ...FLOAT_FIELDS.slice(FLOAT_FIELDS.indexOf('lstar_rr') + 1),
  'recommended_level',
  'sector_etf',
  'subsector_etf',
] as const satisfies readonly StoreField[]
type ExportField = (typeof EXPORT_FIELDS)[number]

/** Integer-valued export columns (levels); null where the model has none. */
export const INTEGER_FIELDS: ReadonlySet<string> = new Set(['lstar_level', 'recommended_level'])
/** Text export columns (ETF tickers). */
export const TEXT_FIELDS: ReadonlySet<string> = new Set(['sector_etf', 'subsector_etf'])

export interface ExportRequest {
  tickers?: string[]
  from?: string
  to?: string
  fields?: string[]
}

export interface ExportBlock {
  /** Day numbers of the rows. */
  date: Int32Array
  ticker: string[]
  /** Float columns hold NaN for null; integer columns NaN for null; text columns null. */
  numbers: Map<string, Float64Array>
  texts: Map<string, (string | null)[]>
}

export interface ExportPlan {
  fields: ExportField[]
  symbols: number[]
  from: number
  to: number
}

export function planExport(store: ModelStore, req: ExportRequest): ExportPlan {
  const fields = (req.fields ?? [...EXPORT_FIELDS]).map((f) => {
    if (!(EXPORT_FIELDS as readonly string[]).includes(f)) {
      throw new AppError(
        'INVALID_REQUEST',
        `unknown field ${JSON.stringify(f)}; known fields: ${EXPORT_FIELDS.join(', ')}`,
      )
    }
    return f as ExportField
  })
  const day = (iso: string | undefined, name: string, fallback: number) => {
    if (iso === undefined) return fallback
    const t = dayAtOrAfter(store, iso)
    if (t === null)
      throw new AppError('INVALID_REQUEST', `--${name} must be a date YYYY-MM-DD, got ${JSON.stringify(iso)}`)
    return t
  }
  const from = day(req.from, 'from', 0)
  const toIncl = req.to === undefined ? store.calendar.length - 1 : dayAtOrAfter(store, req.to, true)
  if (toIncl === null)
    throw new AppError('INVALID_REQUEST', `--to must be a date YYYY-MM-DD, got ${JSON.stringify(req.to)}`)
  let symbols = store.symbols.map((_, i) => i)
  if (req.tickers) {
    symbols = req.tickers.map((raw) => {
      const i = store.resolve(canonicalTicker(raw))
      if (i < 0) throw new AppError('NOT_FOUND', `unknown ticker ${JSON.stringify(raw)}`)
      return i
    })
    symbols = [...new Set(symbols)].sort((a, b) => a - b)
  }
  return { fields, symbols, from, to: toIncl + 1 }
}

/** Calendar index of the first day >= iso (or, with `last`, the last day <= iso); null if not a date. */
function dayAtOrAfter(store: ModelStore, iso: string, last = false): number | null {
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(iso)
  if (!m) return null
  const d = Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3])) / 86_400_000
  if (!Number.isFinite(d)) return null
  const cal = store.calendar
  let k = 0
  while (k < cal.length && cal[k] < d) k++
  if (!last) return k
  return k < cal.length && cal[k] === d ? k : k - 1
}

/** Yields the panel in blocks of up to `blockSymbols` symbols. */
export async function* exportBlocks(
  store: ModelStore,
  plan: ExportPlan,
  blockSymbols = 64,
): AsyncGenerator<ExportBlock> {
  const storeFields = plan.fields as readonly StoreField[]
  for (let k = 0; k < plan.symbols.length; k += blockSymbols) {
    const block: ExportBlock = { date: new Int32Array(0), ticker: [], numbers: new Map(), texts: new Map() }
    const dates: number[] = []
    const nums = new Map<string, number[]>(plan.fields.filter((f) => !TEXT_FIELDS.has(f)).map((f) => [f, []]))
    const texts = new Map<string, (string | null)[]>(
      plan.fields.filter((f) => TEXT_FIELDS.has(f)).map((f) => [f, []]),
    )
    for (const i of plan.symbols.slice(k, k + blockSymbols)) {
      const life = await store.listedLife(i)
      const from = Math.max(plan.from, life.first)
      const to = Math.min(plan.to, life.last + 1)
      if (to <= from) continue
      const h = await store.history(i, storeFields, from, to)
      const windows = tickerWindows(store, i)
      for (let j = 0; j < to - from; j++) {
        const t = from + j
        dates.push(store.calendar[t])
        block.ticker.push(tickerAt(windows, store.calendar[t]))
        for (const [f, out] of nums) out.push(numeric(f, h[f][j]))
        for (const [f, out] of texts) out.push(etfName(store, h[f] as Column, j))
      }
    }
    block.date = Int32Array.from(dates)
    for (const [f, v] of nums) block.numbers.set(f, Float64Array.from(v))
    block.texts = texts
    if (dates.length > 0) yield block
  }
}

function numeric(field: string, v: number): number {
  // Level codes are stored as 0 = null.
  return INTEGER_FIELDS.has(field) && v === 0 ? Number.NaN : v
}

function etfName(store: ModelStore, codes: Column, j: number): string | null {
  const e = codes[j]
  return e >= 0 ? (store.etfs[e] ?? null) : null
}

type TickerWindow = { from: number; to: number; ticker: string }

function tickerWindows(store: ModelStore, i: number): TickerWindow[] {
  const s = store.symbols[i]
  const w = s.tickers.map((x) => ({
    from: parseIsoDay(x.from) ?? Number.NEGATIVE_INFINITY,
    to: x.to ? (parseIsoDay(x.to) ?? Number.POSITIVE_INFINITY) : Number.POSITIVE_INFINITY,
    ticker: x.ticker,
  }))
  return w.length ? w : [{ from: Number.NEGATIVE_INFINITY, to: Number.POSITIVE_INFINITY, ticker: s.symbol }]
}

/** The ticker in force on `day`: its window, else the first window before listing, the last after. */
function tickerAt(windows: TickerWindow[], day: number): string {
  for (const w of windows) if (day >= w.from && day <= w.to) return w.ticker
  return day < windows[0].from ? windows[0].ticker : windows[windows.length - 1].ticker
}
