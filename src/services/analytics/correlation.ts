import { wireCode } from '../../contract/errors.ts'
import { MAX_CORRELATION_TICKERS } from '../../contract/ops/correlation.ts'
import { FACTOR_KEYS, factorKey } from '../../engine/data/factors.ts'
import {
  type CorrelationMethod,
  type CorrelationScratch,
  correlations,
  createCorrelationScratch,
  MIN_PAIRS,
} from '../../engine/model/correlation.ts'
import type { ModelStore, StoreField } from '../../engine/model-store/reader.ts'
import { AppError } from '../../platform/errors.ts'
import type { ModelEnvironment, ModelRegistry } from '../models.ts'
import { etfOf, rowsTable } from './series.ts'
import { resolveTicker } from './tickers.ts'

/**
 * GET /metrics/{ticker}/correlation and POST /correlation (docs/methodology.md §13): a stock's return
 * series against the stored macro and style factor returns, over trailing paired days ending at
 * the stock's last priced day (src/engine/model/correlation.ts does the numbers).
 */

type CorrelationReturnType = 'gross' | 'l1' | 'l2' | 'l3_residual'

const FIELD_OF: Record<CorrelationReturnType, StoreField> = {
  gross: 'returns_gross',
  l1: 'l1_rr',
  l2: 'l2_rr',
  l3_residual: 'l3_rr',
}

export interface CorrelationOptionsQuery {
  factors?: string | readonly string[]
  return_type?: CorrelationReturnType
  window_days?: number
  method?: CorrelationMethod
}

export interface CorrelationRequest extends CorrelationOptionsQuery {
  ticker?: string
  tickers?: string[]
}

interface Options {
  keys: string[]
  returnType: CorrelationReturnType
  windowDays: number
  method: CorrelationMethod
}

/** `oil,DXY,btc` → distinct factor keys in the order asked (default all 18); unknown names → 400. */
function factorList(raw: string | readonly string[] | undefined): string[] {
  const names = (typeof raw === 'string' ? [raw] : (raw ?? []))
    .flatMap((s) => s.split(','))
    .map((s) => s.trim())
    .filter((s) => s.length > 0)
  if (names.length === 0) return [...FACTOR_KEYS]
  return [...new Set(names.map(factorKey))]
}

/** The options of a request, validated before metering (a bad option is a free 400). */
export function correlationOptions(q: CorrelationOptionsQuery): Options {
  return {
    keys: factorList(q.factors),
    returnType: q.return_type ?? 'l3_residual',
    windowDays: q.window_days ?? 252,
    method: q.method ?? 'pearson',
  }
}

/** POST /correlation's tickers: exactly one of `ticker` and `tickers` (checked before metering). */
export function correlationTickers(b: CorrelationRequest): { tickers: string[]; batch: boolean } {
  if ((b.ticker === undefined) === (b.tickers === undefined)) {
    throw new AppError('INVALID_INPUT', 'give exactly one of ticker (one) or tickers (a batch of 2–50)')
  }
  if (b.ticker !== undefined) return { tickers: [b.ticker], batch: false }
  const tickers = b.tickers ?? []
  if (tickers.length > MAX_CORRELATION_TICKERS)
    throw new AppError(
      'TOO_MANY_TICKERS',
      `At most ${MAX_CORRELATION_TICKERS} tickers per call, got ${tickers.length}`,
    )
  return { tickers, batch: true }
}

export interface CorrelationResult {
  ticker: string
  symbol: string
  return_type: CorrelationReturnType
  method: CorrelationMethod
  window_days: number
  teo: string
  correlations: Record<string, number | null>
  overlap_days: Record<string, number>
  warnings: string[]
}

/** A level residual needs the level's ETFs: without a sector ETF there is no L2 or L3 residual. */
async function levelWarnings(store: ModelStore, i: number, ticker: string, o: Options): Promise<string[]> {
  if (o.returnType !== 'l2' && o.returnType !== 'l3_residual') return []
  const { values } = await store.latest(i, ['sector_etf', 'subsector_etf'])
  const sector = etfOf(store, values.sector_etf)
  if (sector === null) {
    throw new AppError(
      'INVALID_INPUT',
      `${ticker} has no sector ETF, so it has no ${o.returnType === 'l2' ? 'L2' : 'L3'} residual ` +
        '(the model stops at the market level for it): use return_type gross or l1',
    )
  }
  // On fallback days the stored subsector ETF is the sector ETF (docs/methodology.md §3).
  if (o.returnType === 'l3_residual' && etfOf(store, values.subsector_etf) === sector) {
    return [
      `${ticker} has no subsector ETF of its own at teo (the subsector falls back to the sector ETF ${sector}): ` +
        'l3_residual equals the l2 residual there',
    ]
  }
  return []
}

