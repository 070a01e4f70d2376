import { SCREEN_DEFAULTS } from '../../contract/ops/rankings.ts'
import { SECTOR_ETFS } from '../../engine/data/etf-registry.ts'
import {
  COHORTS,
  type Cohort,
  RANKING_METRICS,
  RANKING_WINDOWS,
  type RankDay,
  type RankingMetric,
  type RankingWindow,
  rankDecile,
  rankPercentile,
} from '../../engine/model/cross/index.ts'
import type { ModelStore } from '../../engine/model-store/reader.ts'
import { AppError } from '../../platform/errors.ts'
import { type ModelEnvironment, type ModelRegistry, universeBasisOf } from '../models.ts'
import { dataOf, paginate } from './pagination.ts'
import { rankingAt, rankingsAt } from './rankings-day.ts'
import { etfOf, type Num, num, rowsTable } from './series.ts'
import { resolveTicker } from './tickers.ts'
import { dayConfidence, resolveTeo, type Teo, teoNote, tickerAt } from './trading-day.ts'

export { rankingsAt } from './rankings-day.ts'

/**
 * POST /rankings/screen and GET /rankings/{ticker} (docs/methodology.md §12) at any trading day of the
 * store (`teo`, resolved by trading-day.ts `resolveTeo`): data_as_of from the build's
 * precomputed rankings, other days computed on request (rankings-day.ts).
 *
 * Screen order: rank_ordinal ascending, then symbol key. With cohort universe ordinals are
 * unique; with sector or subsector the rows come from several cohorts, each ranked within its
 * own, so ordinal k appears once per cohort and those rows follow symbol key order.
 */

const SCREEN_DEFAULT_LIMIT = 100
const SCREEN_MAX_LIMIT = 500
/** The request leaves cohort and window optional; their defaults are the contract's (schema defaults). */
const SCREEN_DEFAULT_COHORT: Cohort = SCREEN_DEFAULTS.cohort
const SCREEN_DEFAULT_WINDOW: RankingWindow = SCREEN_DEFAULTS.window
/** The sector ETFs a `sector_filter` may name. */
const SCREEN_SECTOR_ETFS: readonly string[] = [...new Set(Object.values(SECTOR_ETFS))].sort()

export interface ScreenRequest {
  metric: RankingMetric
  cohort?: Cohort
  window?: RankingWindow
  /** Keeps rows with rank_percentile ≥ it (0..100). */
  min_percentile?: number
  /** Keeps one decile, 1 = best. */
  decile?: number
  /** A sector ETF ticker: keeps members whose sector ETF at teo is that ETF (any cohort). */
  sector_filter?: string
  limit?: number
  /** The next_cursor of the previous page (pagination.ts). */
  cursor?: string
  teo?: string
}

/** A screen request checked and with its defaults, before any store is read. */
export interface ScreenQuery {
  metric: RankingMetric
  cohort: Cohort
  window: RankingWindow
  minPercentile: number | null
  decile: number | null
  sectorFilter: string | null
  limit: number
  cursor: string | undefined
  teo: string | undefined
}

function oneOf<T extends string>(what: string, v: unknown, allowed: readonly T[]): T {
  if (typeof v === 'string' && (allowed as readonly string[]).includes(v)) return v as T
  throw new AppError(
    'INVALID_INPUT',
    `${what} must be one of ${allowed.join(', ')}, got ${JSON.stringify(v)}`,
  )
}

function inRange(
  what: string,
  v: number | undefined,
  lo: number,
  hi: number,
  integer: boolean,
): number | null {
  if (v === undefined) return null
  if (typeof v !== 'number' || !Number.isFinite(v) || v < lo || v > hi || (integer && !Number.isInteger(v))) {
    throw new AppError(
      'INVALID_INPUT',
      `${what} must be ${integer ? 'an integer' : 'a number'} in ${lo}..${hi}`,
    )
  }
  return v
}

function cursorOf(v: unknown): string | undefined {
  if (v === undefined || typeof v === 'string') return v
  throw new AppError('INVALID_INPUT', 'cursor must be a string: the next_cursor of the previous page')
}

/**
 * Checks a screen request (the contract's schema already does for REST and MCP; this also
 * serves direct callers) and names the valid sector ETFs for an unknown `sector_filter`. Needs no
 * store, so a route can call it before metering: a malformed request is a free 400.
 */
