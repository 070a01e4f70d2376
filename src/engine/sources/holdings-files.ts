/**
 * The holdings files ETF issuers publish, read into EtfHolding rows (weights as fractions):
 * State Street's SPDR `.xlsx` (title rows `Fund Name:`, `Ticker Symbol:`, `Holdings: As of
 * 08-Aug-2024`, then a header `Name, Ticker, Identifier, SEDOL, Weight, Sector, Shares Held, Local
 * Currency`, then one row per holding and disclaimers), iShares' CSV (the fund's name, `Fund
 * Holdings as of,"Aug 07, 2024"` and other title rows, then `Ticker, Name, Sector, Asset Class,
 * Market Value, Weight (%), …`) and a plain CSV `ticker,weight[,date]` for other issuers. Rows
 * that are not a stock with a valid ticker (cash, futures, `-`) are left out.
 */
import { isoFromDay, parseFlexibleDay } from '../../platform/dates.ts'
import { canonicalTicker, isValidTicker } from '../data/aliases.ts'
import { csvRows, publishedNumber } from './csv-rows.ts'
import type { EtfHolding } from './types.ts'

const MONTHS = ['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec']

/** `08-Aug-2024`, `Aug 07, 2024`, ISO or `MM/DD/YYYY` → ISO date; null when unreadable. */
export function issuerDate(raw: string): string | null {
  const s = raw.trim()
  const dmy = /^(\d{1,2})-([A-Za-z]{3})-(\d{4})$/.exec(s)
  const mdy = /^([A-Za-z]{3})[a-z]*\.? (\d{1,2}), (\d{4})$/.exec(s)
  let parts: [number, number, number] | null = null
  if (dmy) parts = [Number(dmy[3]), MONTHS.indexOf((dmy[2] ?? '').toLowerCase()) + 1, Number(dmy[1])]
  else if (mdy) parts = [Number(mdy[3]), MONTHS.indexOf((mdy[1] ?? '').toLowerCase()) + 1, Number(mdy[2])]
  if (parts) {
    const [y, m, d] = parts
    const day =
      m > 0 ? parseFlexibleDay(`${y}-${String(m).padStart(2, '0')}-${String(d).padStart(2, '0')}`) : null
    return day === null ? null : isoFromDay(day)
  }
  const day = parseFlexibleDay(s)
  return day === null ? null : isoFromDay(day)
}

const norm = (s: string | undefined) => (s ?? '').trim().toLowerCase()

function headerRow(rows: readonly string[][], need: readonly string[]): number {
  return rows.findIndex((r) => need.every((n) => r.some((c) => norm(c) === n)))
}

function holding(
  etf: string,
  rawTicker: string | undefined,
  rawWeight: string | undefined,
  asOf: string,
): EtfHolding | null {
  const ticker = canonicalTicker(rawTicker ?? '')
  if (!isValidTicker(ticker)) return null
  const w = publishedNumber(rawWeight)
  return { etf, ticker, weight: Number.isNaN(w) ? null : w / 100, asOf }
}

/** A file that cannot be read as what it claims to be. */
export class HoldingsFileError extends Error {}

/** The rows of a SPDR holdings sheet (already read from the xlsx). */
export function ssgaHoldings(etf: string, rows: readonly string[][]): EtfHolding[] {
  const h = headerRow(rows, ['ticker', 'weight'])
  if (h < 0) throw new HoldingsFileError('no header row with Ticker and Weight')
  let asOf: string | null = null
  for (const r of rows.slice(0, h))
    for (const c of r) {
      const m = /as of\s+(.+)$/i.exec(c.trim())
      if (m) asOf = issuerDate(m[1] ?? '') ?? asOf
    }
  if (asOf === null) throw new HoldingsFileError('no readable "As of" date above the header')
  const header = rows[h] ?? []
  const iT = header.findIndex((c) => norm(c) === 'ticker')
  const iW = header.findIndex((c) => norm(c) === 'weight')
  const out: EtfHolding[] = []
  for (const r of rows.slice(h + 1)) {
    const x = holding(etf, r[iT], r[iW], asOf)
    if (x) out.push(x)
  }
  return out
}

/** An iShares holdings CSV; `expectName` (the fund's name, when known) must be its first line. */
export function isharesHoldings(etf: string, text: string, expectName: string | null): EtfHolding[] {
  const rows = csvRows(text)
  const title = (rows[0]?.[0] ?? '').trim()
  if (expectName !== null && norm(title) !== norm(expectName))
    throw new HoldingsFileError(
      `the file is of "${title}", not of ${expectName} (check the iShares product id)`,
    )
  const dateRow = rows.find((r) => /^fund holdings as of$/i.test((r[0] ?? '').trim()))
  const asOf = issuerDate(dateRow?.[1] ?? '')
  if (asOf === null) throw new HoldingsFileError('no readable "Fund Holdings as of" date')
  const h = headerRow(rows, ['ticker', 'weight (%)'])
  if (h < 0) throw new HoldingsFileError('no header row with Ticker and Weight (%)')
  const header = rows[h] ?? []
  const iT = header.findIndex((c) => norm(c) === 'ticker')
  const iW = header.findIndex((c) => norm(c) === 'weight (%)')
  const iA = header.findIndex((c) => norm(c) === 'asset class')
  const out: EtfHolding[] = []
  for (const r of rows.slice(h + 1)) {
    if (r.length < header.length) break // the disclaimer after the table
    if (iA >= 0 && norm(r[iA]) !== 'equity') continue
    const x = holding(etf, r[iT], r[iW], asOf)
    if (x) out.push(x)
  }
  return out
}

/** A plain `ticker,weight[,date]` CSV (weight in percent); without a date column, as of `today`. */
export function genericHoldings(etf: string, text: string, today: string): EtfHolding[] {
  const rows = csvRows(text).filter((r) => r.some((c) => c.trim() !== ''))
  const header = (rows[0] ?? []).map(norm)
  const iT = header.indexOf('ticker')
  const iW = header.indexOf('weight')
  const iD = header.findIndex((c) => c === 'date' || c === 'as_of')
  if (iT < 0 || iW < 0) throw new HoldingsFileError(`expected columns ticker,weight; got ${header.join(',')}`)
  const out: EtfHolding[] = []
  for (const r of rows.slice(1)) {
    const asOf = iD >= 0 ? issuerDate(r[iD] ?? '') : today
    if (asOf === null) continue
    const x = holding(etf, r[iT], r[iW], asOf)
    if (x) out.push(x)
  }
  return out
}
