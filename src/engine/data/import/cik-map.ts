import { basename } from 'node:path'
import { InputError } from '../../../platform/errors.ts'
import type { QualityFinding, SecurityRow } from '../format.ts'
import { parseJson } from './fundamentals.ts'
import { gunzipIfNeeded, readRawFile } from './table-reader.ts'

/** Stocks without a CIK listed by ticker in the note; the rest are counted. */
const MAX_LISTED = 20

/** Ticker match key → CIK, from SEC's `company_tickers.json`. */
export type CikMap = ReadonlyMap<string, number>

/**
 * The key tickers are matched on: trimmed, upper-case, and every `-`, `/` or space written as
 * `.`. SEC spells class shares `BRK-B`, S&P lists `BRK.B`, other vendors `BRK/B` or `BRK B`;
 * all four meet at `BRK.B` (preferred series like SEC's `CTA-PA` become `CTA.PA` alike).
 */
function tickerKey(ticker: string): string {
  return ticker.trim().toUpperCase().replace(/[-/ ]/g, '.')
}

/**
 * SEC's ticker → CIK map (`https://www.sec.gov/files/company_tickers.json`, `.json` or
 * `.json.gz`): `{"0": {"cik_str": 320193, "ticker": "AAPL", "title": "Apple Inc."}, …}`. When
 * two entries share a key, the first wins (SEC lists the larger company first).
 */
export async function readCikMap(file: string): Promise<Map<string, number>> {
  const doc = parseJson(file, gunzipIfNeeded(file, await readRawFile(file)).toString('utf8'))
  const shape = 'expected SEC\'s company_tickers.json: {"0": {"cik_str": …, "ticker": …, "title": …}, …}'
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) {
    throw new InputError({ file, line: 1, column: 1 }, `not a ticker → CIK map: ${shape}`)
  }
  const map = new Map<string, number>()
  for (const [key, value] of Object.entries(doc)) {
    const { cik_str: cik, ticker } = (value ?? {}) as { cik_str?: unknown; ticker?: unknown }
    if (typeof value !== 'object' || value === null || Array.isArray(value)) {
      throw new InputError({ file, column: key }, `not a ticker → CIK map entry: ${shape}`)
    }
    if (typeof ticker !== 'string' || ticker.trim() === '') {
      throw new InputError({ file, column: `${key}.ticker` }, `"ticker" is missing or not a string: ${shape}`)
    }
    if (typeof cik !== 'number' || !Number.isSafeInteger(cik) || cik <= 0) {
      throw new InputError({ file, column: `${key}.cik_str` }, `"cik_str" is missing or not a CIK: ${shape}`)
    }
    const k = tickerKey(ticker)
    if (!map.has(k)) map.set(k, cik)
  }
  if (map.size === 0) throw new InputError({ file, line: 1, column: 1 }, `no entries: ${shape}`)
  return map
}

/**
 * Fills the CIK of stocks that have none from the map. A CIK the securities file gives wins;
 * where the map disagrees, a finding names both (one of them is stale or a different share
 * class's issuer, and only the user can tell which).
 */
export function applyCikMap(
  securities: SecurityRow[],
  map: CikMap,
  files: { map: string; securities: string },
  findings: QualityFinding[],
): void {
  let stocks = 0
  let filled = 0
  const unknown: string[] = []
  for (const s of securities) {
    if (s.assetType !== 'stock') continue
    stocks++
    const fromMap = map.get(tickerKey(s.ticker))
    if (fromMap === undefined) {
      if (s.cik === null) unknown.push(s.ticker)
    } else if (s.cik === null) {
      s.cik = fromMap
      filled++
    } else if (s.cik !== fromMap) {
      findings.push({
        kind: 'note',
        symbol: s.symbol,
        detail: `warning: CIK conflict for ${s.ticker}: ${basename(files.securities)} says ${s.cik}, ${basename(files.map)} says ${fromMap}; kept ${s.cik} from ${basename(files.securities)}`,
      })
    }
  }
  const listed = unknown.length > MAX_LISTED ? [...unknown.slice(0, MAX_LISTED), '…'] : unknown
  const none = unknown.length > 0 ? `; ${unknown.length} have no CIK: ${listed.join(', ')}` : ''
  findings.push({
    kind: 'note',
    detail: `cik map: ${basename(files.map)} filled the CIK of ${filled} of ${stocks} stock(s)${none}`,
  })
}
