import { MARKET_ETF } from '../../data/etf-registry.ts'
import {
  compoundStrips,
  cumulativeAndDrawdown,
  sampleCovariance,
  sampleVariance,
} from '../../model/portfolio.ts'
import type { ModelStore } from '../../store/model-store/reader.ts'
import type { ModelEnvironment, ModelRegistry } from '../models.ts'
import { levelName, num, rowsTable } from '../series.ts'
import { type ResolvedBenchmark, resolveBenchmark } from './benchmark.ts'
import { attributeDay, etfRole, type Holding, loadHolding } from './holdings.ts'
import { resolveBook, type SnapshotRequest, snapshotOptions } from './request.ts'
import {
  annualVol,
  type BookRisk,
  bookExposures,
  bookRisk,
  type Contribution,
  EtfSpace,
  eulerContributions,
  layerSplit,
  type Member,
  NULL_CONTRIBUTION,
  NULL_SPLIT,
  residualVariance,
} from './risk.ts'

export { getBenchmark } from './benchmark.ts'
export { type SnapshotRequest, snapshotOptions } from './request.ts'

/**
 * POST /snapshot (spec §2.9, METHODOLOGY §11; every formula in docs/methodology.md §13
 * "Portfolio risk"): a book's exposures, covariance-based variance and its cascade split, Euler
 * contributions, the benchmark and active risk, and the frozen-weight daily series.
 */

/** The fewest common ETF days the covariance is estimated from. */
const MIN_ETF_DAYS = 20

interface Position {
  ticker: string
  symbol: string
  weight: number
  shares: number | null
  price: number | null
  holding: Holding
}

const hedgeList = (space: EtfSpace, v: Float64Array) =>
  space.etfs
    .map((etf, j) => ({ etf, hr: v[j] as number, role: etfRole(etf) }))
    .filter((x) => x.hr !== 0 || x.role === 'market')
    .sort((a, b) => roleOrder[a.role] - roleOrder[b.role] || Math.abs(b.hr) - Math.abs(a.hr))
    .map(({ etf, hr }) => ({ etf, hr }))

const roleOrder = { market: 0, sector: 1, subsector: 2 } as const

const memberOf = (space: EtfSpace, key: string, weight: number, h: Holding): Member => ({
  key,
  weight,
  exposures: h.legs.map((legs) => space.vector(legs)) as Member['exposures'],
  residualVar: h.residualVar,
})

/** An ETF held in a benchmark: the market ETF is itself at every level; a sector ETF is its market beta at L1. */
function etfMember(space: EtfSpace, etf: string, weight: number, cov: Float64Array): Member {
  const n = space.etfs.length
  const self = space.vector([{ etf, role: etfRole(etf), hr: 1 }])
  let l1 = self
  if (etf !== MARKET_ETF) {
    const s = space.index.get(etf) as number
    const m = space.index.get(MARKET_ETF) as number
    const beta = (cov[s * n + m] as number) / (cov[m * n + m] as number)
    l1 = space.vector([{ etf: MARKET_ETF, role: 'market', hr: Number.isFinite(beta) ? beta : Number.NaN }])
  }
  return { key: etf, weight, exposures: [l1, self, self], residualVar: 0 }
}

function riskFigures(r: BookRisk | null) {
  const split = r ? layerSplit(r) : NULL_SPLIT
  return {
    volatility_ann: r ? annualVol(r.variance) : null,
    systematic_vol_ann: r ? annualVol(r.v[2]) : null,
    residual_vol_ann: r ? annualVol(r.d) : null,
    variance_decomposition: split,
  }
}

/** Sorts members by key so that two books holding the same names sum in the same order. */
const byKey = (a: Member, b: Member) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0)

