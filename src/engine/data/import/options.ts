import { AppError } from '../../../platform/errors.ts'
import { type PriceSpec, parsePriceSpec } from './price-spec.ts'
import { parseRateSpec, type RateSpec } from './rates.ts'
import { parseSeriesSpec, type SeriesSpec } from './series.ts'

export interface ImportOptions {
  /**
   * One or more price files (wide or long; CSV, CSV.gz or Parquet), each `path`, `path=close`
   * (a long OHLCV file's close column as the adjusted close) or `path=COLUMN:TICKER,TICKER…`.
   */
  prices: string[]
  /** Constituents CSV: the tickers listed there are stocks, every other price series an ETF. */
  securities?: string
  /** GICS → ETF map CSV. */
  classificationMap?: string
  /** Each `path`, `path=TENOR` or `path=TENOR:percent|fraction`. */
  rates?: string[]
  /**
   * SEC companyfacts: a directory of `CIK##########.json[.gz]` files (taken whole) or SEC's bulk
   * `companyfacts.zip` (only the entries of the stocks' CIKs are read).
   */
  fundamentals?: string
  /** SEC's `company_tickers.json[.gz]`: fills the CIK of stocks the securities file gives none. */
  cikMap?: string
  /** Long OHLCV CSV(.gz); only its volume column is used. */
  volume?: string
  /** Index-level files (a FRED `VIXCLS` download), each `path` or `path=NAME` (e.g. `=VIX`). */
  series?: string[]
  /** Dataset directory to write (replaced atomically). */
  out: string
}

export interface CheckedOptions extends ImportOptions {
  priceSpecs: PriceSpec[]
  rateSpecs: RateSpec[]
  seriesSpecs: SeriesSpec[]
}

/** Checks what can be checked before reading any file, so a typo fails fast. */
export function checkOptions(opts: ImportOptions): CheckedOptions {
  if (opts.prices.length === 0) throw new AppError('INVALID_REQUEST', 'at least one price file is required')
  if (opts.out.trim() === '') throw new AppError('INVALID_REQUEST', 'an output directory is required')
  if (opts.cikMap && !opts.securities)
    throw new AppError(
      'INVALID_REQUEST',
      'a CIK map needs a securities file (it fills the CIK of the stocks listed there)',
    )
  const priceSpecs = opts.prices.map(parsePriceSpec)
  const rateSpecs = (opts.rates ?? []).map(parseRateSpec)
  const seriesSpecs = (opts.series ?? []).map(parseSeriesSpec)
  const seen = new Set<string>()
  for (const { path } of [...priceSpecs, ...rateSpecs, ...seriesSpecs]) {
    if (seen.has(path)) throw new AppError('INVALID_REQUEST', `${path} is given twice`)
    seen.add(path)
  }
  return { ...opts, priceSpecs, rateSpecs, seriesSpecs }
}
