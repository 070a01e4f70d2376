import { MARKET_ETF } from '../../../engine/data/etf-registry.ts'
import { compoundStrips, cumulativeAndDrawdown, sampleVariance } from '../../../engine/model/portfolio.ts'
import type { ModelStore } from '../../../engine/model-store/reader.ts'
import type { ModelEnvironment, ModelRegistry } from '../../models.ts'
import { levelName } from '../series.ts'
import { resolveTeo } from '../trading-day.ts'
import { type ResolvedBenchmark, resolveBenchmark } from './benchmark.ts'
import { consistencyNotes, exposureBlock, forecastBlock } from './book.ts'
import { attributeDay, etfRole, type Holding, loadHolding, unknownHolding } from './holdings.ts'
import {
  loadEtfHolding,
  PeerRisk,
  type PendingBeta,
  proxyHolding,
  settleBetas,
  weightSpecificRisk,
} from './proxies.ts'
import { resolveBook, type SnapshotOptions, type SnapshotRequest, snapshotOptions } from './request.ts'
import {
  annualVol,
  type BookRisk,
  bookExposures,
  bookRisk,
  type Contribution,
  EtfSpace,
  eulerContributions,
  type Member,
  NULL_CONTRIBUTION,
  residualVariance,
} from './risk.ts'
import { estimatorOf, riskModelMetadata } from './risk-model.ts'

import {
  activeBlock,
  byKey,
  concentration,
  dominantDrivers,
  etfMember,
  hedgeEffectiveness,
  hedgeList,
  memberOf,
  type Position,
  positionRow,
  riskFigures,
  snapshotTable,
} from './sections.ts'

export { getBenchmark } from './benchmark.ts'
export { type SnapshotRequest, snapshotOptions } from './request.ts'

/**
 * POST /snapshot (every formula in docs/methodology.md §13
 * "Portfolio risk"): a book's exposures, covariance-based variance and its cascade split, Euler
 * contributions, the benchmark and active risk, and the frozen-weight daily series.
 */

/** The fewest common ETF days the covariance is estimated from. */
const MIN_ETF_DAYS = 20

/**
 * The answer is built in steps, each a function below: resolve the holdings (the book, the
 * benchmark, every stock's model over the lookback) -> price the risk (ETF covariance, the
 * book's, benchmark's and active variance) -> the daily series -> the sections -> assemble.
 */
export async function snapshotService(
  models: ModelRegistry,
  env: ModelEnvironment,
  request: SnapshotRequest,
) {
  const o = snapshotOptions(request)
  const store = models.store(env)
  const asOf = resolveTeo(store, o.asOf, 'as_of')
  const win = lookbackWindow(asOf.t, o.lookbackDays)
  const book = await resolveHoldings(store, o, win)
  if (asOf.requested !== null)
    book.warnings.unshift(
      `as_of ${asOf.requested} is not a trading day: the previous trading day ${asOf.teo} is used`,
    )
  const etfs = await etfCovariance(store, book, win, o)
  const risk = priceRisk(store, book, etfs)
  const series = dailySeries(store, book, etfs, win)

  const positionRows = book.positions.map((p) =>
    positionRow(store, p, risk.contributionOf.get(p) ?? NULL_CONTRIBUTION, risk.standaloneOf.get(p) ?? null),
  )
  const snapshot = snapshotSection(store, o, win, book, etfs, risk, positionRows)
  snapshot.notes.push(...consistencyNotes(positionRows, risk.figures, o.lookbackDays))
  const riskSummary = riskSummarySection(store, book, etfs.space, risk, series, win.days)
  const { timeBehavior, attribution } = seriesSections(series)
  const body = {
    snapshot,
    risk_summary: riskSummary,
    time_behavior: timeBehavior,
    attribution,
    metadata: {
      data_as_of: store.dataAsOf,
      as_of: store.date(win.T),
      lookback_days: o.lookbackDays,
      mode: 'frozen' as const,
      benchmark: o.benchmark,
      benchmark_context_id: snapshot.benchmark_context_id,
    },
    _metadata: {
      ...models.metadata(store, [store.date(win.from), store.date(win.T)]),
      risk_model: riskModelMetadata(o.estimator, o.horizon),
    },
  }
  const only = o.type === 'ticker' ? book.positions[0] : undefined
  return {
    body,
    store,
    confidence: {
      overall: Math.min(1, risk.weightCovered),
      factors: { model_coverage: risk.weightCovered, proxied: risk.weightProxied },
    },
    table: () => snapshotTable(o.table, positionRows, attribution, timeBehavior),
    filename: `snapshot_${o.type === 'ticker' ? (only?.symbol ?? 'ticker') : 'portfolio'}_${o.table}`,
  }
}

