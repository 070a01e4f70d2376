import { isoFromDay } from '../../../platform/dates.ts'
import type { Rng } from '../../model/random.ts'
import { ETF_INFO } from '../etf-registry.ts'
import type { SecurityRow } from '../format.ts'
import { INDUSTRIES, SECTORS } from './industries.ts'
import { LARGE_CAPS, MAG7_COUNT } from './large-caps.ts'

/**
 * The synthetic companies and their life cycles: listing (at the start or by IPO), delisting,
 * trading halts, ticker changes and ticker reuse. Day fields are calendar indices.
 */
export interface Company {
  symbol: string
  name: string
  cik: number
  industry: number
  sector: number
  listIdx: number
  /** Last day with a price (inclusive). */
  delistIdx: number
  /** Ticker windows in order: [ticker, first index]. */
  tickers: [string, number][]
  /** Halted day indices (no price). */
  halts: Set<number>
  // generative parameters
  betaM: number
  betaS: number
  betaU: number
  idioSd: number
  drift: number
  cap0: number
  price0: number
  divYield: number
  turnover: number
  earningsPhase: number
  /** Fiscal year-end month (1..12). */
  fyEnd: number
  /** This company's last ticker was already handed to a later listing. */
  reusedBy?: boolean
}

const SYLLABLES = [
  'al',
  'bra',
  'cor',
  'dyn',
  'el',
  'fin',
  'gen',
  'hal',
  'ion',
  'jet',
  'kin',
  'lum',
  'mar',
  'nov',
  'or',
  'pax',
  'quo',
  'ra',
  'sol',
  'tek',
  'ul',
  'vex',
  'wy',
  'xen',
  'yor',
  'zen',
]
const SUFFIXES = [
  'Inc.',
  'Corp.',
  'Holdings Inc.',
  'Group Inc.',
  'Co.',
  'Technologies Inc.',
  'Partners L.P.',
  'plc',
]

function companyName(rng: Rng): string {
  const n = rng.int(2, 3)
  let w = ''
  for (let i = 0; i < n; i++) w += rng.pick(SYLLABLES)
  return `${w[0].toUpperCase()}${w.slice(1)} ${rng.pick(SUFFIXES)}`
}

function newTicker(rng: Rng, taken: Set<string>): string {
  for (;;) {
    const len = rng.int(2, 4)
    let t = ''
    for (let i = 0; i < len; i++) t += String.fromCharCode(65 + rng.int(0, 25))
    if (!taken.has(t)) {
      taken.add(t)
      return t
    }
  }
}

function pickIndustry(rng: Rng, cumulative: number[]): number {
  const u = rng.uniform() * cumulative[cumulative.length - 1]
  let i = 0
  while (cumulative[i] <= u) i++
  return i
}

export function buildUniverse(rng: Rng, stocks: number, calendar: Int32Array): Company[] {
  const days = calendar.length
  const cumulative: number[] = []
  let acc = 0
  for (const d of INDUSTRIES) {
    acc += d.weight
    cumulative.push(acc)
  }
  const taken = new Set<string>([...Object.keys(ETF_INFO), 'VIX'])
  const nDelist = Math.round(0.1 * stocks)
  const nInitial = Math.round(0.9 * stocks)
  const total = stocks + nDelist
  const minLife = Math.min(300, Math.floor(days / 3))
  const companies: Company[] = []
  for (let i = 0; i < total; i++) {
    const industry = pickIndustry(rng, cumulative)
    const listIdx = i < nInitial ? 0 : rng.int(40, Math.max(41, days - minLife))
    const ticker = newTicker(rng, taken)
    const financial =
      INDUSTRIES[industry].sector === 'Financials' || INDUSTRIES[industry].sector === 'Real Estate'
    companies.push({
      symbol: ticker,
      name: companyName(rng),
      cik: 9_000_001 + i,
      industry,
      sector: SECTORS.indexOf(INDUSTRIES[industry].sector),
      listIdx,
      delistIdx: days - 1,
      tickers: [[ticker, listIdx]],
      halts: new Set(),
      betaM: clamp(1 + 0.3 * rng.normal(), 0.25, 2.2),
      betaS: clamp(1 + 0.35 * rng.normal(), -0.2, 2.5),
      betaU: clamp(1 + 0.4 * rng.normal(), -0.3, 2.8),
      idioSd: rng.logNormal(financial ? 0.012 : 0.017, 0.35),
      drift: 0.00005 + 0.0002 * rng.normal(),
      cap0: rng.logNormal(1.5e9, 1.6),
      price0: rng.logNormal(35, 0.8),
      divYield: rng.chance(financial ? 0.7 : 0.35) ? rng.logNormal(0.025, 0.4) : 0,
      turnover: rng.logNormal(0.007, 0.5),
      earningsPhase: rng.int(0, 62),
      fyEnd: rng.chance(0.8) ? 12 : rng.pick([3, 6, 9]),
      reusedBy: false,
    })
  }
  assignDelistings(rng, companies, nDelist, calendar, minLife)
  assignHaltsAndRenames(rng, companies, taken)
  const named = nameLargestCompanies(companies, days)
  freeLargeCapTickers(rng, companies, named, taken)
  return companies
}

/**
 * Gives the well-known large caps (large-caps.ts, in their order) to the largest synthetic
 * companies of their sector by generated market cap, so the demo answers for AAPL, MSFT …; the
 * company keeps its sector and takes the real sub-industry. Only companies listed for the whole
 * calendar under one ticker qualify, and at most half of a sector's are named, so smaller
 * companies keep generated symbols. The seven of `mag7` are placed even when their sector is
 * full or empty (taking the largest unnamed company of any sector). Draws nothing: the random
 * streams are those of a market without names.
 */
