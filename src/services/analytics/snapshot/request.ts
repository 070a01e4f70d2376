import { wireCode } from '../../../contract/errors.ts'
import type { SNAPSHOT_TABLES } from '../../../contract/ops/snapshot.ts'
import type { ModelStore } from '../../../engine/model-store/reader.ts'
import { AppError } from '../../../platform/errors.ts'
import { resolveTicker } from '../tickers.ts'
import { parseBenchmarkExpression } from './benchmark.ts'

/** POST /snapshot's body: its rules (checked before metering, so a bad request is a free 400) and the book. */

export interface PositionInput {
  ticker: string
  weight?: number
  shares?: number
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
}

export interface SnapshotOptions {
  type: 'portfolio' | 'ticker'
  positions: PositionInput[]
  lookbackDays: number
  benchmark: string | null
  table: (typeof SNAPSHOT_TABLES)[number]
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
    })
    const byShares = positions.filter((p) => p.shares !== undefined).length
    if (byShares > 0 && byShares < positions.length)
      throw invalid(
        `weight-based and share-based positions must not be mixed (${byShares} of ${positions.length} rows give shares): ` +
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
  return {
    type: b.type,
    positions,
    lookbackDays: b.lookback_days ?? 252,
    benchmark,
    table: b.table ?? 'positions',
  }
}

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
  /** Dollars or fractions as given (summed over duplicates), or shares × price. */
  amount: number
  shares: number | null
  price: number | null
}

/**
 * Resolves the positions: unknown tickers and ETFs go to `unresolved`, a symbol given twice is
 * summed (with a warning); all unresolved → the first error is the answer (404 for an unknown ticker).
 */
export async function resolveBook(
  store: ModelStore,
  positions: readonly PositionInput[],
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
  for (const p of positions) {
    const asked = p.ticker.trim().toUpperCase()
    let r: ReturnType<typeof resolveTicker>
    try {
      r = resolveTicker(store, p.ticker)
    } catch (e) {
      if (!(e instanceof AppError)) throw e
      fail(asked, e)
      continue
    }
    if (store.symbols[r.index]?.asset_type === 'etf') {
      fail(
        asked,
        new AppError(
          'INVALID_INPUT',
          `${asked} is an ETF: snapshot positions are stocks (an ETF can be the benchmark, e.g. benchmark: "${r.symbol}")`,
        ),
      )
      continue
    }
    let amount = p.weight ?? 0
    let price: number | null = null
    if (p.shares !== undefined) {
      const { values } = await store.latest(r.index, ['price_close'])
      const close = values.price_close
      if (close === undefined || !(close > 0)) {
        fail(asked, new AppError('INVALID_INPUT', `${asked} has no price to convert its shares with`))
        continue
      }
      price = close
      amount = p.shares * close
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
      amount,
      shares: p.shares ?? null,
      price,
    })
  }
  if (bySymbol.size === 0) throw firstError ?? new AppError('INVALID_INPUT', 'no position resolved')
  return { entries: [...bySymbol.values()], unresolved, warnings }
}