export function screenQuery(req: ScreenRequest): ScreenQuery {
  let sectorFilter: string | null = null
  if (req.sector_filter !== undefined) {
    sectorFilter = String(req.sector_filter).trim().toUpperCase()
    if (!SCREEN_SECTOR_ETFS.includes(sectorFilter)) {
      throw new AppError(
        'INVALID_INPUT',
        `sector_filter ${JSON.stringify(req.sector_filter)} is not a sector ETF: use one of ${SCREEN_SECTOR_ETFS.join(', ')}`,
      )
    }
  }
  return {
    metric: oneOf('metric', req.metric, RANKING_METRICS),
    cohort: oneOf('cohort', req.cohort ?? SCREEN_DEFAULT_COHORT, COHORTS),
    window: oneOf('window', req.window ?? SCREEN_DEFAULT_WINDOW, RANKING_WINDOWS),
    minPercentile: inRange('min_percentile', req.min_percentile, 0, 100, false),
    decile: inRange('decile', req.decile, 1, 10, true),
    sectorFilter,
    limit: inRange('limit', req.limit, 1, SCREEN_MAX_LIMIT, true) ?? SCREEN_DEFAULT_LIMIT,
    cursor: cursorOf(req.cursor),
    teo: req.teo,
  }
}

interface ScreenRow {
  ticker: string
  symbol: string
  value: number
  rank_ordinal: number
  rank_percentile: number
  decile: number
  cohort_size: number
  sector_etf: string | null
  subsector_etf: string | null
}

/** The ETF codes in effect at t (crossSection reads whole chunks, kept in the reader's cache). */
async function etfCodes(
  store: ModelStore,
  t: number,
): Promise<{ sec: ArrayLike<number>; sub: ArrayLike<number> }> {
  const [sec, sub] = await Promise.all([
    store.crossSection('sector_etf', t),
    store.crossSection('subsector_etf', t),
  ])
  return { sec, sub }
}

/** Symbol indices of `day`'s cohort members passing the filters, in screen order (see the header). */
function screenOrder(
  day: RankDay,
  q: Pick<ScreenQuery, 'cohort' | 'minPercentile' | 'decile'>,
  keep: (i: number) => boolean,
): Int32Array {
  const ordinal = day.ordinal[q.cohort]
  const size = day.cohortSize[q.cohort]
  const hits: number[] = []
  for (let i = 0; i < ordinal.length; i++) {
    const o = ordinal[i]
    if (o < 1 || !keep(i)) continue
    if (q.minPercentile !== null && !(rankPercentile(o, size[i]) >= q.minPercentile)) continue
    if (q.decile !== null && rankDecile(o, size[i]) !== q.decile) continue
    hits.push(i)
  }
  // Symbol index order is symbol key order (the store lists symbols sorted by key).
  return Int32Array.from(hits).sort((a, b) => ordinal[a] - ordinal[b] || a - b)
}

const windowRange = (store: ModelStore, x: Teo): [string, string] => [
  store.date(Math.max(0, x.t - 251)),
  x.teo,
]