/** The lookback: the last `lookbackDays` trading days up to as_of (day T), fewer if the dataset is short. */
interface Lookback {
  T: number
  from: number
  days: number
}

function lookbackWindow(T: number, lookbackDays: number): Lookback {
  const from = Math.max(0, T - lookbackDays + 1)
  return { T, from, days: T - from + 1 }
}

type Book = Awaited<ReturnType<typeof resolveHoldings>>

/**
 * Step 1: the book's positions (weights of the resolved amounts, largest first) and the
 * benchmark (a book too), with the holding of every stock in either loaded over the lookback.
 * The warnings collected here and in the next steps go out with the answer, in this order.
 */
async function resolveHoldings(store: ModelStore, o: SnapshotOptions, win: Lookback) {
  const { T, from, days } = win
  const { entries, unresolved, warnings } = await resolveBook(store, o.positions, T)
  if (days < o.lookbackDays)
    warnings.push(
      `the dataset holds ${days} trading days up to as_of: the lookback is ${days}, not ${o.lookbackDays}`,
    )
  // Weights are fractions of the gross: a short (negative) position keeps its sign.
  const gross = entries.reduce((a, e) => a + Math.abs(e.amount), 0)
  const holdings = new Map<number, Holding>()
  const pending: PendingBeta[] = []
  await Promise.all(
    entries.map(async (e) => {
      const h = !e.inDataset
        ? unknownHolding(e.index, days, e.proxy)
        : e.asset_type === 'etf'
          ? await loadEtfHolding(store, e.index, from, T, pending)
          : await loadHolding(store, e.index, from, T)
      holdings.set(e.index, h)
    }),
  )
  const positions: Position[] = entries.map((e) => ({
    ticker: e.ticker,
    symbol: e.symbol,
    asset_type: e.asset_type,
    weight: e.amount / gross,
    shares: e.shares,
    price: e.price,
    holding: holdings.get(e.index) as Holding,
  }))
  positions.sort((a, b) => Math.abs(b.weight) - Math.abs(a.weight) || (a.ticker < b.ticker ? -1 : 1))
  const peers = new PeerRisk(store, T)
  for (const p of positions) {
    const h = p.holding
    if (h.covered) continue
    await proxyHolding(store, h, peers, pending)
    warnings.push(proxyWarning(p.ticker, h))
  }
  const amounts = {
    gross,
    net: entries.reduce((a, e) => a + e.amount, 0),
    byShares: entries.some((e) => e.shares !== null),
  }

  // The benchmark (a book too); its stocks load like positions.
  let benchmark: ResolvedBenchmark | null = null
  if (o.benchmark !== null) {
    const r = resolveBenchmark(store, o.benchmark)
    if (r.ok) benchmark = r.benchmark
    else warnings.push(`benchmark ${JSON.stringify(o.benchmark)} does not resolve: ${r.reason}`)
  }
  const benchStocks = (benchmark?.components ?? []).filter((c) => c.asset_type === 'stock')
  await Promise.all(
    benchStocks.map(async (c) => {
      const i = store.resolve(c.ticker)
      if (!holdings.has(i)) holdings.set(i, await loadHolding(store, i, from, T))
    }),
  )
  const { specific, maxDays } = estimatorOf(o.estimator)
  if (specific) await weightSpecificRisk(holdings.values(), peers, specific, maxDays)
  // Every position the risk figures price: its own model, an ETF, or a proxy.
  const priced = positions.filter((p) => p.holding.basis !== 'none')
  return { positions, priced, unresolved, warnings, benchmark, holdings, pending, amounts }
}

