import { isoFromDay, parseFlexibleDay } from '../../../platform/dates.ts'
import { InputError } from '../../../platform/errors.ts'

/**
 * One cell of a user table. CSV cells are strings; Parquet cells arrive typed (numbers, bigints,
 * Dates for DATE/TIMESTAMP columns, null for missing values).
 */
export type Cell = string | number | bigint | boolean | Date | null | undefined

const MS_PER_DAY = 86_400_000

/** Spellings of "no value" that spreadsheets, pandas and FRED write into numeric columns. */
const MISSING_TOKENS = new Set(['', 'na', 'nan', 'n/a', '#n/a', 'null', 'none', '.'])

/**
 * A numeric cell: a finite number, NaN when the cell is empty (or a missing-value token), or null
 * when the cell holds something that is not a number. `Number()` does the parsing (fast and
 * exact: it yields the same double a CSV writer printed); the checks after it reject what
 * `Number()` is too lenient about (whitespace-only reads as 0, `Infinity`).
 */
function parseNumberCell(c: Cell): number | null {
  if (typeof c === 'string') {
    if (c.length === 0) return Number.NaN
    const v = Number(c)
    if (Number.isFinite(v)) return v === 0 && c.trim() === '' ? Number.NaN : v
    return MISSING_TOKENS.has(c.trim().toLowerCase()) ? Number.NaN : null
  }
  if (typeof c === 'number') return Number.isFinite(c) ? c : Number.isNaN(c) ? Number.NaN : null
  if (c === null || c === undefined) return Number.NaN
  if (typeof c === 'bigint') return Number(c)
  return null
}

/** A date cell as a day number, or null when it is not a date in an accepted spelling. */
function parseDateCell(c: Cell): number | null {
  if (typeof c === 'string') return parseFlexibleDay(c)
  if (c instanceof Date) {
    const t = c.getTime()
    return Number.isFinite(t) ? Math.floor(t / MS_PER_DAY) : null
  }
  if (typeof c === 'number' || typeof c === 'bigint') {
    // Integer dates such as 20190102 (YYYYMMDD), as some tools write them.
    const n = Number(c)
    if (!Number.isInteger(n) || n < 18000101 || n > 22001231) return null
    return parseFlexibleDay(String(n))
  }
  return null
}

export function cellText(c: Cell): string {
  if (c === null || c === undefined) return ''
  if (c instanceof Date) return c.toISOString()
  return String(c).trim()
}

/** Header names compared loosely: `Adj Close`, `adj_close` and `ADJCLOSE` are one name. */
export function normalizeName(s: string): string {
  return s
    .trim()
    .toLowerCase()
    .replace(/[\s_-]+/g, '')
}

export function findColumn(header: readonly string[], names: readonly string[]): number {
  const wanted = new Set(names.map(normalizeName))
  return header.findIndex((h) => wanted.has(normalizeName(h)))
}

/** The column index for a required column; an InputError on line 1 when the header lacks it. */
export function requireColumn(file: string, header: readonly string[], names: readonly string[]): number {
  const i = findColumn(header, names)
  if (i < 0) {
    const accepted = names.map((n) => `"${n}"`).join(', ')
    throw new InputError(
      { file, line: 1, column: names[0] },
      `missing required column "${names[0]}" (accepted names: ${accepted})`,
    )
  }
  return i
}

// No bare 'day' or 'time': those could be tickers (Dayforce trades as DAY).
export const DATE_COLUMN_NAMES = ['date', 'observation_date', 'time period', 'datetime', 'timestamp']

/** Reads a date cell or throws an InputError at (line, column). */
export function requireDate(file: string, c: Cell, line: number, column: string): number {
  const d = parseDateCell(c)
  if (d === null) {
    const text = cellText(c)
    const what = text === '' ? 'missing date' : `unknown date format "${text}"`
    throw new InputError(
      { file, line, column },
      `${what} (expected YYYY-MM-DD, YYYYMMDD, YYYY/MM/DD or MM/DD/YYYY)`,
    )
  }
  return d
}

/** Reads a numeric cell (NaN when empty) or throws an InputError at (line, column). */
export function requireNumber(file: string, c: Cell, line: number, column: string): number {
  const v = parseNumberCell(c)
  if (v === null) throw new InputError({ file, line, column }, `not a number: "${cellText(c)}"`)
  return v
}

/** Rejects a second row for a date, naming the line of the first (tables with one row per date). */
export class DistinctDates {
  private readonly seen = new Map<number, number>()
  constructor(private readonly file: string) {}

  add(day: number, line: number, column: string): void {
    const first = this.seen.get(day)
    if (first !== undefined) {
      throw new InputError(
        { file: this.file, line, column },
        `duplicate date ${isoFromDay(day)} (also on line ${first})`,
      )
    }
    this.seen.set(day, line)
  }
}
