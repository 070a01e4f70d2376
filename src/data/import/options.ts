import { AppError } from '../../platform/errors.ts'
import { parseRateSpec, type RateSpec } from './rates.ts'

export interface ImportOptions {
  /** One or more price files (wide or long; CSV, CSV.gz or Parquet). */
  prices: string[]
  /** Constituents CSV: the tickers listed there are stocks, every other price series an ETF. */
  securities?: string
  /** GICS → ETF map CSV. */
  classificationMap?: string
  /** Each `path`, `path=TENOR` or `path=TENOR:percent|fraction`. */
  rates?: string[]
  /** Directory of SEC companyfacts JSON (`CIK##########.json[.gz]`). */
  fundamentals?: string
  /** Long OHLCV CSV(.gz); only its volume column is used. */
  volume?: string
  /** Dataset directory to write (replaced atomically). */
  out: string
}

export interface CheckedOptions extends ImportOptions {
  rateSpecs: RateSpec[]
}

/** Checks what can be checked before reading any file, so a typo fails fast. */
export function checkOptions(opts: ImportOptions): CheckedOptions {
  if (opts.prices.length === 0) throw new AppError('INVALID_REQUEST', 'at least one price file is required')
  if (opts.out.trim() === '') throw new AppError('INVALID_REQUEST', 'an output directory is required')
  const rateSpecs = (opts.rates ?? []).map(parseRateSpec)
  const seen = new Set<string>()
  for (const p of [...opts.prices, ...rateSpecs.map((r) => r.path)]) {
    if (seen.has(p)) throw new AppError('INVALID_REQUEST', `${p} is given twice`)
    seen.add(p)
  }
  return { ...opts, rateSpecs }
}
