import { AppError } from '../../../platform/errors.ts'
import { type ModelEnvironment, type ModelRegistry, universeBasisOf } from '../../models.ts'
import { type Num, num, rowsTable } from '../series.ts'
import { resolveTicker } from '../tickers.ts'
import { dayConfidence, resolveTeo, teoNote, tickerAt } from '../trading-day.ts'

/**
 * The residual-reversion basket (docs/methodology.md §12, "Residual reversion"): a basket's members with
 * their reversion scores on one day.
 */

const MAX_BASKET = 500

export interface BasketRequest {
  tickers?: string[]
  positions?: { ticker: string; weight: number }[]
  signal_quality_min_quintile?: number
  teo?: string
}

interface BasketRow {
  ticker: string
  symbol: string | null
  z: Num
  decile: number | null
  quality_quintile: number | null
  weight: number
  included: boolean
  reason: string | null
}

/** The basket's members as asked: tickers (equal weights) or positions, at most 500, no duplicates. */
export function basketMembers(b: BasketRequest): { ticker: string; weight: number }[] {
  if ((b.tickers === undefined) === (b.positions === undefined)) {
    throw new AppError(
      'INVALID_INPUT',
      'give exactly one of tickers (equal weights) or positions [{ticker, weight}]',
    )
  }
  const list = b.tickers ? b.tickers.map((ticker) => ({ ticker, weight: 1 })) : (b.positions ?? [])
  if (list.length === 0) throw new AppError('INVALID_INPUT', 'the basket is empty')
  if (list.length > MAX_BASKET) {
    throw new AppError('TOO_MANY_TICKERS', `a basket holds at most ${MAX_BASKET} tickers, got ${list.length}`)
  }
  const seen = new Set<string>()
  for (const m of list) {
    const key = m.ticker.trim().toUpperCase()
    if (seen.has(key)) throw new AppError('INVALID_INPUT', `ticker ${key} appears twice in the basket`)
    seen.add(key)
    if (!Number.isFinite(m.weight))
      throw new AppError('INVALID_INPUT', `the weight of ${key} is not a finite number`)
  }
  if (list.every((m) => m.weight === 0)) throw new AppError('INVALID_INPUT', 'every weight is 0')
  return list
}

/** POST /signals/residual-reversion/basket. */
export async function residualReversionBasket(
  models: ModelRegistry,
  env: ModelEnvironment,
  b: BasketRequest,
) {
  const asked = basketMembers(b)
  const store = models.store(env)
  const x = resolveTeo(store, b.teo)
  const minQ = b.signal_quality_min_quintile ?? null
  const [z, decile, quality] = await Promise.all([
    store.readRow('products/reversion_z', x.t),
    store.readRow('products/reversion_decile', x.t),
    store.readRow('products/quality_quintile', x.t),
  ])
  const day = store.calendar[x.t]
  const rows: BasketRow[] = asked.map((m) => {
    let i: number
    try {
      i = resolveTicker(store, m.ticker).index
    } catch (err) {
      if (err instanceof AppError && err.code === 'TICKER_NOT_FOUND') {
        const ticker = m.ticker.trim().toUpperCase()
        return {
          ticker,
          symbol: null,
          z: null,
          decile: null,
          quality_quintile: null,
          weight: m.weight,
          included: false,
          reason: 'TICKER_NOT_FOUND',
        }
      }
      throw err
    }
    const row = {
      ticker: tickerAt(store, i, day),
      symbol: store.symbols[i].symbol,
      z: num(z[i]),
      decile: decile[i] > 0 ? decile[i] : null,
      quality_quintile: quality[i] > 0 ? quality[i] : null,
      weight: m.weight,
    }
    const reason =
      row.z === null
        ? 'NO_SIGNAL: fewer than 60 days of l3_rr at teo, or not a stock'
        : minQ !== null && row.quality_quintile === null
          ? 'NO_QUALITY: not in the default universe at teo, so it has no signal-quality quintile'
          : minQ !== null && (row.quality_quintile ?? 0) < minQ
            ? `BELOW_QUALITY: quality quintile ${row.quality_quintile} < ${minQ}`
            : null
    return { ...row, included: reason === null, reason }
  })
  if (rows.every((r) => r.reason === 'TICKER_NOT_FOUND')) {
    throw new AppError('TICKER_NOT_FOUND', `No security with ticker ${rows.map((r) => r.ticker).join(', ')}`)
  }
  const inc = rows.filter((r) => r.included)
  const gross = inc.reduce((s, r) => s + Math.abs(r.weight), 0)
  // An included row has a z-score (a null one gives the row a reason).
  const aggregate = gross > 0 ? inc.reduce((s, r) => s + r.weight * (r.z as number), 0) / gross : null
  const histogram = (key: 'decile' | 'quality_quintile', n: number) =>
    Array.from({ length: n }, (_, k) => {
      const bucket = inc.filter((r) => r[key] === k + 1)
      return { [key]: k + 1, count: bucket.length, weight: bucket.reduce((s, r) => s + r.weight, 0) }
    })
  const body = {
    teo: x.teo,
    ...teoNote(x),
    signal_quality_min_quintile: minQ,
    universe_basis: universeBasisOf(store).universe_basis,
    aggregate: {
      z: aggregate,
      weighting: b.positions ? 'weights as given, normalised by Σ|w|' : 'equal',
      n_members: rows.length,
      n_included: inc.length,
      gross_weight: gross,
    },
    decile_histogram: histogram('decile', 10),
    quality_quintile_histogram: histogram('quality_quintile', 5),
    members: rows,
    _metadata: models.metadata(store, [x.teo, x.teo]),
  }
  const table = () =>
    rowsTable(rows, {
      ticker: 'text',
      symbol: 'text',
      z: 'double',
      decile: 'int',
      quality_quintile: 'int',
      weight: 'double',
      included: 'bool',
      reason: 'text',
    })
  return {
    body,
    store,
    confidence: dayConfidence(store, x, rows.length ? inc.length / rows.length : 0),
    positions: 1,
    table,
    filename: `residual-reversion-basket_${x.teo}`,
  }
}