export async function snapshotService(
  models: ModelRegistry,
  env: ModelEnvironment,
  request: SnapshotRequest,
) {
  const o = snapshotOptions(request)
  const store = models.store(env)
  const T = store.calendar.length - 1
  const from = Math.max(0, T - o.lookbackDays + 1)
  const days = T - from + 1
  const { entries, unresolved, warnings } = await resolveBook(store, o.positions)
  if (days < o.lookbackDays)
    warnings.push(
      `the dataset holds ${days} trading days up to as_of: the lookback is ${days}, not ${o.lookbackDays}`,
    )
  const total = entries.reduce((a, e) => a + e.amount, 0)
  const holdings = new Map<number, Holding>()
  await Promise.all(
    entries.map(async (e) => {
      holdings.set(e.index, await loadHolding(store, e.index, from, T))
    }),
  )
  const positions: Position[] = entries.map((e) => ({
    ticker: e.ticker,
    symbol: e.symbol,
    weight: e.amount / total,
    shares: e.shares,
    price: e.price,
    holding: holdings.get(e.index) as Holding,
  }))
  positions.sort((a, b) => b.weight - a.weight || (a.ticker < b.ticker ? -1 : 1))
  for (const p of positions)
    if (!p.holding.covered) warnings.push(`${p.ticker} is left out of the risk figures: ${p.holding.reason}`)

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

  // ETF space: every leg of a covered holding, and the benchmark's ETFs (with the market ETF for their L1).
  const space = new EtfSpace()
  const covered = positions.filter((p) => p.holding.covered)
  for (const p of covered) for (const legs of p.holding.legs) for (const l of legs) space.add(l.etf)
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
  const { cov, days: etfDays } = sampleCovariance(etfReturns, 0, days)
  const riskOk = etfDays >= MIN_ETF_DAYS && covered.length > 0
  if (covered.length === 0) warnings.push('no position has a model at as_of: the risk figures are null')
  else if (!riskOk)
    warnings.push(
      `only ${etfDays} days in the lookback on which every ETF in play has a return (at least ${MIN_ETF_DAYS} needed): the risk figures are null`,
    )
  else if (etfDays < days)
    warnings.push(
      `the ETF covariance uses the ${etfDays} of ${days} lookback days on which every ETF in play has a return`,
    )

  const n = space.etfs.length
  const members = covered.map((p) => memberOf(space, p.symbol, p.weight, p.holding))
  const portfolioRisk = riskOk
    ? bookRisk(bookExposures([...members].sort(byKey), n), residualVariance(members), cov)
    : null
  const euler = portfolioRisk ? eulerContributions(members, portfolioRisk, cov) : null
  const contributionOf = new Map(covered.map((p, i) => [p, euler?.members[i] ?? NULL_CONTRIBUTION]))
  const standaloneOf = new Map(covered.map((p, i) => [p, euler?.standalone[i] ?? null]))
  const weightCovered = covered.reduce((a, p) => a + p.weight, 0)

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

  // Daily series: every resolved position, covered or not (an uncovered one is all residual).
  const strips = {
    gross: new Float64Array(days),
    market: new Float64Array(days),
    sector: new Float64Array(days),
    subsector: new Float64Array(days),
    residual: new Float64Array(days),
  }
  const part = new Float64Array(4)
  for (const p of positions) {
    const w = p.weight
    for (let t = 0; t < days; t++) {
      if (!attributeDay(p.holding, t, part)) continue
      strips.gross[t] += w * (p.holding.series.returns_gross[t] as number)
      strips.market[t] += w * (part[0] as number)
      strips.sector[t] += w * (part[1] as number)
      strips.subsector[t] += w * (part[2] as number)
      strips.residual[t] += w * (part[3] as number)
    }
  }
  const systematic = strips.market.map(
    (m, t) => m + (strips.sector[t] as number) + (strips.subsector[t] as number),
  )
  const dates = Array.from({ length: days }, (_, k) => store.date(from + k))
  const path = cumulativeAndDrawdown(strips.gross)
  const realized = sampleVariance(strips.gross, 0, days)
  let benchSeries: { ret: Float64Array; cum: Float64Array } | null = null
  if (benchmark) {
    const ret = new Float64Array(days)
    for (const c of benchmark.components) {
      const series =
        c.asset_type === 'etf'
          ? (etfReturns[space.index.get(c.ticker) as number] as Float64Array)
          : (holdings.get(store.resolve(c.ticker)) as Holding).series.returns_gross
      for (let t = 0; t < days; t++) {
        const r = series[t] as number
        if (!Number.isNaN(r)) ret[t] += c.weight * r
      }
    }
    benchSeries = { ret, cum: cumulativeAndDrawdown(ret).cumulative }
  }

  const positionRows = positions.map((p) =>
    positionRow(store, p, contributionOf.get(p) ?? NULL_CONTRIBUTION, standaloneOf.get(p) ?? null),
  )

  const hp = portfolioRisk?.h ?? bookExposures(members, n)
  const recommended = new Float64Array(n)
  for (const p of covered) {
    const v = space.vector(p.holding.recommended, p.weight)
    for (let j = 0; j < n; j++) recommended[j] = (recommended[j] as number) + (v[j] as number)
  }
  const figures = riskFigures(portfolioRisk)
  const benchmarkId = benchmark?.id ?? null
  const only = o.type === 'ticker' ? positions[0] : undefined
  const snapshot = {
    type: o.type,
    as_of: store.date(T),
    lookback: { from: store.date(from), to: store.date(T), days, etf_days: etfDays },
    positions: positionRows,
    positions_count: positions.length,
    covered_count: covered.length,
    weight_covered: weightCovered,
    hedges: {
      L1: hedgeList(space, hp[0]),
      L2: hedgeList(space, hp[1]),
      L3: hedgeList(space, hp[2]),
      recommended: hedgeList(space, recommended),
    },
    ...figures,
    diversification_ratio: euler?.diversification ?? null,
    unresolved,
    benchmark,
    benchmark_context_id: benchmarkId,
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
  }

  const etfContrib = euler?.etfs ?? []
  const riskSummary = {
    total_risk_ann: figures.volatility_ann,
    systematic_share: figures.variance_decomposition.systematic,
    dominant_drivers: dominantDrivers(space, etfContrib, euler?.residual ?? null, covered, contributionOf),
    top_exposures: space.etfs
      .map((etf, j) => ({ etf, role: etfRole(etf), hr: hp[2][j] as number }))
      .filter((x) => x.hr !== 0)
      .sort((a, b) => Math.abs(b.hr) - Math.abs(a.hr))
      .slice(0, 5),
    concentration: concentration(store, positions, figures.variance_decomposition.residual, weightCovered),
    contributions: {
      positions: covered.map((p) => ({
        ticker: p.ticker,
        weight: p.weight,
        ...(contributionOf.get(p) as Contribution),
      })),
      etfs: space.etfs.map((etf, j) => ({
        etf,
        exposure: hp[2][j] as number,
        ...(etfContrib[j] ?? NULL_CONTRIBUTION),
      })),
      residual: euler?.residual ?? NULL_CONTRIBUTION,
    },
    active,
    hedge_effectiveness: hedgeEffectiveness(strips, days),
    benchmark_risk: benchRisk
      ? {
          ...riskFigures(benchRisk),
          hedges_L3: hedgeList(space, benchRisk.h[2]),
          weight_covered: benchMembers.reduce((a, m) => a + m.weight, 0),
        }
      : null,
  }

  const timeBehavior = {
    dates,
    portfolio_return: Array.from(strips.gross),
    cumulative_return: Array.from(path.cumulative),
    drawdown: Array.from(path.drawdown),
    max_drawdown: path.maxDrawdown,
    realized_vol_ann: annualVol(realized.variance),
    ...(benchSeries
      ? {
          benchmark_return: Array.from(benchSeries.ret),
          benchmark_cumulative_return: Array.from(benchSeries.cum),
          active_return: Array.from(strips.gross, (g, t) => g - (benchSeries.ret[t] as number)),
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
  const body = {
    snapshot,
    risk_summary: riskSummary,
    time_behavior: timeBehavior,
    attribution,
    metadata: {
      data_as_of: store.dataAsOf,
      lookback_days: o.lookbackDays,
      mode: 'frozen' as const,
      benchmark: o.benchmark,
      benchmark_context_id: benchmarkId,
    },
    _metadata: models.metadata(store, [store.date(from), store.date(T)]),
  }
  return {
    body,
    store,
    confidence: { overall: Math.min(1, weightCovered), factors: { model_coverage: weightCovered } },
    table: () => snapshotTable(o.table, positionRows, attribution, timeBehavior),
    filename: `snapshot_${o.type === 'ticker' ? (only?.symbol ?? 'ticker') : 'portfolio'}_${o.table}`,
  }
}

function positionRow(store: ModelStore, p: Position, c: Contribution, standalone: number | null) {
  const h = p.holding
  const meta = store.symbols[h.index]
  const s = h.state
  return {
    ticker: p.ticker,
    symbol: p.symbol,
    name: meta?.name ?? p.symbol,
    sector: meta?.sector ?? null,
    weight: p.weight,
    shares: p.shares,
    price_close: p.price ?? num(s.price_close),
    market_value: p.shares !== null && p.price !== null ? p.shares * p.price : null,
    covered: h.covered,
    reason: h.reason,
    model_level: h.level,
    hedge_etfs: { market: MARKET_ETF, sector: h.sectorEtf, subsector: h.subsectorEtf },
    l3_mkt_hr: num(s.l3_mkt_hr),
    l3_sec_hr: num(s.l3_sec_hr),
    l3_sub_hr: num(s.l3_sub_hr),
    l3_mkt_er: num(s.l3_mkt_er),
    l3_sec_er: num(s.l3_sec_er),
    l3_sub_er: num(s.l3_sub_er),
    l3_res_er: num(s.l3_res_er),
    recommended_level: levelName(s.recommended_level),
    vol_23d: num(s.vol_23d),
    residual_vol_ann: h.covered ? annualVol(h.residualVar) : null,
    standalone_vol_ann: standalone,
    risk_contribution: c,
  }
}

/**
 * Realised, out of sample: the book's daily return after holding each level's hedge from the
 * previous close (gross − market = the L1 residual, − sector = L2, − subsector = L3), its
 * annualised volatility and the share of the gross variance it removed over the lookback.
 */
function hedgeEffectiveness(
  strips: Record<'gross' | 'market' | 'sector' | 'residual', Float64Array>,
  days: number,
) {
  const gross = sampleVariance(strips.gross, 0, days).variance
  const l1 = strips.gross.map((g, t) => g - (strips.market[t] as number))
  const l2 = l1.map((x, t) => x - (strips.sector[t] as number))
  const level = (r: Float64Array) => {
    const v = sampleVariance(r, 0, days).variance
    return { residual_vol_ann: annualVol(v), variance_reduction: gross > 0 && v >= 0 ? 1 - v / gross : null }
  }
  return { realized_vol_ann: annualVol(gross), L1: level(l1), L2: level(l2), L3: level(strips.residual) }
}

function activeBlock(
  portfolio: readonly Member[],
  bench: readonly Member[],
  space: EtfSpace,
  cov: Float64Array,
  p: BookRisk,
  b: BookRisk,
) {
  // The active book: every name of either book at (portfolio − benchmark) weight, summed in key order.
  const byKey = new Map<string, { member: Member; wp: number; wb: number }>()
  for (const m of portfolio) byKey.set(m.key, { member: m, wp: m.weight, wb: 0 })
  for (const m of bench) {
    const known = byKey.get(m.key)
    if (known) known.wb = m.weight
    else byKey.set(m.key, { member: m, wp: 0, wb: m.weight })
  }
  const keys = [...byKey.keys()].sort()
  const activeMembers: Member[] = keys.map((k) => {
    const x = byKey.get(k) as { member: Member; wp: number; wb: number }
    return { ...x.member, weight: x.wp - x.wb }
  })
  const a = bookRisk(bookExposures(activeMembers, space.etfs.length), residualVariance(activeMembers), cov)
  return {
    tracking_error_ann: annualVol(a.variance),
    active_split: layerSplit(a),
    active_weights: keys.map((k) => {
      const x = byKey.get(k) as { wp: number; wb: number }
      return { ticker: k, portfolio: x.wp, benchmark: x.wb, active: x.wp - x.wb }
    }),
    active_exposures: space.etfs.map((etf, j) => ({
      etf,
      portfolio: p.h[2][j] as number,
      benchmark: b.h[2][j] as number,
      active: a.h[2][j] as number,
    })),
  }
}

function dominantDrivers(
  space: EtfSpace,
  etfs: readonly Contribution[],
  residual: Contribution | null,
  covered: readonly Position[],
  contributionOf: Map<Position, Contribution>,
) {
  if (!residual || residual.percent === null) return []
  const factors = [
    ...space.etfs.map((etf, j) => ({ kind: 'etf' as const, name: etf, percent: etfs[j]?.percent ?? 0 })),
    { kind: 'residual' as const, name: 'stock-specific (residual)', percent: residual.percent },
  ]
  const names = covered.map((p) => ({
    kind: 'position' as const,
    name: p.ticker,
    percent: contributionOf.get(p)?.percent ?? 0,
  }))
  const top = <T extends { percent: number }>(xs: T[]) =>
    xs.sort((x, y) => Math.abs(y.percent) - Math.abs(x.percent)).slice(0, 3)
  return [...top(factors), ...top(names)]
}

function concentration(
  store: ModelStore,
  positions: readonly Position[],
  residualShare: number | null,
  weightCovered: number,
) {
  const weights = positions.map((p) => p.weight)
  const sectorWeights: Record<string, number> = {}
  for (const p of positions) {
    const s = store.symbols[p.holding.index]?.sector ?? 'Unclassified'
    sectorWeights[s] = (sectorWeights[s] ?? 0) + p.weight
  }
  const maxWeight = Math.max(...weights)
  const top5 = weights.slice(0, 5).reduce((a, b) => a + b, 0)
  const effective = 1 / weights.reduce((a, w) => a + w * w, 0)
  const pct = (x: number) => `${(100 * x).toFixed(1)}%`
  const flags: string[] = []
  const first = positions[0]
  if (positions.length > 1 && first && maxWeight > 0.2)
    flags.push(`${first.ticker} is ${pct(maxWeight)} of the book (> 20%)`)
  if (positions.length > 5 && top5 > 0.6)
    flags.push(`the five largest positions are ${pct(top5)} of the book (> 60%)`)
  for (const [s, w] of Object.entries(sectorWeights))
    if (positions.length > 1 && w > 0.4) flags.push(`${s} is ${pct(w)} of the book (> 40%)`)
  if (residualShare !== null && residualShare > 0.5)
    flags.push(
      `stock-specific risk is ${pct(residualShare)} of the variance: ETF hedges remove less than half of it`,
    )
  if (weightCovered < 1) flags.push(`the risk figures cover ${pct(weightCovered)} of the book`)
  return {
    effective_positions: effective,
    max_weight: maxWeight,
    top5_weight: top5,
    sector_weights: sectorWeights,
    flags,
  }
}

type Series = { dates: string[] } & Record<string, unknown>

function snapshotTable(
  table: 'positions' | 'attribution' | 'time_behavior',
  positions: readonly ReturnType<typeof positionRow>[],
  a: Series & Record<'gross' | 'market' | 'sector' | 'subsector' | 'residual' | 'systematic', number[]>,
  tb: Series &
    Record<'portfolio_return' | 'cumulative_return' | 'drawdown', number[]> & {
      benchmark_return?: number[]
      benchmark_cumulative_return?: number[]
      active_return?: number[]
    },
) {
  if (table === 'attribution') {
    return rowsTable(
      a.dates.map((date, t) => ({
        date,
        gross: a.gross[t],
        market: a.market[t],
        sector: a.sector[t],
        subsector: a.subsector[t],
        residual: a.residual[t],
        systematic: a.systematic[t],
      })),
      {
        date: 'date',
        gross: 'double',
        market: 'double',
        sector: 'double',
        subsector: 'double',
        residual: 'double',
        systematic: 'double',
      },
    )
  }
  if (table === 'time_behavior') {
    return rowsTable(
      tb.dates.map((date, t) => ({
        date,
        portfolio_return: tb.portfolio_return[t],
        cumulative_return: tb.cumulative_return[t],
        drawdown: tb.drawdown[t],
        benchmark_return: tb.benchmark_return?.[t] ?? null,
        benchmark_cumulative_return: tb.benchmark_cumulative_return?.[t] ?? null,
        active_return: tb.active_return?.[t] ?? null,
      })),
      {
        date: 'date',
        portfolio_return: 'double',
        cumulative_return: 'double',
        drawdown: 'double',
        benchmark_return: 'double',
        benchmark_cumulative_return: 'double',
        active_return: 'double',
      },
    )
  }
  return rowsTable(
    positions.map((p) => ({
      ticker: p.ticker,
      symbol: p.symbol,
      weight: p.weight,
      shares: p.shares,
      price_close: p.price_close,
      market_value: p.market_value,
      covered: p.covered,
      sector_etf: p.hedge_etfs.sector,
      subsector_etf: p.hedge_etfs.subsector,
      l3_mkt_hr: p.l3_mkt_hr,
      l3_sec_hr: p.l3_sec_hr,
      l3_sub_hr: p.l3_sub_hr,
      l3_mkt_er: p.l3_mkt_er,
      l3_sec_er: p.l3_sec_er,
      l3_sub_er: p.l3_sub_er,
      l3_res_er: p.l3_res_er,
      recommended_level: p.recommended_level,
      vol_23d: p.vol_23d,
      residual_vol_ann: p.residual_vol_ann,
      standalone_vol_ann: p.standalone_vol_ann,
      marginal_contribution: p.risk_contribution.marginal,
      component_contribution: p.risk_contribution.component,
      percent_contribution: p.risk_contribution.percent,
    })),
    {
      ticker: 'text',
      symbol: 'text',
      weight: 'double',
      shares: 'double',
      price_close: 'double',
      market_value: 'double',
      covered: 'bool',
      sector_etf: 'text',
      subsector_etf: 'text',
      l3_mkt_hr: 'double',
      l3_sec_hr: 'double',
      l3_sub_hr: 'double',
      l3_mkt_er: 'double',
      l3_sec_er: 'double',
      l3_sub_er: 'double',
      l3_res_er: 'double',
      recommended_level: 'text',
      vol_23d: 'double',
      residual_vol_ann: 'double',
      standalone_vol_ann: 'double',
      marginal_contribution: 'double',
      component_contribution: 'double',
      percent_contribution: 'double',
    },
  )
}
