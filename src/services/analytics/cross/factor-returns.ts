import { MARKET_ETF } from '../../../engine/data/etf-registry.ts'
import { AppError } from '../../../platform/errors.ts'
import { L3_FACTORS, type ModelEnvironment, type ModelRegistry } from '../../models.ts'
import { type Num, num, rowsTable } from '../series.ts'
import { dayConfidence, resolveTeo, teoNote } from '../trading-day.ts'

/** The market and sector ETF factor returns on one day, compounded over the standard windows. */

/** The market ETF and the 11 sector ETFs, the only tickers /etf/factor-returns serves. */
const FACTOR_ETFS = L3_FACTORS

/** `SPY,XLK` / repeated values → distinct upper-cased tickers in the order asked (default all 12). */
function factorEtfList(raw: string | string[] | undefined): string[] {
  if (raw === undefined) return [...FACTOR_ETFS]
  const asked = (Array.isArray(raw) ? raw : [raw])
    .flatMap((s) => s.split(','))
    .map((s) => s.trim().toUpperCase())
    .filter((s) => s.length > 0)
  if (asked.length === 0) return [...FACTOR_ETFS]
  const bad = asked.filter((s) => !FACTOR_ETFS.includes(s))
  if (bad.length > 0) {
    throw new AppError(
      'INVALID_INPUT',
      `${bad.map((b) => JSON.stringify(b)).join(', ')} ${bad.length === 1 ? 'is' : 'are'} not a factor ETF: ` +
        `tickers must be among ${FACTOR_ETFS.join(', ')}`,
    )
  }
  return [...new Set(asked)]
}

/** prod(1 + r) - 1 over the `days` returns ending at t; null when any is missing or t is too early. */
function compounded(returns: ArrayLike<number>, t: number, days: number): Num {
  if (t - days + 1 < 0) return null
  let g = 1
  for (let d = t - days + 1; d <= t; d++) {
    const r = returns[d]
    if (Number.isNaN(r)) return null
    g *= 1 + r
  }
  return g - 1
}

interface FactorReturnRow {
  ticker: string
  role: 'market' | 'sector'
  close: Num
  return_1d: Num
  return_21d: Num
  return_63d: Num
  return_252d: Num
}

/** GET /etf/factor-returns. */
export async function getEtfFactorReturns(
  models: ModelRegistry,
  env: ModelEnvironment,
  q: { tickers?: string | string[]; teo?: string },
) {
  const tickers = factorEtfList(q.tickers)
  const store = models.store(env)
  const x = resolveTeo(store, q.teo)
  const rows: FactorReturnRow[] = []
  for (const ticker of tickers) {
    const s = await store.etfSeries(ticker)
    const r = (days: number) => (s ? compounded(s.returns, x.t, days) : null)
    rows.push({
      ticker,
      role: ticker === MARKET_ETF ? 'market' : 'sector',
      close: s ? num(s.close[x.t]) : null,
      return_1d: r(1),
      return_21d: r(21),
      return_63d: r(63),
      return_252d: r(252),
    })
  }
  const body = {
    teo: x.teo,
    ...teoNote(x),
    etfs: rows,
    _metadata: models.metadata(store, [store.date(Math.max(0, x.t - 251)), x.teo]),
  }
  const table = () =>
    rowsTable(
      rows,
      {
        ticker: 'text',
        role: 'text',
        close: 'double',
        return_1d: 'double',
        return_21d: 'double',
        return_63d: 'double',
        return_252d: 'double',
      },
      x.teo,
    )
  const covered = rows.filter((r) => r.return_1d !== null).length / rows.length
  return {
    body,
    store,
    confidence: dayConfidence(store, x, covered),
    table,
    filename: `etf-factor-returns_${x.teo}`,
  }
}
