import { wireCode } from '../../../contract/errors.ts'
import type { SNAPSHOT_TABLES } from '../../../contract/ops/snapshot.ts'
import type { ModelStore } from '../../../engine/model-store/reader.ts'
import { parseIsoDay } from '../../../platform/dates.ts'
import { AppError } from '../../../platform/errors.ts'
import { resolveTicker } from '../tickers.ts'
import { parseBenchmarkExpression } from './benchmark.ts'
import {
  DEFAULT_ESTIMATOR,
  DEFAULT_HORIZON,
  ESTIMATOR_NAMES,
  type EstimatorName,
  FORECAST_HORIZONS,
  type ForecastHorizon,
  isEstimatorName,
  isForecastHorizon,
} from './risk-model.ts'

/** POST /snapshot's body: its rules (checked before metering, so a bad request is a free 400) and the book. */

export interface PositionInput {
  ticker: string
  weight?: number
  shares?: number
  /** For a ticker the dataset does not know: the ETF standing in for it. */
  proxy?: string
}

export interface SnapshotRequest {
  type: 'portfolio' | 'ticker'
  portfolio?: PositionInput[]
  ticker?: string
  lookback_days?: number
  mode?: 'frozen'
  benchmark?: string | null
  format?: string
  table?: (typeof SNAPSHOT_TABLES)[number]
  as_of?: string
  horizon?: number
  estimator?: string
}

export interface SnapshotOptions {
  type: 'portfolio' | 'ticker'
  positions: PositionInput[]
  lookbackDays: number
  benchmark: string | null
  table: (typeof SNAPSHOT_TABLES)[number]
  /** The day asked (YYYY-MM-DD), resolved against the store's calendar by the service; undefined = data_as_of. */
  asOf: string | undefined
  horizon: ForecastHorizon
  estimator: EstimatorName
}

const invalid = (message: string, field: string) =>
  new AppError('INVALID_REQUEST', message, { fields: [{ field, message }] })

/** The request's rules beyond the schema: the type's members, weight xor shares, one basis for the book. */
export function snapshotOptions(b: SnapshotRequest): SnapshotOptions {
  let positions: PositionInput[]
  if (b.type === 'portfolio') {
    if (b.ticker !== undefined) throw invalid('type portfolio takes portfolio, not ticker', 'ticker')
    if (b.portfolio === undefined)
      throw invalid('type portfolio needs portfolio (1 to 100 positions)', 'portfolio')
    positions = b.portfolio
    positions.forEach((p, i) => {
      if ((p.weight === undefined) === (p.shares === undefined))
        throw invalid(`portfolio[${i}] (${p.ticker}) needs exactly one of weight or shares`, `portfolio/${i}`)
      const amount = p.weight ?? p.shares
      if (amount === 0 || !Number.isFinite(amount))
        throw invalid(
          `portfolio[${i}] (${p.ticker}): a ${p.weight !== undefined ? 'weight' : 'share count'} must be non-zero (negative = short)`,
          `portfolio/${i}`,
        )
    })
    const gross = positions.reduce((a, p) => a + Math.abs(p.weight ?? 0), 0)
    if (byShares(positions) === 0 && !(gross > 0)) throw invalid('the weights sum to zero gross', 'portfolio')
    const shareRows = byShares(positions)
    if (shareRows > 0 && shareRows < positions.length)
      throw invalid(
        `weight-based and share-based positions must not be mixed (${shareRows} of ${positions.length} rows give shares): ` +
          'give every row a weight, or every row a share count',
        'portfolio',
      )
  } else {
    if (b.portfolio !== undefined) throw invalid('type ticker takes ticker, not portfolio', 'portfolio')
    if (b.ticker === undefined) throw invalid('type ticker needs ticker', 'ticker')
    positions = [{ ticker: b.ticker, weight: 1 }]
  }
  const benchmark = b.benchmark ?? null
  // A malformed mix is the request's fault (400, free); a name that does not resolve is a warning.
  if (benchmark !== null && !benchmark.trim().startsWith('bm_')) parseBenchmarkExpression(benchmark)
  if (b.as_of !== undefined && parseIsoDay(b.as_of) === null)
    throw invalid(`as_of ${JSON.stringify(b.as_of)} is not a YYYY-MM-DD date`, 'as_of')
  const horizon = b.horizon ?? DEFAULT_HORIZON
  if (!isForecastHorizon(horizon))
    throw invalid(`horizon must be one of ${FORECAST_HORIZONS.join(', ')} trading days`, 'horizon')
  const estimator = b.estimator ?? DEFAULT_ESTIMATOR
  if (!isEstimatorName(estimator))
    throw invalid(`estimator must be one of ${ESTIMATOR_NAMES.join(', ')}`, 'estimator')
  return {
    type: b.type,
    positions,
    lookbackDays: b.lookback_days ?? 252,
    benchmark,
    table: b.table ?? 'positions',
    asOf: b.as_of,
    horizon,
    estimator,
  }
}

