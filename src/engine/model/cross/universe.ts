/**
 * Monthly universes (docs/methodology.md §11): on the last trading day of each month, valid stocks are
 * ranked by market cap and by mean daily dollar volume; the ranking is the mask for every
 * trading day of the next month, and a stock is an active member on a day when it is inside the
 * mask and valid that day.
 *
 * Readings of the methodology, each deliberate:
 * - A month-end is a calendar day whose successor falls in another month (UTC month of the day
 *   number). The calendar's last day is never a month-end: whether the month goes on is unknown,
 *   and its ranking would apply to no day in the panel anyway. So appending days never changes a
 *   mask already computed (full and incremental builds agree).
 * - Days of the calendar's first month (before any month-end) have no mask: ranks 0, maskAsOf -1.
 * - "The next month" is the next one with trading days: a month-end's ranking applies up to the
 *   following month-end (real calendars have no empty month; gapped test calendars do).
 * - Ranked at a month-end e: stocks valid at e (a close and a non-null return) with a finite
 *   market cap (mc), or with at least one finite close × volume among the last 63 trading days
 *   (calendar entries) ending at e (dv; days before the data start simply do not exist, NaN days are skipped, the
 *   mean is over the remaining days). A zero-volume day counts as a dollar volume of 0.
 * - Order: value descending, ties by symbol index ascending (the lead passes symbols sorted by
 *   key, so index order is key order).
 * - Ranks are Int16; a rank beyond 32767 is stored as 32767 ("32767 or worse"). Universe sizes
 *   are at most 3000, so membership tests are unaffected.
 * - Without a volume panel every dv rank is 0 (no dollar-volume universes).
 * - The default universe follows the inputs (defaultUniverseBasis): `uni_mc_3000` when the dataset
 *   has market caps, else `uni_dv_3000` when it has dollar volume, else every valid stock.
 */
import type { Panel } from '../panel.ts'
import { orderBy } from './sort.ts'

export interface UniverseInput {
  /** Day numbers (days since 1970-01-01, UTC), ascending. */
  calendar: Int32Array
  /** Per symbol: 1 = stock, 0 = ETF (ETFs are never valid or ranked). */
  isStock: Uint8Array
  close: Panel
  returns: Panel
  marketCap: Panel
  volume: Panel | null
}

export interface Universes {
  /** Per symbol and day: market-cap rank from the previous month-end, 1 = largest, 0 = unranked. */
  mcRank: Int16Array[]
  /** Per symbol and day: dollar-volume rank from the previous month-end, 1 = largest, 0 = unranked. */
  dvRank: Int16Array[]
  /** Per day: day number of the month-end whose ranking applies, -1 before the first month-end. */
  maskAsOf: Int32Array
  /** Per symbol and day: 1 when a stock has a close and a non-null return. */
  valid: Uint8Array[]
}

export type UniverseKind = 'mc' | 'dv'

/** The default universe of a dataset with market caps (`uni_mc_3000`); see defaultUniverseBasis. */
const DEFAULT_UNIVERSE = { kind: 'mc', n: 3000 } as const satisfies { kind: UniverseKind; n: number }

/** Trading days over which the mean daily dollar volume is taken. */
export const DOLLAR_VOLUME_DAYS = 63
const MAX_RANK = 32767

/** Year × 12 + month (0-based) of a day number, UTC. */
function monthKey(day: number): number {
  const d = new Date(day * 86_400_000)
  return d.getUTCFullYear() * 12 + d.getUTCMonth()
}

/** Calendar indices of the month-ends (see the header for the rule), ascending. */
export function monthEnds(calendar: Int32Array): Int32Array {
  const out: number[] = []
  let key = calendar.length > 0 ? monthKey(calendar[0]) : 0
  for (let t = 0; t + 1 < calendar.length; t++) {
    const next = monthKey(calendar[t + 1])
    if (next !== key) out.push(t)
    key = next
  }
  return Int32Array.from(out)
}

