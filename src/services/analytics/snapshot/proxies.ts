import { MARKET_ETF, SECTOR_ETFS } from '../../../engine/data/etf-registry.ts'
import { type SpecificOptions, specificVariance } from '../../../engine/model/risk-forecast/specific.ts'
import type { ModelStore } from '../../../engine/model-store/reader.ts'
import { emptyState, etfRole, type Holding, type Leg } from './holdings.ts'

/**
 * Positions without a stock model of their own (docs/methodology.md §13 "Portfolio risk"):
 * an ETF held as a position, whose risk is its own factor exposure, and a stock without a model
 * at as_of (delisted, too short a history), proxied by its sector ETF plus the median specific
 * variance of its sector peers at as_of. Their legs to the market ETF carry the ETF's market beta,
 * known only once the covariance is: they are returned as pending and settled by settleBetas.
 */

/** A leg whose HR is the market beta of `etf` (lookback covariance with the market ETF over its variance). */
export interface PendingBeta {
  leg: Leg
  etf: string
}

/**
 * The legs of a holding that is exposure 1 to `etf`: the market ETF is itself at every level; a
 * sector ETF is its market beta at level 1 and itself at levels 2 and 3; any other ETF (a
 * subsector or style ETF) is its market beta at levels 1 and 2 and itself at level 3.
 */
function etfLegs(etf: string, pending: PendingBeta[]): [Leg[], Leg[], Leg[]] {
  const role = etfRole(etf)
  const self: Leg[] = [{ etf, role, hr: 1 }]
  if (role === 'market') return [self, self, self]
  const beta: Leg = { etf: MARKET_ETF, role: 'market', hr: Number.NaN }
  pending.push({ leg: beta, etf })
  return role === 'sector' ? [[beta], self, self] : [[beta], [beta], self]
}

/**
 * An ETF held as a position. Its daily return is attributed like its exposure: the market ETF
 * all to market; a sector ETF β·r_market to market and the rest to sector; another ETF β·r_market
 * to market and the rest to subsector (filled in by settleBetas); no residual.
 */
export async function loadEtfHolding(
  store: ModelStore,
  index: number,
  from: number,
  T: number,
  pending: PendingBeta[],
): Promise<Holding> {
  const etf = store.symbols[index]?.symbol as string
  const h = await store.history(index, ['returns_gross', 'price_close'], from, T + 1)
  const days = T - from + 1
  const returns = Float64Array.from(h.returns_gross as ArrayLike<number>)
  const state = emptyState()
  state.price_close = (h.price_close as ArrayLike<number>)[days - 1] as number
  const role = etfRole(etf)
  const zeros = () => new Float64Array(days)
  const n = returns.reduce((a, r) => a + (Number.isNaN(r) ? 0 : 1), 0)
  const legs = etfLegs(etf, pending)
  return {
    index,
    state,
    series: {
      returns_gross: returns,
      l1_fr: role === 'market' ? returns : zeros(),
      l2_fr: zeros(),
      l3_fr: zeros(),
      l1_rr: zeros(),
      l2_rr: zeros(),
      l3_rr: zeros(),
    },
    level: 3,
    legs,
    recommended: legs[2],
    sectorEtf: role === 'sector' ? etf : null,
    subsectorEtf: role === 'subsector' ? etf : null,
    residualVar: 0,
    residualDays: n,
    specificShrinkage: 0,
    covered: true,
    reason: null,
    basis: 'etf',
    proxy: null,
    inDataset: true,
    requestedProxy: null,
  }
}

/** Median specific variance of a sector's stocks at T (stock_var × l3_res_er), computed once per request. */
export class PeerRisk {
  private rows: Promise<{ sector: ArrayLike<number>; variance: Float64Array }> | null = null
  private readonly memo = new Map<string, { variance: number; peers: number }>()
  constructor(
    private readonly store: ModelStore,
    private readonly T: number,
  ) {}

  private load() {
    this.rows ??= Promise.all([
      this.store.crossSection('sector_etf', this.T),
      this.store.crossSection('stock_var', this.T),
      this.store.crossSection('l3_res_er', this.T),
    ]).then(([sector, v, er]) => ({
      sector,
      variance: Float64Array.from(v, (x, i) => x * (er[i] as number)),
    }))
    return this.rows
  }

