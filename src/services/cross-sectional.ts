import type { Static } from 'typebox'
import type { getUniverseMembers as universeMembersOp } from '../contract/ops/cross.ts'
import { MARKET_ETF } from '../data/etf-registry.ts'
import { DEFAULT_MIN_PEERS, type PanelLevel } from '../model/cross/index.ts'
import { isoFromDay } from '../platform/dates.ts'
import { AppError } from '../platform/errors.ts'
import type { ModelStore } from '../store/model-store/reader.ts'
import { L3_FACTORS, type ModelEnvironment, type ModelRegistry, universeBasisOf } from './models.ts'
import { etfOf, type Num, num, rowsTable } from './series.ts'
import { resolveTicker } from './tickers.ts'
import { dayConfidence, resolveTeo, teoNote, tickerAt } from './trading-day.ts'

/**
 * The cross-sectional endpoints served from stored per-day products (METHODOLOGY §9–§10): the
 * industry panel, universe membership, the market and sector ETF factor returns and the
 * residual-reversion basket. Rankings live in rankings.ts (they are computed on request for
 * days other than data_as_of).
 */

/** How the build chose the default universe and the industry-panel weights (METHODOLOGY §9). */
export const basesOf = universeBasisOf

// ---------------------------------------------------------------------------------------------
// Industry panel

/** `Application Software` → `application_software`: the stable identifier of an industry. */
export function industryId(name: string): string {
  return name
    .toLowerCase()
    .replace(/&/g, ' and ')
    .replace(/[^a-z0-9]+/g, '_')
    .replace(/^_+|_+$/g, '')
}

/** The ETFs an industry's members are assigned on day t: the most common among them. */
async function industryEtfs(
  store: ModelStore,
  t: number,
): Promise<Map<string, { sector: number; subsector: number }>> {
  const [sec, sub] = await Promise.all([
    store.crossSection('sector_etf', t),
    store.crossSection('subsector_etf', t),
  ])
  const tally = new Map<string, { sector: Map<number, number>; subsector: Map<number, number> }>()
  store.symbols.forEach((s, i) => {
    if (s.asset_type !== 'stock' || s.industry === null) return
    const e = tally.get(s.industry) ?? { sector: new Map(), subsector: new Map() }
    tally.set(s.industry, e)
    if (sec[i] >= 0) e.sector.set(sec[i], (e.sector.get(sec[i]) ?? 0) + 1)
    if (sub[i] >= 0) e.subsector.set(sub[i], (e.subsector.get(sub[i]) ?? 0) + 1)
  })
  const top = (m: Map<number, number>) => {
    let best = -1
    let n = 0
    for (const [k, c] of m) if (c > n || (c === n && k < best)) [best, n] = [k, c]
    return best
  }
  const out = new Map<string, { sector: number; subsector: number }>()
  for (const [ind, e] of tally) out.set(ind, { sector: top(e.sector), subsector: top(e.subsector) })
  return out
}

export interface IndustryRow {
  industry: string
  industry_name: string
  level: PanelLevel
  beta_mean: Num
  beta_variance: Num
  n_companies: number
  total_log_mcap_weight: Num
  sector_etf: string | null
  subsector_etf: string | null
}