/** What a warning says of an uncovered position: its proxy, or why it is left out. */
function proxyWarning(ticker: string, h: Holding): string {
  if (!h.proxy) return `${ticker} is left out of the risk figures: ${h.reason}`
  const { etf, peers, peers_of } = h.proxy
  if (h.inDataset)
    return `${ticker} has no model at as_of (${h.reason}): its risk is proxied by ${etf} plus the median specific risk of its ${peers} sector peers`
  const of = peers_of === null ? `all ${peers} stocks of the universe` : `the ${peers} stocks of ${peers_of}`
  return (
    `${ticker} is not in the dataset: its risk is proxied by ${etf}${h.proxy.given ? ' (the proxy given)' : ''} plus ` +
    `the median specific risk of ${of}; it has no returns, so the daily series leave it out`
  )
}

type EtfCovariance = Awaited<ReturnType<typeof etfCovariance>>

/**
 * Step 2a: the ETF space and its sample covariance over the lookback. The risk figures need at
 * least one covered position and MIN_ETF_DAYS days on which every ETF in play has a return.
 */
async function etfCovariance(store: ModelStore, book: Book, win: Lookback, o: SnapshotOptions) {
  const { T, from, days } = win
  const { priced, benchmark, holdings, warnings } = book
  // ETF space: every leg of a priced holding, and the benchmark's ETFs (with the market ETF for their L1).
  const space = new EtfSpace()
  for (const p of priced) for (const legs of p.holding.legs) for (const l of legs) space.add(l.etf)
  for (const c of benchmark?.components ?? []) {
    if (c.asset_type === 'etf') {
      space.add(MARKET_ETF)
      space.add(c.ticker)
    } else {
      const h = holdings.get(store.resolve(c.ticker)) as Holding
      if (h.covered) for (const legs of h.legs) for (const l of legs) space.add(l.etf)
      else warnings.push(`benchmark stock ${c.ticker} is left out of the benchmark's risk: ${h.reason}`)
    }
  }
  const etfReturns = await Promise.all(
    space.etfs.map(async (etf) => {
      const i = store.resolve(etf)
      if (i < 0) return new Float64Array(days).fill(Number.NaN)
      const h = await store.history(i, ['returns_gross'], from, T + 1)
      return Float64Array.from(h.returns_gross as ArrayLike<number>)
    }),
  )
  const estimator = estimatorOf(o.estimator)
  const { cov, days: etfDays, clipped } = estimator.covariance(etfReturns, days)
  const usable = Math.min(days, estimator.maxDays)
  if (usable < days)
    warnings.push(
      `estimator ${o.estimator} reads the last ${usable} of the ${days} lookback days (its window)`,
    )
  const n = space.etfs.length
  warnings.push(...psdWarnings(n, etfDays, clipped))
  const m = space.index.get(MARKET_ETF)
  const beta = (etf: string) => {
    const s = space.index.get(etf)
    return s === undefined || m === undefined
      ? Number.NaN
      : (cov[s * n + m] as number) / (cov[m * n + m] as number)
  }
  settleBetas(
    book.pending,
    beta,
    book.positions.filter((p) => p.asset_type === 'etf').map((p) => p.holding),
    m === undefined ? null : (etfReturns[m] as Float64Array),
    (h) => store.symbols[h.index]?.symbol as string,
  )
  const riskOk = etfDays >= MIN_ETF_DAYS && priced.length > 0
  if (priced.length === 0)
    warnings.push('no position has a model or a proxy at as_of: the risk figures are null')
  else if (!riskOk)
    warnings.push(
      `only ${etfDays} days in the lookback on which every ETF in play has a return (at least ${MIN_ETF_DAYS} needed): the risk figures are null`,
    )
  else if (etfDays < usable)
    warnings.push(
      `the ETF covariance uses the ${etfDays} of ${usable} lookback days on which every ETF in play has a return`,
    )
  return { space, etfReturns, cov, etfDays, riskOk }
}