function validity(x: UniverseInput, nDays: number): Uint8Array[] {
  return x.close.map((close, i) => {
    const v = new Uint8Array(nDays)
    if (!x.isStock[i]) return v
    const r = x.returns[i]
    for (let t = 0; t < nDays; t++) v[t] = Number.isNaN(close[t]) || Number.isNaN(r[t]) ? 0 : 1
    return v
  })
}

/** Mean of the finite close × volume over the 63 days ending at e; NaN without any. */
function meanDollarVolume(close: Float64Array, volume: Float64Array, e: number): number {
  let sum = 0
  let n = 0
  for (let d = Math.max(0, e - DOLLAR_VOLUME_DAYS + 1); d <= e; d++) {
    const dv = close[d] * volume[d]
    if (!Number.isNaN(dv)) {
      sum += dv
      n++
    }
  }
  return n > 0 ? sum / n : Number.NaN
}

/** Ranks per month-end (rank[m][i], 0 = unranked) of the non-NaN keys (key[m][i]). */
function rankMonths(keys: Float64Array[]): Int16Array[] {
  return keys.map((key) => {
    const members = new Int32Array(key.length)
    let n = 0
    for (let i = 0; i < key.length; i++) if (!Number.isNaN(key[i])) members[n++] = i
    const order = orderBy(key, members, n, true)
    const rank = new Int16Array(key.length)
    for (let r = 0; r < n; r++) rank[order[r]] = Math.min(r + 1, MAX_RANK)
    return rank
  })
}

/** Spreads each month-end's ranks over the trading days of the next month, symbol by symbol. */
function spread(monthRank: Int16Array[], ends: Int32Array, nDays: number, nSym: number): Int16Array[] {
  return Array.from({ length: nSym }, (_, i) => {
    const out = new Int16Array(nDays)
    for (let m = 0; m < ends.length; m++) {
      const r = monthRank[m][i]
      if (r === 0) continue
      const to = m + 1 < ends.length ? ends[m + 1] + 1 : nDays
      for (let d = ends[m] + 1; d < to; d++) out[d] = r
    }
    return out
  })
}

/** Per day: the day number of the month-end whose ranking applies, -1 before the first one. */
export function maskDates(calendar: Int32Array, ends: Int32Array = monthEnds(calendar)): Int32Array {
  const nDays = calendar.length
  const maskAsOf = new Int32Array(nDays).fill(-1)
  for (let m = 0; m < ends.length; m++) {
    maskAsOf.fill(calendar[ends[m]], ends[m] + 1, m + 1 < ends.length ? ends[m + 1] + 1 : nDays)
  }
  return maskAsOf
}

export function computeUniverses(x: UniverseInput): Universes {
  const nSym = x.isStock.length
  const nDays = x.calendar.length
  const valid = validity(x, nDays)
  const ends = monthEnds(x.calendar)
  const maskAsOf = maskDates(x.calendar, ends)
  // Ranking keys per month-end, gathered symbol by symbol so each symbol's series is read
  // sequentially (the 63-day dollar-volume windows of successive month-ends overlap).
  const capKey = Array.from(ends, () => new Float64Array(nSym).fill(Number.NaN))
  const dvKey = Array.from(ends, () => new Float64Array(nSym).fill(Number.NaN))
  for (let i = 0; i < nSym; i++) {
    if (!x.isStock[i]) continue
    const cap = x.marketCap[i]
    const volume = x.volume?.[i]
    for (let m = 0; m < ends.length; m++) {
      const e = ends[m]
      if (!valid[i][e]) continue
      if (Number.isFinite(cap[e])) capKey[m][i] = cap[e]
      if (volume) dvKey[m][i] = meanDollarVolume(x.close[i], volume, e)
    }
  }
  const mcRank = spread(rankMonths(capKey), ends, nDays, nSym)
  const dvRank = spread(rankMonths(dvKey), ends, nDays, nSym)
  return { mcRank, dvRank, maskAsOf, valid }
}

/** Whether symbol i is an active member of `uni_<kind>_<n>` at day t (mask AND validity). */
export function isActive(u: Universes, kind: UniverseKind, n: number, i: number, t: number): boolean {
  const r = (kind === 'mc' ? u.mcRank : u.dvRank)[i][t]
  return r >= 1 && r <= n && u.valid[i][t] === 1
}

