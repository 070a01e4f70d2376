import { MARKET_ETF } from '../../../engine/data/etf-registry.ts'
import { sampleVariance } from '../../../engine/model/portfolio.ts'
import type { ModelStore } from '../../../engine/model-store/reader.ts'
import { levelName, num, rowsTable } from '../series.ts'
import { etfRole, type Holding } from './holdings.ts'
import {
  annualVol,
  type BookRisk,
  bookExposures,
  bookRisk,
  type Contribution,
  type EtfSpace,
  layerSplit,
  type Member,
  NULL_SPLIT,
  residualVariance,
} from './risk.ts'

/**
 * The parts of a POST /snapshot answer that snapshotService (index.ts) assembles: hedge lists,
 * book members, risk figures, position rows, hedge effectiveness, the active block, the dominant
 * drivers, concentration, and the tabular form.
 */
export interface Position {
  ticker: string
  symbol: string
  asset_type: 'stock' | 'etf'
  /** Signed fraction of the gross (negative = short). */
  weight: number
  shares: number | null
  price: number | null
  holding: Holding
}

export const hedgeList = (space: EtfSpace, v: Float64Array) =>
  space.etfs
    .map((etf, j) => ({ etf, hr: v[j], role: etfRole(etf) }))
    .filter((x) => x.hr !== 0 || x.role === 'market')
    .sort((a, b) => roleOrder[a.role] - roleOrder[b.role] || Math.abs(b.hr) - Math.abs(a.hr))
    .map(({ etf, hr }) => ({ etf, hr }))

const roleOrder = { market: 0, sector: 1, subsector: 2 } as const

export const memberOf = (space: EtfSpace, key: string, weight: number, h: Holding): Member => ({
  key,
  weight,
  exposures: h.legs.map((legs) => space.vector(legs)) as Member['exposures'],
  residualVar: h.residualVar,
})

/** An ETF held in a benchmark: the market ETF is itself at every level; a sector ETF is its market beta at L1. */
export function etfMember(space: EtfSpace, etf: string, weight: number, cov: Float64Array): Member {
  const n = space.etfs.length
  const self = space.vector([{ etf, role: etfRole(etf), hr: 1 }])
  let l1 = self
  if (etf !== MARKET_ETF) {
    // Both are in the space: a benchmark's ETFs and the market ETF are added with the benchmark.
    const s = space.index.get(etf) as number
    const m = space.index.get(MARKET_ETF) as number
    const beta = cov[s * n + m] / cov[m * n + m]
    l1 = space.vector([{ etf: MARKET_ETF, role: 'market', hr: Number.isFinite(beta) ? beta : Number.NaN }])
  }
  return { key: etf, weight, exposures: [l1, self, self], residualVar: 0 }
}

export function riskFigures(r: BookRisk | null) {
  const split = r ? layerSplit(r) : NULL_SPLIT
  return {
    volatility_ann: r ? annualVol(r.variance) : null,
    systematic_vol_ann: r ? annualVol(r.v[2]) : null,
    residual_vol_ann: r ? annualVol(r.d) : null,
    variance_decomposition: split,
  }
}

/** Sorts members by key so that two books holding the same names sum in the same order. */
export const byKey = (a: Member, b: Member) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0)

export function positionRow(store: ModelStore, p: Position, c: Contribution, standalone: number | null) {
  const h = p.holding
  const meta = store.symbols[h.index]
  const s = h.state
  return {
    ticker: p.ticker,
    symbol: p.symbol,
    name: meta?.name ?? p.symbol,
    sector: meta?.sector ?? null,
    asset_type: p.asset_type,
    weight: p.weight,
    shares: p.shares,
    price_close: p.price ?? num(s.price_close),
    market_value: p.shares !== null && p.price !== null ? p.shares * p.price : null,
    covered: h.covered,
    reason: h.reason,
    in_dataset: h.inDataset,
    risk_basis: h.basis,
    proxy: h.proxy,
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
    residual_vol_ann: h.basis !== 'none' ? annualVol(h.residualVar) : null,
    specific_shrinkage: h.basis === 'model' ? h.specificShrinkage : null,
    residual_vol_model_ann:
      h.basis === 'model' && s.vol_23d >= 0 && s.l3_res_er >= 0 ? s.vol_23d * Math.sqrt(s.l3_res_er) : null,
    standalone_vol_ann: standalone,
    risk_contribution: c,
  }
}

/**
 * Realised, out of sample: the book's daily return after holding each level's hedge from the
 * previous close (gross − market = the L1 residual, − sector = L2, − subsector = L3), its
 * annualised volatility and the share of the gross variance it removed over the lookback.
 */
export function hedgeEffectiveness(
  strips: Record<'gross' | 'market' | 'sector' | 'residual', Float64Array>,
  days: number,
) {
  const gross = sampleVariance(strips.gross, 0, days).variance
  const l1 = strips.gross.map((g, t) => g - strips.market[t])
  const l2 = l1.map((x, t) => x - strips.sector[t])
  const level = (r: Float64Array) => {
    const v = sampleVariance(r, 0, days).variance
    return { residual_vol_ann: annualVol(v), variance_reduction: gross > 0 && v >= 0 ? 1 - v / gross : null }
  }
  return { realized_vol_ann: annualVol(gross), L1: level(l1), L2: level(l2), L3: level(strips.residual) }
}

export function activeBlock(
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
      portfolio: p.h[2][j],
      benchmark: b.h[2][j],
      active: a.h[2][j],
    })),
  }
}

export function dominantDrivers(
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

export function concentration(
  store: ModelStore,
  positions: readonly Position[],
  residualShare: number | null,
  weightCovered: number,
) {
  // Gross weights: a short is as much a concentration as a long.
  const weights = positions.map((p) => Math.abs(p.weight))
  const sectorWeights: Record<string, number> = {}
  for (const p of positions) {
    const meta = store.symbols[p.holding.index]
    const s = meta?.asset_type === 'etf' ? 'ETF' : (meta?.sector ?? 'Unclassified')
    sectorWeights[s] = (sectorWeights[s] ?? 0) + Math.abs(p.weight)
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
    if (positions.length > 1 && w > 0.4 && s !== 'ETF') flags.push(`${s} is ${pct(w)} of the book (> 40%)`)
  if (residualShare !== null && residualShare > 0.5)
    flags.push(
      `stock-specific risk is ${pct(residualShare)} of the variance: ETF hedges remove less than half of it`,
    )
  if (weightCovered < 1 - 1e-12)
    flags.push(
      `the stock models and ETFs cover ${pct(weightCovered)} of the book's gross (the rest is proxied or left out)`,
    )
  return {
    effective_positions: effective,
    max_weight: maxWeight,
    top5_weight: top5,
    sector_weights: sectorWeights,
    flags,
  }
}

type Series = { dates: string[] } & Record<string, unknown>

export function snapshotTable(
  table: 'positions' | 'attribution' | 'time_behavior',
  positions: readonly ReturnType<typeof positionRow>[],
  a: Series & Record<'gross' | 'market' | 'sector' | 'subsector' | 'residual' | 'systematic', number[]>,
  tb: Series &
    Record<'cumulative_return' | 'drawdown', number[]> & {
      portfolio_return: (number | null)[]
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