/**
 * The PSD flags of the ETF covariance: more ETFs in play than observations less one (the
 * covariance is singular, some combinations of ETFs have zero forecast risk), and negative
 * eigenvalues set to zero.
 */
function psdWarnings(n: number, observations: number, clipped: number): string[] {
  const out: string[] = []
  if (observations >= MIN_ETF_DAYS && n > observations - 1)
    out.push(
      `the book's ${n} ETFs outnumber the ${observations} observations of their covariance less one: the ` +
        'covariance is singular and some ETF combinations get zero forecast risk; a longer lookback_days avoids it',
    )
  if (clipped > 0)
    out.push(
      `${clipped} negative eigenvalue${clipped === 1 ? '' : 's'} of the ETF covariance ${clipped === 1 ? 'was' : 'were'} ` +
        'set to zero to make it positive semi-definite',
    )
  return out
}

type PricedRisk = ReturnType<typeof priceRisk>

/**
 * Step 2b: the book's variance, its cascade split and Euler contributions; the benchmark's
 * and the active book's. Everything is null when the covariance is not usable (riskOk).
 */
function priceRisk(store: ModelStore, book: Book, etfs: EtfCovariance) {
  const { space, cov, riskOk } = etfs
  const { priced, benchmark, holdings } = book
  const n = space.etfs.length
  const members = priced.map((p) => memberOf(space, p.symbol, p.weight, p.holding))
  const portfolioRisk = riskOk
    ? bookRisk(bookExposures([...members].sort(byKey), n), residualVariance(members), cov)
    : null
  const euler = portfolioRisk ? eulerContributions(members, portfolioRisk, cov) : null
  const contributionOf = new Map(priced.map((p, i) => [p, euler?.members[i] ?? NULL_CONTRIBUTION]))
  const standaloneOf = new Map(priced.map((p, i) => [p, euler?.standalone[i] ?? null]))
  const weightOf = (basis: Holding['basis'][]) =>
    book.positions.reduce((a, p) => a + (basis.includes(p.holding.basis) ? Math.abs(p.weight) : 0), 0)
  const weightCovered = weightOf(['model', 'etf'])
  const weightProxied = weightOf(['proxy'])

  // Benchmark book and the active book.
  let benchRisk: BookRisk | null = null
  let active: ReturnType<typeof activeBlock> | null = null
  let benchMembers: Member[] = []
  if (benchmark && riskOk) {
    benchMembers = benchmark.components.flatMap((c) => {
      if (c.asset_type === 'etf') return [etfMember(space, c.ticker, c.weight, cov)]
      const h = holdings.get(store.resolve(c.ticker)) as Holding
      return h.covered ? [memberOf(space, store.symbols[h.index]?.symbol ?? c.ticker, c.weight, h)] : []
    })
    benchRisk = bookRisk(bookExposures([...benchMembers].sort(byKey), n), residualVariance(benchMembers), cov)
    active = activeBlock(members, benchMembers, space, cov, portfolioRisk as BookRisk, benchRisk)
  }
  // The hedge ratios per level (the book's exposures), also when the risk itself is null.
  const hp = portfolioRisk?.h ?? bookExposures(members, n)
  const figures = riskFigures(portfolioRisk)
  return {
    figures,
    portfolioRisk,
    euler,
    contributionOf,
    standaloneOf,
    weightCovered,
    weightProxied,
    benchRisk,
    benchMembers,
    active,
    hp,
  }
}

type Strips = Record<'gross' | 'market' | 'sector' | 'subsector' | 'residual', Float64Array>
type DailySeries = ReturnType<typeof dailySeries>

/**
 * Step 3: the frozen-weight daily series. Every resolved position counts, covered or not (an
 * uncovered one is all residual).
 */