const byShares = (positions: readonly PositionInput[]) =>
  positions.filter((p) => p.shares !== undefined).length

export interface Unresolved {
  ticker: string
  code: string
  detail: string
  suggestions?: string[]
}

export interface BookEntry {
  /** As first asked (trimmed, upper-cased). */
  ticker: string
  symbol: string
  index: number
  /** A stock, or an ETF held as a position (its risk is its own factor exposure). */
  asset_type: 'stock' | 'etf'
  /** Dollars or fractions as given, signed (summed over duplicates), or shares × price. */
  amount: number
  shares: number | null
  price: number | null
  /** False for a ticker the dataset does not know (index < 0): priced by a proxy. */
  inDataset: boolean
  /** The proxy ETF the request gave for an unknown ticker (null: none given). */
  proxy: string | null
}

/**
 * Resolves the positions as of day T: a weight on a ticker the dataset does not know is an
 * entry of its own (index < 0, `inDataset` false: proxied later), malformed tickers and shares of
 * unknown ones go to `unresolved`, a symbol given twice is summed (with a warning); no ticker the
 * dataset knows → the first error is the answer (404 for an unknown ticker). Share counts are
 * priced at T's close (the last close before T for a stock that stopped trading; a stock not yet
 * listed at T cannot be priced). A proxy ETF that is not an ETF of the store is a 400.
 */
export async function resolveBook(
  store: ModelStore,
  positions: readonly PositionInput[],
  T: number,
): Promise<{ entries: BookEntry[]; unresolved: Unresolved[]; warnings: string[] }> {
  const bySymbol = new Map<number, BookEntry>()
  const unresolved: Unresolved[] = []
  const warnings: string[] = []
  let firstError: AppError | null = null
  const fail = (ticker: string, e: AppError) => {
    firstError ??= e
    const suggestions = e.extra.suggestions as string[] | undefined
    unresolved.push({
      ticker,
      code: wireCode(e.code),
      detail: e.message,
      ...(suggestions ? { suggestions } : {}),
    })
  }
  const unknown = new Map<string, BookEntry>()
  let unknownError: AppError | null = null
  for (const [i, p] of positions.entries()) {
    const asked = p.ticker.trim().toUpperCase()
    const proxy = proxyEtf(store, p, i)
    let r: ReturnType<typeof resolveTicker>
    try {
      r = resolveTicker(store, p.ticker, store.calendar[T])
    } catch (e) {
      if (!(e instanceof AppError)) throw e
      if (e.code !== 'TICKER_NOT_FOUND' || p.weight === undefined) fail(asked, e)
      else {
        unknownError ??= e
        addUnknown(unknown, asked, p.weight, proxy, e, warnings)
      }
      continue
    }
    if (proxy !== null)
      warnings.push(`${asked}: proxy ${proxy} is ignored (it is for a ticker the dataset does not know)`)
    let amount = p.weight ?? 0
    let price: number | null = null
    if (p.shares !== undefined) {
      price = await priceAt(store, r.index, T)
      if (price === null) {
        fail(
          asked,
          new AppError(
            'INVALID_INPUT',
            `${asked} has no price on or before as_of to convert its shares with`,
          ),
        )
        continue
      }
      amount = p.shares * price
    }
    // An old ticker of a renamed security: said once per position, as the warnings say the rest.
    if (r.note) warnings.push(r.note)
    const known = bySymbol.get(r.index)
    if (known) {
      known.amount += amount
      if (known.shares !== null && p.shares !== undefined) known.shares += p.shares
      warnings.push(
        `${asked} is given more than once: its ${p.shares !== undefined ? 'shares' : 'weights'} are summed`,
      )
      continue
    }
    bySymbol.set(r.index, {
      ticker: asked,
      symbol: r.symbol,
      index: r.index,
      asset_type: store.symbols[r.index]?.asset_type === 'etf' ? 'etf' : 'stock',
      amount,
      shares: p.shares ?? null,
      price,
      inDataset: true,
      proxy: null,
    })
  }
  if (bySymbol.size === 0)
    throw firstError ?? unknownError ?? new AppError('INVALID_INPUT', 'no position resolved')
  const entries = [...bySymbol.values(), ...unknown.values()]
  for (const e of entries)
    if (e.amount === 0) warnings.push(`${e.ticker}: its rows net to zero, so it is not in the book`)
  const kept = entries.filter((e) => e.amount !== 0)
  if (kept.length === 0) throw new AppError('INVALID_INPUT', 'every position nets to zero: the book is empty')
  return { entries: kept, unresolved, warnings }
}