/** POST /rankings/screen. */
export async function screenRankings(models: ModelRegistry, env: ModelEnvironment, req: ScreenRequest) {
  const q = screenQuery(req)
  const store = models.store(env)
  const x = resolveTeo(store, q.teo)
  const [day, codes] = await Promise.all([rankingAt(store, x.t, q.metric, q.window), etfCodes(store, x.t)])
  // A sector ETF missing from the store's ETF list (indexOf -1) has no members.
  const filterCode = q.sectorFilter === null ? null : store.etfs.indexOf(q.sectorFilter)
  const order = screenOrder(
    day,
    q,
    (i) => filterCode === null || (filterCode >= 0 && codes.sec[i] === filterCode),
  )
  const calendarDay = store.calendar[x.t]
  const ordinal = day.ordinal[q.cohort]
  const size = day.cohortSize[q.cohort]
  const { limit, cursor, ...params } = q
  const page = paginate(
    Array.from(order),
    { limit, cursor },
    dataOf(store),
    { ...params, teo: x.teo },
    'body',
  )
  const rows: ScreenRow[] = page.rows.map((i) => ({
    ticker: tickerAt(store, i, calendarDay),
    symbol: store.symbols[i].symbol,
    value: day.values[i],
    rank_ordinal: ordinal[i],
    rank_percentile: rankPercentile(ordinal[i], size[i]),
    decile: rankDecile(ordinal[i], size[i]),
    cohort_size: size[i],
    sector_etf: etfOf(store, codes.sec[i]),
    subsector_etf: etfOf(store, codes.sub[i]),
  }))
  const body = {
    teo: x.teo,
    ...teoNote(x),
    metric: q.metric,
    cohort: q.cohort,
    window: q.window,
    universe_basis: universeBasisOf(store).universe_basis,
    total_matches: order.length,
    total: page.total,
    next_cursor: page.next_cursor,
    rows,
    _metadata: models.metadata(store, windowRange(store, x)),
  }
  const table = () =>
    rowsTable(
      rows,
      {
        ticker: 'text',
        symbol: 'text',
        value: 'double',
        rank_ordinal: 'int',
        rank_percentile: 'double',
        decile: 'int',
        cohort_size: 'int',
        sector_etf: 'text',
        subsector_etf: 'text',
      },
      x.teo,
    )
  return {
    body,
    store,
    confidence: dayConfidence(store, x, rows.length > 0 ? 1 : 0),
    table,
    filename: `rankings-screen_${q.metric}_${q.window}_${q.cohort}_${x.teo}`,
  }
}

/**
 * One metric × window × cohort of a ticker. `value` is null exactly when the stock is not ranked
 * at all (not an active default-universe member at teo, or a window with a null day); the rank
 * fields are null when it is not in that cohort (also: no sector / subsector ETF at teo).
 */
interface TickerRank {
  metric: RankingMetric
  window: RankingWindow
  cohort: Cohort
  value: Num
  rank_ordinal: number | null
  rank_percentile: number | null
  decile: number | null
  cohort_size: number | null
}

/**
 * GET /rankings/{ticker}: 7 metrics × 4 windows × 3 cohorts, metric-major, then window, then
 * cohort, of the symbol that held the ticker at teo.
 */
export async function tickerRankings(
  models: ModelRegistry,
  env: ModelEnvironment,
  ticker: string,
  teo?: string,
) {
  const store = models.store(env)
  resolveTicker(store, ticker) // an invalid or unknown ticker fails before a bad teo
  const x = resolveTeo(store, teo)
  // The symbol holding the ticker at teo (a reused ticker names another company before).
  const r = resolveTicker(store, ticker, store.calendar[x.t])
  const i = r.index
  const [all, codes] = await Promise.all([rankingsAt(store, x.t), etfCodes(store, x.t)])
  const rankings: TickerRank[] = []
  let ranked = 0
  for (const day of all) {
    if (!Number.isNaN(day.values[i])) ranked++
    for (const cohort of COHORTS) {
      const o = day.ordinal[cohort][i]
      const n = day.cohortSize[cohort][i]
      rankings.push({
        metric: day.metric,
        window: day.window,
        cohort,
        value: num(day.values[i]),
        rank_ordinal: o >= 1 ? o : null,
        rank_percentile: o >= 1 ? rankPercentile(o, n) : null,
        decile: o >= 1 ? rankDecile(o, n) : null,
        cohort_size: o >= 1 ? n : null,
      })
    }
  }
  const body = {
    ticker: r.ticker,
    symbol: r.symbol,
    teo: x.teo,
    ...teoNote(x),
    sector_etf: etfOf(store, codes.sec[i]),
    subsector_etf: etfOf(store, codes.sub[i]),
    universe_basis: universeBasisOf(store).universe_basis,
    rankings,
    _metadata: models.metadata(store, windowRange(store, x), r),
  }
  const table = () =>
    rowsTable(
      rankings,
      {
        metric: 'text',
        window: 'text',
        cohort: 'text',
        value: 'double',
        rank_ordinal: 'int',
        rank_percentile: 'double',
        decile: 'int',
        cohort_size: 'int',
      },
      x.teo,
    )
  return {
    body,
    store,
    confidence: dayConfidence(store, x, ranked / all.length),
    table,
    filename: `rankings_${r.ticker}_${x.teo}`,
  }
}
