import { AppError } from '../../../platform/errors.ts'
import { canonicalTicker, isValidTicker } from '../aliases.ts'

/** The column of a long price file read as the adjusted close. */
export type PriceColumn = 'adj_close' | 'close'

/** One `--prices` argument: `path`, `path=COLUMN` or `path=COLUMN:TICKER,TICKER…`. */
export interface PriceSpec {
  path: string
  column: PriceColumn
  /** Only these tickers are taken from the file (canonical spellings); null = all. */
  tickers: string[] | null
}

const SUFFIX_RE = /^(adj_close|close)(?::(.+))?$/i

/**
 * `ohlcv.csv.gz=close:TIP,HYG` takes the `close` column of a long OHLCV file as the adjusted
 * close of TIP and HYG only. The close of such a file (Yahoo-style with auto-adjustment) is the
 * split- and dividend-adjusted close; the choice is explicit so a raw close is never taken for a
 * total-return price by accident. The ticker list keeps a file's other tickers (which another
 * price file may already give, with other values) out of the import.
 */
export function parsePriceSpec(spec: string): PriceSpec {
  const eq = spec.lastIndexOf('=')
  const m = eq >= 0 ? SUFFIX_RE.exec(spec.slice(eq + 1)) : null
  // A path may itself contain '='; only a well-formed suffix is taken as COLUMN[:TICKERS].
  if (!m) return { path: spec, column: 'adj_close', tickers: null }
  const column = m[1].toLowerCase() as PriceColumn
  const tickers = m[2] === undefined ? null : m[2].split(',').map((raw) => listedTicker(spec, raw))
  return { path: spec.slice(0, eq), column, tickers }
}

function listedTicker(spec: string, raw: string): string {
  const t = canonicalTicker(raw.trim())
  if (!isValidTicker(t)) throw new AppError('INVALID_REQUEST', `--prices ${spec}: "${raw}" is not a ticker`)
  return t
}