  /** The median over the stocks whose sector ETF at T is `etf` (every stock when `etf` is null). */
  async of(etf: string | null): Promise<{ variance: number; peers: number }> {
    const key = etf ?? '*'
    const known = this.memo.get(key)
    if (known) return known
    const { sector, variance } = await this.load()
    const code = etf === null ? -1 : this.store.etfs.indexOf(etf)
    const xs: number[] = []
    for (let i = 0; i < variance.length; i++) {
      const v = variance[i] as number
      if (!(v >= 0) || this.store.symbols[i]?.asset_type !== 'stock') continue
      if (etf === null || sector[i] === code) xs.push(v)
    }
    xs.sort((a, b) => a - b)
    const mid = xs.length >> 1
    const median =
      xs.length === 0
        ? Number.NaN
        : xs.length % 2
          ? (xs[mid] as number)
          : ((xs[mid - 1] as number) + (xs[mid] as number)) / 2
    const out = { variance: median, peers: xs.length }
    this.memo.set(key, out)
    return out
  }
}

/**
 * Under an exponentially weighted estimator: each stock with its own model gets as specific
 * variance `specificVariance` of its deepest level's residual over the last `maxDays` lookback
 * days, with the peer prior (its sector's median above; every stock's without a sector) read
 * only for a history shorter than `o.fullDays`. Where that has no value (under two residual
 * returns in those days and no peers) the sample variance stays.
 */
export async function weightSpecificRisk(
  holdings: Iterable<Holding>,
  peers: PeerRisk,
  o: SpecificOptions,
  maxDays: number,
): Promise<void> {
  for (const h of holdings) {
    if (h.basis !== 'model' || h.level === null) continue
    const res = h.series[`l${h.level}_rr`]
    const from = Math.max(0, res.length - maxDays)
    const own = specificVariance(res, from, res.length, Number.NaN, o)
    const prior = own.n < o.fullDays ? (await peers.of(h.sectorEtf)).variance : Number.NaN
    const s = Number.isNaN(prior) ? own : specificVariance(res, from, res.length, prior, o)
    if (Number.isNaN(s.variance)) continue
    h.residualVar = s.variance
    h.specificShrinkage = s.shrinkage
  }
}

/**
 * Turns an uncovered stock into a proxy: exposure 1 to its sector ETF (its sector at as_of, else
 * its classification's), or to the market ETF when it has none, with the median specific
 * variance of that sector's stocks at as_of. Its own daily series stay (the attribution is
 * realised). Without peers it stays out of the risk figures. A ticker the dataset does not know
 * is exposure 1 to the proxy ETF the request gave (else the market ETF), with the median of that
 * ETF's sector stocks when it is a sector ETF with any, else of every stock.
 */
export async function proxyHolding(
  store: ModelStore,
  h: Holding,
  peers: PeerRisk,
  pending: PendingBeta[],
): Promise<void> {
  const given = h.requestedProxy
  const sector = store.symbols[h.index]?.sector
  const candidate = given ?? h.sectorEtf ?? (sector ? (SECTOR_ETFS[sector] ?? null) : null)
  const etf = candidate !== null && store.resolve(candidate) >= 0 ? candidate : null
  // Peers: the sector of a sector ETF (a given one only if it has stocks), else every stock.
  const sectorOf = given === null ? etf : etfRole(given) === 'sector' ? given : null
  let peer = await peers.of(sectorOf)
  let peersOf = sectorOf
  if (given !== null && sectorOf !== null && !(peer.peers > 0 && peer.variance >= 0)) {
    peer = await peers.of(null)
    peersOf = null
  }
  if (!(peer.variance >= 0) || peer.peers === 0) return
  h.legs = etfLegs(etf ?? MARKET_ETF, pending)
  h.recommended = []
  h.residualVar = peer.variance
  h.basis = 'proxy'
  h.proxy = { etf: etf ?? MARKET_ETF, peers: peer.peers, peers_of: peersOf, given: given !== null }
}

/**
 * Fills every pending market beta from the covariance (NaN when the ETF's covariance is not
 * usable; the risk figures are then null anyway), and the ETF positions' attribution series.
 */
export function settleBetas(
  pending: readonly PendingBeta[],
  beta: (etf: string) => number,
  etfHoldings: readonly Holding[],
  marketReturns: ArrayLike<number> | null,
  etfOfHolding: (h: Holding) => string,
): void {
  for (const p of pending) p.leg.hr = beta(p.etf)
  for (const h of etfHoldings) {
    const etf = etfOfHolding(h)
    const role = etfRole(etf)
    if (role === 'market') continue
    const b = beta(etf)
    const s = h.series
    for (let t = 0; t < s.returns_gross.length; t++) {
      const m = marketReturns ? (marketReturns[t] as number) : Number.NaN
      const market = Number.isFinite(b) ? b * m : Number.NaN
      s.l1_fr[t] = market
      const rest = (s.returns_gross[t] as number) - market
      if (role === 'sector') s.l2_fr[t] = rest
      else s.l3_fr[t] = rest
    }
  }
}