/** The position's proxy ETF, upper-cased; one that is not an ETF of the store is a 400. */
function proxyEtf(store: ModelStore, p: PositionInput, i: number): string | null {
  if (p.proxy === undefined) return null
  const etf = p.proxy.trim().toUpperCase()
  const k = store.resolve(etf)
  if (k < 0 || store.symbols[k]?.asset_type !== 'etf')
    throw invalid(
      `portfolio[${i}] (${p.ticker}): proxy ${etf} is not an ETF of this dataset`,
      `portfolio/${i}/proxy`,
    )
  return store.symbols[k]?.symbol ?? etf
}

/**
 * A weight on a ticker the dataset does not know: a position of its own, priced by a proxy
 * (index.ts warns of the proxy; here, the suggestions of the 404 it would otherwise be).
 */
function addUnknown(
  unknown: Map<string, BookEntry>,
  asked: string,
  weight: number,
  proxy: string | null,
  e: AppError,
  warnings: string[],
) {
  const known = unknown.get(asked)
  if (known) {
    known.amount += weight
    known.proxy ??= proxy
    warnings.push(`${asked} is given more than once: its weights are summed`)
    return
  }
  // A typo is worth a word: the suggestions the 404 would have carried.
  const suggestions = (e.extra.suggestions as string[] | undefined) ?? []
  if (suggestions.length > 0)
    warnings.push(`${asked} is not in the dataset; did you mean ${suggestions.slice(0, 3).join(', ')}?`)
  unknown.set(asked, {
    ticker: asked,
    symbol: asked,
    index: -1 - unknown.size,
    asset_type: 'stock',
    amount: weight,
    shares: null,
    price: null,
    inDataset: false,
    proxy,
  })
}

/** The close on day T, or the last close before it (a stock that stopped trading); null before its first. */
async function priceAt(store: ModelStore, index: number, T: number): Promise<number | null> {
  const life = await store.listedLife(index)
  if (life.first < 0 || life.first > T) return null
  if (life.last <= T) {
    const close = (await store.latest(index, ['price_close'])).values.price_close
    return close !== undefined && close > 0 ? close : null
  }
  const h = await store.history(index, ['price_close'], life.first, T + 1)
  const closes = h.price_close as ArrayLike<number>
  for (let t = closes.length - 1; t >= 0; t--) if ((closes[t] as number) > 0) return closes[t] as number
  return null
}