function dailySeries(store: ModelStore, book: Book, etfs: EtfCovariance, win: Lookback) {
  const { from, days } = win
  const strips: Strips = {
    gross: new Float64Array(days),
    market: new Float64Array(days),
    sector: new Float64Array(days),
    subsector: new Float64Array(days),
    residual: new Float64Array(days),
  }
  const part = new Float64Array(4)
  // Days on which some position has a return: the others are no observation (null), never a 0 return.
  const observed = new Uint8Array(days)
  for (const p of book.positions) {
    const w = p.weight
    for (let t = 0; t < days; t++) {
      if (!attributeDay(p.holding, t, part)) continue
      observed[t] = 1
      strips.gross[t] += w * p.holding.series.returns_gross[t]
      strips.market[t] += w * part[0]
      strips.sector[t] += w * part[1]
      strips.subsector[t] += w * part[2]
      strips.residual[t] += w * part[3]
    }
  }
  const systematic = strips.market.map((m, t) => m + strips.sector[t] + strips.subsector[t])
  const dates = Array.from({ length: days }, (_, k) => store.date(from + k))
  const path = cumulativeAndDrawdown(strips.gross)
  const realized = sampleVariance(onObserved(strips.gross, observed), 0, days)
  const benchSeries = book.benchmark ? benchmarkSeries(store, book, etfs, days) : null
  return { strips, systematic, dates, path, realized, benchSeries, observed }
}

/** `x` on the observed days, NaN on the others (which every variance then skips). */
const onObserved = (x: Float64Array, observed: Uint8Array) => x.map((v, t) => (observed[t] ? v : Number.NaN))

/** The benchmark's daily return: its components' gross returns at their weights (a missing day adds 0). */
function benchmarkSeries(store: ModelStore, book: Book, etfs: EtfCovariance, days: number) {
  const { benchmark, holdings } = book
  const ret = new Float64Array(days)
  for (const c of benchmark?.components ?? []) {
    const series =
      c.asset_type === 'etf'
        ? (etfs.etfReturns[etfs.space.index.get(c.ticker) as number] as Float64Array)
        : (holdings.get(store.resolve(c.ticker)) as Holding).series.returns_gross
    for (let t = 0; t < days; t++) {
      const r = series[t] as number
      if (!Number.isNaN(r)) ret[t] += c.weight * r
    }
  }
  return { ret, cum: cumulativeAndDrawdown(ret).cumulative }
}

/** Step 4a: the `snapshot` section — the book, its hedges per level, the risk figures, the warnings. */
function snapshotSection(
  store: ModelStore,
  o: SnapshotOptions,
  win: Lookback,
  book: Book,
  etfs: EtfCovariance,
  risk: PricedRisk,
  positionRows: ReturnType<typeof positionRow>[],
) {
  const { T, from, days } = win
  const { positions, priced, benchmark, unresolved, warnings } = book
  const { space, etfDays } = etfs
  const { hp } = risk
  const n = space.etfs.length
  const recommended = new Float64Array(n)
  for (const p of priced) {
    const v = space.vector(p.holding.recommended, p.weight)
    for (let j = 0; j < n; j++) recommended[j] = recommended[j] + v[j]
  }
  const only = o.type === 'ticker' ? positions[0] : undefined
  return {
    type: o.type,
    as_of: store.date(T),
    lookback: { from: store.date(from), to: store.date(T), days, etf_days: etfDays },
    positions: positionRows,
    positions_count: positions.length,
    covered_count: positions.filter((p) => p.holding.covered).length,
    weight_covered: risk.weightCovered,
    weight_proxied: risk.weightProxied,
    exposure: exposureBlock(positions, book.amounts),
    hedges: {
      L1: hedgeList(space, hp[0]),
      L2: hedgeList(space, hp[1]),
      L3: hedgeList(space, hp[2]),
      recommended: hedgeList(space, recommended),
    },
    ...risk.figures,
    forecast: forecastBlock(risk.portfolioRisk, o.estimator, o.horizon),
    diversification_ratio: risk.euler?.diversification ?? null,
    unresolved,
    benchmark,
    benchmark_context_id: benchmark?.id ?? null,
    ...(only
      ? {
          ticker_meta: {
            ticker: only.ticker,
            symbol: only.symbol,
            name: store.symbols[only.holding.index]?.name ?? only.symbol,
            factors: [
              ...new Set(
                [MARKET_ETF, only.holding.sectorEtf, only.holding.subsectorEtf].filter(
                  (x): x is string => x !== null,
                ),
              ),
            ],
            recommended_level: levelName(only.holding.state.recommended_level),
          },
        }
      : {}),
    warnings,
    notes: [] as string[],
  }
}