/** Number of active members of `uni_<kind>_<n>` at day t. */
export function activeCount(u: Universes, kind: UniverseKind, n: number, t: number): number {
  let c = 0
  for (let i = 0; i < u.valid.length; i++) if (isActive(u, kind, n, i, t)) c++
  return c
}

/** Membership callback for the ranking, panel and reversion kernels (default: `uni_mc_3000`). */
export function activeMember(
  u: Universes,
  kind: UniverseKind = DEFAULT_UNIVERSE.kind,
  n: number = DEFAULT_UNIVERSE.n,
): (i: number, t: number) => boolean {
  const ranks = kind === 'mc' ? u.mcRank : u.dvRank
  return (i, t) => {
    const r = ranks[i][t]
    return r >= 1 && r <= n && u.valid[i][t] === 1
  }
}

/** How a build forms its default universe (docs/methodology.md §11) … */
export type UniverseBasis = 'market_cap' | 'dollar_volume' | 'all_valid'
/** … and weighs the industry panel (docs/methodology.md §12). */
export type WeightBasis = 'log_market_cap' | 'equal'
export type DefaultUniverseName = 'uni_mc_3000' | 'uni_dv_3000' | 'all_valid'

export interface DefaultUniverseBasis {
  universe_basis: UniverseBasis
  weight_basis: WeightBasis
  default_universe: DefaultUniverseName
}

const BASES: Record<UniverseBasis, DefaultUniverseBasis> = {
  market_cap: {
    universe_basis: 'market_cap',
    weight_basis: 'log_market_cap',
    default_universe: 'uni_mc_3000',
  },
  dollar_volume: { universe_basis: 'dollar_volume', weight_basis: 'equal', default_universe: 'uni_dv_3000' },
  all_valid: { universe_basis: 'all_valid', weight_basis: 'equal', default_universe: 'all_valid' },
}

function anyFinite(panel: Panel, isStock: Uint8Array, value: (i: number, t: number) => number): boolean {
  for (let i = 0; i < panel.length; i++) {
    if (!isStock[i]) continue
    const n = panel[i].length
    for (let t = 0; t < n; t++) if (Number.isFinite(value(i, t))) return true
  }
  return false
}

/**
 * The default universe's basis, decided once per build from the inputs: `market_cap` when any
 * stock has a finite market cap on any day, else `dollar_volume` when a volume panel gives any
 * stock a finite close × volume, else `all_valid`. The industry panel weighs by ln(1 + cap)
 * exactly when the basis is `market_cap`, else every member weighs 1.
 *
 * Market caps for only some stocks or days still make the basis `market_cap`: a stock without a
 * cap at a month-end is simply unranked for the next month (as uni_mc_N always treated it) and
 * left out of the panel, so the products never mix two bases. (A dataset whose caps stop before
 * the last month-end therefore has an empty default universe from then on.) Appending days can
 * only raise the basis, which is why an incremental build checks it (confirmIncremental).
 */
export function defaultUniverseBasis(
  x: Pick<UniverseInput, 'isStock' | 'close' | 'marketCap' | 'volume'>,
): DefaultUniverseBasis {
  if (anyFinite(x.marketCap, x.isStock, (i, t) => x.marketCap[i][t])) return BASES.market_cap
  const volume = x.volume
  if (volume && anyFinite(volume, x.isStock, (i, t) => x.close[i][t] * volume[i][t]))
    return BASES.dollar_volume
  return BASES.all_valid
}

/**
 * Membership callback of the default universe for a basis: `uni_mc_3000` / `uni_dv_3000`
 * (activeMember), or for `all_valid` every valid stock (no monthly mask, so also before the
 * first month-end).
 */
export function defaultMember(u: Universes, basis: UniverseBasis): (i: number, t: number) => boolean {
  if (basis === 'market_cap') return activeMember(u, 'mc', DEFAULT_UNIVERSE.n)
  if (basis === 'dollar_volume') return activeMember(u, 'dv', DEFAULT_UNIVERSE.n)
  return (i, t) => u.valid[i][t] === 1
}