function nameLargestCompanies(companies: Company[], days: number): Set<Company> {
  // Generated size at the end of the calendar, before the noise: start cap grown at its drift.
  const size = (c: Company) => Math.log(c.cap0) + c.drift * (days - 1)
  const byCap = companies
    .filter((c) => c.listIdx === 0 && c.delistIdx === days - 1 && c.tickers.length === 1)
    .sort((a, b) => size(b) - size(a) || a.cik - b.cik)
  const room = SECTORS.map((_, s) => Math.floor(byCap.filter((c) => c.sector === s).length / 2))
  const named = new Set<Company>()
  LARGE_CAPS.forEach(([ticker, name, sector, industry], k) => {
    const s = SECTORS.indexOf(sector)
    const j = INDUSTRIES.findIndex((d) => d.sector === sector && d.industry === industry)
    if (s < 0 || j < 0) throw new Error(`large-caps.ts: ${ticker} has no industry ${sector} / ${industry}`)
    const c =
      (room[s] > 0 ? byCap.find((x) => x.sector === s && !named.has(x)) : undefined) ??
      (k < MAG7_COUNT ? byCap.find((x) => !named.has(x)) : undefined)
    if (!c) return
    named.add(c)
    room[c.sector]--
    c.symbol = ticker
    c.tickers = [[ticker, 0]]
    c.name = name
    c.sector = s
    c.industry = j
    // Idiosyncratic volatility falls with size; a mega cap's is about 60 % of the median's.
    c.idioSd *= 0.6
  })
  return named
}

/**
 * A generated ticker that happens to be a large cap's (KO, GE …) is replaced everywhere it
 * occurs, ticker reuse included, whether or not that large cap was placed: a random company is
 * never listed under a famous ticker. Runs after every other draw of the universe, so the rest
 * of the market is what it would be without names.
 */
function freeLargeCapTickers(rng: Rng, companies: Company[], named: Set<Company>, taken: Set<string>): void {
  const reserved = new Set(LARGE_CAPS.map((r) => r[0]))
  for (const t of reserved) taken.add(t)
  const replaced = new Map<string, string>()
  for (const c of companies) {
    if (named.has(c)) continue
    for (const w of c.tickers) {
      const old = w[0]
      if (!reserved.has(old)) continue
      const next = replaced.get(old) ?? newTicker(rng, taken)
      replaced.set(old, next)
      if (c.symbol === old || c.symbol.startsWith(`${old}_`)) c.symbol = next + c.symbol.slice(old.length)
      w[0] = next
    }
  }
}

function assignDelistings(
  rng: Rng,
  companies: Company[],
  nDelist: number,
  calendar: Int32Array,
  minLife: number,
): void {
  const days = calendar.length
  let assigned = 0
  for (let guard = 0; assigned < nDelist && guard < nDelist * 50; guard++) {
    const c = companies[rng.int(0, companies.length - 1)]
    if (c.delistIdx !== days - 1 || days - 1 - c.listIdx < 2 * minLife) continue
    c.delistIdx = rng.int(c.listIdx + minLife, days - 2)
    assigned++
  }
  // Ticker reuse: some later IPOs take the ticker of a company delisted before they list.
  const delisted = companies.filter((c) => c.delistIdx < days - 1)
  for (const c of companies) {
    if (c.listIdx === 0 || !rng.chance(0.25)) continue
    const donor = delisted.find((d) => d.delistIdx + 20 < c.listIdx && !d.reusedBy)
    if (!donor) continue
    donor.reusedBy = true
    const old = donor.tickers[donor.tickers.length - 1][0]
    c.tickers = [[old, c.listIdx]]
    // The symbol key must differ from the earlier holder's: ticker plus listing date.
    c.symbol = `${old}_${isoFromDay(calendar[c.listIdx]).replaceAll('-', '')}`
  }
}

function assignHaltsAndRenames(rng: Rng, companies: Company[], taken: Set<string>): void {
  for (const c of companies) {
    const life = c.delistIdx - c.listIdx
    if (rng.chance(0.15) && life > 60) {
      const n = rng.int(1, 3)
      for (let k = 0; k < n; k++) {
        const from = rng.int(c.listIdx + 5, c.delistIdx - 5)
        const len = rng.int(1, 5)
        for (let d = from; d < Math.min(from + len, c.delistIdx); d++) c.halts.add(d)
      }
    }
    if (rng.chance(0.03) && life > 400) {
      const at = rng.int(c.listIdx + 200, c.delistIdx - 100)
      c.tickers.push([newTicker(rng, taken), at])
    }
  }
}

/** Security rows: one validity window per ticker of each company. */
export function companySecurities(c: Company, calendar: Int32Array): SecurityRow[] {
  const ind = INDUSTRIES[c.industry]
  return c.tickers.map(([ticker, from], k) => {
    const next = c.tickers[k + 1]
    const toIdx = next ? next[1] - 1 : c.delistIdx
    return {
      symbol: c.symbol,
      ticker,
      name: c.name,
      assetType: 'stock',
      sector: ind.sector,
      industry: ind.industry,
      cik: c.cik,
      validFrom: isoFromDay(calendar[from]),
      validTo: toIdx === calendar.length - 1 ? null : isoFromDay(calendar[toIdx]),
    }
  })
}

function clamp(x: number, lo: number, hi: number): number {
  return Math.min(hi, Math.max(lo, x))
}
