/**
 * The macro and style factors of docs/methodology.md §13 as one table: a stable key per factor, its
 * proxy (the dataset registry's ETF or index series) and the names users may call it by. The
 * proxies themselves come from MACRO_FACTORS and STYLE_FACTORS, which also drive the dataset's
 * factor registry (factors.csv).
 */
import { AppError } from '../../platform/errors.ts'
import { MACRO_FACTORS, STYLE_FACTORS } from './etf-registry.ts'

type FactorGroup = 'macro' | 'style'

export interface FactorDef {
  /** The factor's key in the store and the API. */
  key: string
  group: FactorGroup
  /** The proxy: an ETF ticker (kind etf) or the name of an index-level series (kind index). */
  ticker: string
  kind: 'etf' | 'index'
  /** The factor's code in the dataset registry (factors.csv). */
  code: string
}

/**
 * A registry code naming an index level whose factor is the level's daily change. The VIX factor
 * `vix_spot` is the change of the VIX level in index points, level(t) − level(t−1), not a
 * percentage return: the level is already a volatility in percent, so its change is what moves
 * with equity returns.
 */
const LEVEL_CHANGE_KEYS: Readonly<Record<string, string>> = { vix: 'vix_spot' }

/** The 18 factors, macro then style, in the order of the store's factor columns. */
export const FACTORS: readonly FactorDef[] = [
  ...Object.entries(MACRO_FACTORS).map(([code, m]) => ({
    key: LEVEL_CHANGE_KEYS[code] ?? code,
    group: 'macro' as const,
    ticker: m.ticker,
    kind: m.kind,
    code,
  })),
  ...Object.entries(STYLE_FACTORS).map(([code, ticker]) => ({
    key: code,
    group: 'style' as const,
    ticker,
    kind: 'etf' as const,
    code,
  })),
]

export const FACTOR_KEYS: readonly string[] = FACTORS.map((f) => f.key)

/** Other names of a factor (besides its key, registry code and proxy ticker). */
const ALIASES: Readonly<Record<string, readonly string[]>> = {
  inflation: ['tips', 'breakeven'],
  term_spread: ['term', 'duration', 'treasuries'],
  short_rates: ['tbills', 't_bills', 'cash'],
  credit: ['high_yield', 'hy', 'junk'],
  oil: ['crude', 'wti'],
  gold: ['xau'],
  usd: ['dxy', 'dollar'],
  volatility: ['vix_futures'],
  bitcoin: ['btc', 'crypto'],
  vix_spot: ['vix', 'vix_level_change'],
  momentum: ['mom'],
  quality: [],
  low_vol: ['min_vol', 'minimum_volatility', 'lowvol'],
  value: [],
  growth: [],
  size: ['small_cap', 'smallcap', 'small'],
  dividend: ['dividends', 'div'],
  moat: ['wide_moat'],
}

function normalize(raw: string): string {
  return raw
    .trim()
    .toLowerCase()
    .replace(/[\s-]+/g, '_')
}

/** Every accepted name (normalized) → factor key. */
const FACTOR_NAMES: ReadonlyMap<string, string> = (() => {
  const m = new Map<string, string>()
  for (const f of FACTORS) {
    for (const name of [f.key, f.code, f.ticker, ...(ALIASES[f.key] ?? [])]) {
      const n = normalize(name)
      const taken = m.get(n)
      if (taken !== undefined && taken !== f.key)
        throw new Error(`factor name ${n} names both ${taken} and ${f.key}`)
      m.set(n, f.key)
    }
  }
  return m
})()

/**
 * The factor key a user-supplied name means: a key, an alias or the proxy's ticker, ignoring
 * case, spaces and hyphens (`DXY`, `low-vol`). Unknown names are an INVALID_REQUEST.
 */
export function factorKey(raw: string): string {
  const key = FACTOR_NAMES.get(normalize(raw))
  if (key === undefined) {
    throw new AppError(
      'INVALID_REQUEST',
      `unknown factor ${JSON.stringify(raw)}; known factors: ${FACTOR_KEYS.join(', ')}`,
    )
  }
  return key
}
