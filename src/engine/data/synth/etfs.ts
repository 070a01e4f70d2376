import { parseIsoDay } from '../../../platform/dates.ts'
import { ETF_INFO, MACRO_FACTORS, MARKET_ETF, SECTOR_ETFS, STYLE_FACTORS } from '../etf-registry.ts'
import { INDUSTRIES, SECTORS, SUBSECTOR_ETFS } from './industries.ts'
import type { MemberEtf } from './truth.ts'

export interface EtfDef extends MemberEtf {
  ticker: string
  /** First calendar index with a price (0 when it predates the calendar). */
  inceptionIdx: number
}

/** Index of the first trading day on or after the ETF's inception; -1 when after the calendar. */
export function inceptionIndex(ticker: string, calendar: Int32Array): number {
  const day = parseIsoDay(ETF_INFO[ticker]?.inception ?? '1900-01-01') ?? 0
  for (let t = 0; t < calendar.length; t++) if (calendar[t] >= day) return t
  return -1
}

/**
 * The member-built ETFs in truth order: market, the 11 sectors, then every subsector ETF.
 * They are always all present (an ETF incepting after the end has inceptionIdx = days and no
 * prices) so indices stay fixed.
 */
export function memberEtfs(calendar: Int32Array): EtfDef[] {
  const all = INDUSTRIES.map((_, j) => j)
  const at = (t: string) => {
    const i = inceptionIndex(t, calendar)
    return i < 0 ? calendar.length : i
  }
  const out: EtfDef[] = [
    { ticker: MARKET_ETF, industries: all, sector: -1, te: 0.00015, inceptionIdx: at(MARKET_ETF) },
  ]
  SECTORS.forEach((name, k) => {
    out.push({
      ticker: SECTOR_ETFS[name],
      industries: all.filter((j) => INDUSTRIES[j].sector === name),
      sector: k,
      te: 0.0003,
      inceptionIdx: at(SECTOR_ETFS[name]),
    })
  })
  for (const etf of SUBSECTOR_ETFS) {
    const industries = all.filter((j) => INDUSTRIES[j].etf === etf)
    out.push({
      ticker: etf,
      industries,
      sector: SECTORS.indexOf(INDUSTRIES[industries[0]].sector),
      te: 0.0008,
      inceptionIdx: at(etf),
    })
  }
  return out
}

export type StyleRule = 'momentum' | 'quality' | 'low_vol' | 'value' | 'growth' | 'size' | 'dividend' | 'moat'

export const STYLE_ETFS: { ticker: string; rule: StyleRule }[] = Object.entries(STYLE_FACTORS).map(
  ([rule, ticker]) => ({
    ticker,
    rule: rule as StyleRule,
  }),
)

/** Macro proxies: market beta, own volatility and daily drift (VXX's roll decay, for one). */
export const MACRO_ETFS: { ticker: string; beta: number; sd: number; drift: number }[] = [
  { ticker: 'TIP', beta: 0.03, sd: 0.003, drift: 0.0001 },
  { ticker: 'VGIT', beta: -0.06, sd: 0.0035, drift: 0.0001 },
  { ticker: 'BIL', beta: 0, sd: 0.00004, drift: 0 },
  { ticker: 'HYG', beta: 0.3, sd: 0.003, drift: 0.0001 },
  { ticker: 'USO', beta: 0.5, sd: 0.02, drift: -0.0002 },
  { ticker: 'GLD', beta: 0.02, sd: 0.009, drift: 0.0002 },
  { ticker: 'UUP', beta: -0.08, sd: 0.0045, drift: 0 },
  { ticker: 'VXX', beta: -3.2, sd: 0.025, drift: -0.0025 },
  { ticker: 'BITO', beta: 1.2, sd: 0.035, drift: 0.0005 },
]

/** Macro factor names whose proxy is an index level (kept in the series table). */
export const INDEX_SERIES = Object.values(MACRO_FACTORS)
  .filter((m) => m.kind === 'index')
  .map((m) => m.ticker)