/** One ticker's correlations (throws AppError for an unknown ticker or a level it lacks). */
export async function correlationOf(
  store: ModelStore,
  raw: string,
  o: Options,
  scratch: CorrelationScratch,
): Promise<CorrelationResult> {
  const r = resolveTicker(store, raw)
  const end = await store.lastPriced(r.index)
  if (end < 0) throw new AppError('INVALID_INPUT', `${r.ticker} has no priced day in this dataset`)
  const warnings = await levelWarnings(store, r.index, r.ticker, o)
  if (r.note) warnings.unshift(r.note)
  const field = FIELD_OF[o.returnType]
  const [h, f] = await Promise.all([store.history(r.index, [field]), store.factorReturns()])
  const series = o.keys.map((k) => f.returns[f.keys.indexOf(k)] ?? new Float64Array(0))
  const res = correlations(h[field] as Float64Array, series, end, {
    windowDays: o.windowDays,
    method: o.method,
    scratch,
  })
  const out: CorrelationResult = {
    ticker: r.ticker,
    symbol: r.symbol,
    return_type: o.returnType,
    method: o.method,
    window_days: o.windowDays,
    teo: store.date(end),
    correlations: {},
    overlap_days: {},
    warnings,
  }
  o.keys.forEach((k, j) => {
    const { value, pairs } = res[j] as { value: number | null; pairs: number }
    out.correlations[k] = value
    out.overlap_days[k] = pairs
    if (pairs < MIN_PAIRS) warnings.push(`fewer than ${MIN_PAIRS} paired days with ${k} (${pairs}): null`)
    else if (value === null) warnings.push(`${k}: one side is constant over the window: null`)
    else if (pairs < o.windowDays) warnings.push(`only ${pairs} of ${o.windowDays} paired days with ${k}`)
  })
  return out
}

interface ErrorRow {
  ticker: string
  status: 'error'
  code: string
  detail: string
}

function longTable(results: readonly (CorrelationResult | ErrorRow)[]) {
  const rows: { ticker: string; factor: string; correlation: number | null; pairs: number }[] = []
  for (const r of results) {
    if (!('correlations' in r)) continue
    for (const [factor, correlation] of Object.entries(r.correlations))
      rows.push({ ticker: r.ticker, factor, correlation, pairs: r.overlap_days[factor] ?? 0 })
  }
  return rowsTable(rows, { ticker: 'text', factor: 'text', correlation: 'double', pairs: 'int' })
}

const confidence = (store: ModelStore, results: readonly CorrelationResult[]) => {
  let n = 0
  let known = 0
  for (const r of results)
    for (const v of Object.values(r.correlations)) {
      n++
      if (v !== null) known++
    }
  const coverage = n === 0 ? 0 : known / n
  const freshness = results.every((r) => r.teo === store.dataAsOf) ? 1 : 0.5
  return { overall: Math.min(coverage, freshness), factors: { coverage, freshness } }
}

/** GET /metrics/{ticker}/correlation and POST /correlation with `ticker`. */
export async function getCorrelation(
  models: ModelRegistry,
  env: ModelEnvironment,
  ticker: string,
  q: CorrelationOptionsQuery,
) {
  const store = models.store(env)
  const r = await correlationOf(
    store,
    ticker,
    correlationOptions(q),
    createCorrelationScratch(q.window_days ?? 252),
  )
  return {
    // Resolved again only for `_metadata.ticker_note` (it already resolved once, so it cannot throw).
    body: { ...r, _metadata: models.metadata(store, [r.teo, r.teo], resolveTicker(store, ticker)) },
    store,
    confidence: confidence(store, [r]),
    table: () => longTable([r]),
    filename: `correlation_${r.symbol}_${r.return_type}`,
  }
}

/** POST /correlation with `tickers`: per-ticker errors; the call fails when none succeeds. */
export async function batchCorrelation(
  models: ModelRegistry,
  env: ModelEnvironment,
  tickers: readonly string[],
  q: CorrelationOptionsQuery,
) {
  const store = models.store(env)
  const o = correlationOptions(q)
  const scratch = createCorrelationScratch(o.windowDays)
  const results: (CorrelationResult | ErrorRow)[] = []
  let firstError: unknown = null
  for (const t of tickers) {
    try {
      results.push(await correlationOf(store, t, o, scratch))
    } catch (e) {
      if (!(e instanceof AppError)) throw e
      firstError ??= e
      results.push({
        ticker: t.trim().toUpperCase(),
        status: 'error',
        code: wireCode(e.code),
        detail: e.message,
      })
    }
  }
  const ok = results.filter((r): r is CorrelationResult => 'correlations' in r)
  if (ok.length === 0) throw firstError
  const teos = ok.map((r) => r.teo).sort()
  return {
    body: {
      results,
      _metadata: models.metadata(store, [teos[0] as string, teos[teos.length - 1] as string]),
    },
    store,
    confidence: confidence(store, ok),
    // A batch is priced per call (0.005) whatever its size: the call's batch size picks the price.
    positions: tickers.length,
    table: () => longTable(results),
    filename: `correlation_batch_${o.returnType}`,
  }
}
