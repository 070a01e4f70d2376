import { DECOMPOSITION_SERIES, RETURNS_DECOMPOSITION_FIELDS } from '../../contract/ops/analytics.ts'
import type { FlatTable } from '../../contract/table.ts'
import type { ModelEnvironment, ModelRegistry } from '../models.ts'
import { keepColumns, keepFields, parseFields } from './fields.ts'
import {
  dateColumn,
  doubleColumn,
  type LevelName,
  levelName,
  type Num,
  nullable,
  seriesConfidence,
  textColumn,
} from './series.ts'
import { resolveTicker } from './tickers.ts'
import { historyWindow, spanLabel } from './window.ts'

/** GET /returns-decomposition (docs/methodology.md §8): the stored daily decomposition. */

const DECOMPOSITION_KEYS = DECOMPOSITION_SERIES
type DecompositionKey = (typeof DECOMPOSITION_KEYS)[number]

export interface ReturnsDecompositionOptions {
  years?: number | undefined
  start?: string | undefined
  end?: string | undefined
  fields?: string | readonly string[] | undefined
  /** `include_lstar=true` or `dispatch=lstar`: adds `lstar` and `lstar_residual_return`. */
  includeLstar?: boolean
}

export async function getReturnsDecomposition(
  models: ModelRegistry,
  env: ModelEnvironment,
  rawTicker: string,
  opts: ReturnsDecompositionOptions = {},
) {
  const selected = parseFields(opts.fields, RETURNS_DECOMPOSITION_FIELDS)
  const store = models.store(env)
  const r = resolveTicker(store, rawTicker)
  const w = await historyWindow(store, r.index, opts)
  const fields = [...DECOMPOSITION_KEYS, 'lstar_rr', 'lstar_level'] as const
  const h = w.to > w.from ? await store.history(r.index, fields, w.from, w.to) : null
  const days = Array.from({ length: w.to - w.from }, (_, i) => w.from + i)
  const dates = days.map((t) => store.date(t))
  const gross = nullable(w.returns, w.from, w.to)
  const parts = Object.fromEntries(
    DECOMPOSITION_KEYS.map((k) => [k, h ? nullable(h[k], w.from, w.to, w.from) : []]),
  ) as Record<DecompositionKey, Num[]>
  const lstar: LevelName[] = h ? Array.from(h.lstar_level, (c) => levelName(c)) : []
  const lstarRr = h ? nullable(h.lstar_rr, w.from, w.to, w.from) : []
  const body = {
    ticker: r.ticker,
    symbol: r.symbol,
    dates,
    ...keepFields({ gross, ...parts }, RETURNS_DECOMPOSITION_FIELDS, selected),
    ...(opts.includeLstar ? { lstar, lstar_residual_return: lstarRr } : {}),
    _metadata: models.metadata(store, w.range ?? undefined, r),
  }
  const table = (): FlatTable => keepColumns(full(), RETURNS_DECOMPOSITION_FIELDS, selected)
  const full = (): FlatTable => ({
    columns: [
      dateColumn('date', dates),
      doubleColumn('gross', gross),
      ...DECOMPOSITION_KEYS.map((k) => doubleColumn(k, parts[k])),
      ...(opts.includeLstar
        ? [textColumn('lstar', lstar), doubleColumn('lstar_residual_return', lstarRr)]
        : []),
    ],
  })
  const populated = parts.l3_cfr.filter((x) => x !== null).length
  return {
    body,
    store,
    confidence: seriesConfidence(
      populated,
      gross.filter((x) => x !== null).length,
      w.range?.[1] === store.dataAsOf,
    ),
    table,
    filename: `returns-decomposition_${r.symbol}_${spanLabel(opts)}`,
  }
}