/** GET /industry-panel. */
export async function getIndustryPanel(
  models: ModelRegistry,
  env: ModelEnvironment,
  q: { level?: PanelLevel; teo?: string; min_peers?: number },
) {
  const store = models.store(env)
  const x = resolveTeo(store, q.teo)
  const minPeers = q.min_peers ?? DEFAULT_MIN_PEERS
  const levels: PanelLevel[] = q.level ? [q.level] : ['market', 'sector', 'subsector']
  const etfs = await industryEtfs(store, x.t)
  const rows: IndustryRow[] = []
  for (const level of levels) {
    const base = `products/industry_panel/${level}`
    const [mean, variance, weight, count] = await Promise.all([
      store.readRow(`${base}/beta_mean`, x.t),
      store.readRow(`${base}/beta_variance`, x.t),
      store.readRow(`${base}/total_log_mcap_weight`, x.t),
      store.readRow(`${base}/n_companies`, x.t),
    ])
    store.industries.forEach((name, g) => {
      const n = count[g]
      if (!(n >= minPeers) || n === 0) return
      const e = etfs.get(name)
      rows.push({
        industry: industryId(name),
        industry_name: name,
        level,
        beta_mean: num(mean[g]),
        beta_variance: num(variance[g]),
        n_companies: n,
        total_log_mcap_weight: num(weight[g]),
        sector_etf: e ? etfOf(store, e.sector) : null,
        subsector_etf: e ? etfOf(store, e.subsector) : null,
      })
    })
  }
  const bases = basesOf(store)
  const body = {
    teo: x.teo,
    ...teoNote(x),
    level: q.level ?? null,
    min_peers: minPeers,
    weight_basis: bases.weight_basis,
    universe_basis: bases.universe_basis,
    industries: rows,
    _metadata: models.metadata(store, [x.teo, x.teo]),
  }
  const table = () =>
    rowsTable(
      rows,
      {
        industry: 'text',
        industry_name: 'text',
        level: 'text',
        beta_mean: 'double',
        beta_variance: 'double',
        n_companies: 'int',
        total_log_mcap_weight: 'double',
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
    filename: `industry-panel_${q.level ?? 'all'}_${x.teo}`,
  }
}

// ---------------------------------------------------------------------------------------------
// Universe members

/** The universes the contract accepts (uni_mc_N, uni_dv_N). */
export type UniverseName = Static<typeof universeMembersOp.params>['universe']

const dollarVolume = new WeakMap<ModelStore, boolean>()

/**
 * Whether the store has dollar-volume universes: a dataset without volume leaves every dv rank 0.
 * Judged on the last day with a monthly mask (any dv rank there), once per store.
 */
async function hasDollarVolume(store: ModelStore): Promise<boolean> {
  const known = dollarVolume.get(store)
  if (known !== undefined) return known
  const maskAsOf = await store.readArray1D('universe/mask_as_of')
  let t = store.calendar.length - 1
  while (t >= 0 && maskAsOf[t] < 0) t--
  let has = false
  if (t >= 0) {
    const dv = await store.readRow('universe/dv_rank', t)
    for (let i = 0; i < dv.length && !has; i++) has = dv[i] > 0
  }
  dollarVolume.set(store, has)
  return has
}

export interface MemberRow {
  ticker: string
  symbol: string
  rank: number
  active: boolean
}

/** GET /universe/{universe}/members. */
export async function getUniverseMembers(
  models: ModelRegistry,
  env: ModelEnvironment,
  universe: UniverseName,
  teo?: string,
) {
  const store = models.store(env)
  const x = resolveTeo(store, teo)
  const [, kind, size] = universe.split('_') as [string, 'mc' | 'dv', string]
  const n = Number(size)
  if (kind === 'dv' && !(await hasDollarVolume(store))) {
    throw new AppError(
      'INVALID_INPUT',
      `${universe} is ranked by dollar volume (close × volume), and this dataset has no volume: ` +
        'import a volume column to get dollar-volume universes (uni_mc_* need market caps)',
    )
  }
  if (kind === 'mc' && basesOf(store).universe_basis !== 'market_cap') {
    throw new AppError(
      'INVALID_INPUT',
      `${universe} is ranked by market cap, and this dataset has no market caps (no shares outstanding): ` +
        'use the uni_dv_* universes or import shares outstanding',
    )
  }
  const [ranks, valid, maskAsOf] = await Promise.all([
    store.readRow(`universe/${kind}_rank`, x.t),
    store.readRow('universe/valid', x.t),
    store.readArray1D('universe/mask_as_of'),
  ])
  const maskDay = maskAsOf[x.t]
  const day = store.calendar[x.t]
  const members: MemberRow[] = []
  for (let i = 0; i < ranks.length; i++) {
    const r = ranks[i]
    if (r < 1 || r > n) continue
    members.push({
      ticker: tickerAt(store, i, day),
      symbol: store.symbols[i].symbol,
      rank: r,
      active: valid[i] === 1,
    })
  }
  members.sort((a, b) => a.rank - b.rank)
  const active = members.reduce((c, m) => c + (m.active ? 1 : 0), 0)
  const body = {
    universe,
    teo: x.teo,
    ...teoNote(x),
    mask_as_of: maskDay >= 0 ? isoFromDay(maskDay) : null,
    basis: kind === 'mc' ? 'market_cap' : 'dollar_volume',
    counts: { mask: members.length, active },
    members,
    _metadata: models.metadata(store, [x.teo, x.teo]),
  }
  const table = () => rowsTable(members, { ticker: 'text', symbol: 'text', rank: 'int', active: 'bool' })
  return {
    body,
    store,
    confidence: dayConfidence(store, x, maskDay >= 0 ? 1 : 0),
    table,
    filename: `universe_${universe}_${x.teo}`,
  }
}

// ---------------------------------------------------------------------------------------------
// ETF factor returns

/** The market ETF and the 11 sector ETFs, the only tickers /etf/factor-returns serves (spec §7). */
export const FACTOR_ETFS = L3_FACTORS

/** `SPY,XLK` / repeated values → distinct upper-cased tickers in the order asked (default all 12). */
export function factorEtfList(raw: string | string[] | undefined): string[] {
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
export function compounded(returns: ArrayLike<number>, t: number, days: number): Num {
  if (t - days + 1 < 0) return null
  let g = 1
  for (let d = t - days + 1; d <= t; d++) {
    const r = returns[d]
    if (Number.isNaN(r)) return null
    g *= 1 + r
  }
  return g - 1
}

export interface FactorReturnRow {
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

// ---------------------------------------------------------------------------------------------
// Residual-reversion basket

export const MAX_BASKET = 500

export interface BasketRequest {
  tickers?: string[]
  positions?: { ticker: string; weight: number }[]
  signal_quality_min_quintile?: number
  teo?: string
}

export interface BasketRow {
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
    universe_basis: basesOf(store).universe_basis,
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