/** Step 4b: the `risk_summary` section — drivers, exposures, concentration, contributions, active risk. */
function riskSummarySection(
  store: ModelStore,
  book: Book,
  space: EtfSpace,
  risk: PricedRisk,
  series: DailySeries,
  days: number,
) {
  const { strips, observed } = series
  const { positions, priced } = book
  const { figures, euler, contributionOf, hp, benchRisk, weightCovered } = risk
  const etfContrib = euler?.etfs ?? []
  return {
    total_risk_ann: figures.volatility_ann,
    systematic_share: figures.variance_decomposition.systematic,
    dominant_drivers: dominantDrivers(space, etfContrib, euler?.residual ?? null, priced, contributionOf),
    top_exposures: space.etfs
      .map((etf, j) => ({ etf, role: etfRole(etf), hr: hp[2][j] }))
      .filter((x) => x.hr !== 0)
      .sort((a, b) => Math.abs(b.hr) - Math.abs(a.hr))
      .slice(0, 5),
    concentration: concentration(store, positions, figures.variance_decomposition.residual, weightCovered),
    contributions: {
      positions: priced.map((p) => ({
        ticker: p.ticker,
        weight: p.weight,
        ...(contributionOf.get(p) as Contribution),
      })),
      etfs: space.etfs.map((etf, j) => ({
        etf,
        exposure: hp[2][j],
        ...(etfContrib[j] ?? NULL_CONTRIBUTION),
      })),
      residual: euler?.residual ?? NULL_CONTRIBUTION,
    },
    active: risk.active,
    hedge_effectiveness: hedgeEffectiveness(
      {
        gross: onObserved(strips.gross, observed),
        market: strips.market,
        sector: strips.sector,
        residual: onObserved(strips.residual, observed),
      },
      days,
    ),
    benchmark_risk: benchRisk
      ? {
          ...riskFigures(benchRisk),
          hedges_L3: hedgeList(space, benchRisk.h[2]),
          weight_covered: risk.benchMembers.reduce((a, m) => a + m.weight, 0),
        }
      : null,
  }
}

/** Step 4c: the `time_behavior` and `attribution` sections — the daily series as plain arrays. */
function seriesSections(series: DailySeries) {
  const { strips, systematic, dates, path, realized, benchSeries, observed } = series
  const timeBehavior = {
    dates,
    portfolio_return: Array.from(strips.gross, (g, t) => (observed[t] ? g : null)),
    cumulative_return: Array.from(path.cumulative),
    drawdown: Array.from(path.drawdown),
    max_drawdown: path.maxDrawdown,
    realized_vol_ann: annualVol(realized.variance),
    ...(benchSeries
      ? {
          benchmark_return: Array.from(benchSeries.ret),
          benchmark_cumulative_return: Array.from(benchSeries.cum),
          active_return: Array.from(strips.gross, (g, t) => g - benchSeries.ret[t]),
        }
      : {}),
  }
  const stripArrays = { ...strips, systematic }
  const attribution = {
    dates,
    gross: Array.from(strips.gross),
    market: Array.from(strips.market),
    sector: Array.from(strips.sector),
    subsector: Array.from(strips.subsector),
    residual: Array.from(strips.residual),
    systematic: Array.from(systematic),
    totals: compoundStrips(stripArrays),
  }
  return { timeBehavior, attribution }
}
