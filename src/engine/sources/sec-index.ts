/**
 * EDGAR's daily index (`Archives/edgar/daily-index/YYYY/QTRn/master.YYYYMMDD.idx`): every filing
 * accepted that day. The `master` variant is used because its rows are `|`-separated (the `form`
 * and `company` variants are fixed-width): a few header lines, the column line
 * `CIK|Company Name|Form Type|Date Filed|File Name` (older files spell it `Filename`), a line of
 * dashes, then one row per filing. The daily files write `Date Filed` as YYYYMMDD; the quarterly
 * ones as YYYY-MM-DD; both are read.
 */
import { SourceError } from './http.ts'
import type { FilingIndexEntry } from './types.ts'

/** The index file of an ISO date, relative to the www.sec.gov base URL. */
export function dailyIndexPath(date: string): string {
  const [y, m, d] = date.split('-')
  const quarter = Math.floor((Number(m) - 1) / 3) + 1
  return `Archives/edgar/daily-index/${y}/QTR${quarter}/master.${y}${m}${d}.idx`
}

const COLUMNS = /^CIK\|Company Name\|Form Type\|Date Filed\|File ?name$/i

function isoFiled(s: string): string | null {
  const m = /^(\d{4})-?(\d{2})-?(\d{2})$/.exec(s.trim())
  return m ? `${m[1]}-${m[2]}-${m[3]}` : null
}

/** The rows of a `master` index; a file without the column line is an error naming `file`. */
export function parseMasterIndex(text: string, file: string): FilingIndexEntry[] {
  const lines = text.split(/\r?\n/)
  const start = lines.findIndex((l) => COLUMNS.test(l.trim()))
  if (start < 0)
    throw new SourceError('sec', 200, `${file}: not an EDGAR master index (no CIK|Company Name|… line)`)
  const out: FilingIndexEntry[] = []
  for (const [i, line] of lines.slice(start + 1).entries()) {
    if (line.trim() === '' || /^-+$/.test(line.trim())) continue
    const c = line.split('|')
    const cik = Number(c[0])
    const filed = isoFiled(c[3] ?? '')
    if (c.length !== 5 || !Number.isSafeInteger(cik) || cik <= 0 || filed === null)
      throw new SourceError(
        'sec',
        200,
        `${file}:${start + i + 2}: unreadable index row: ${line.slice(0, 120)}`,
      )
    out.push({ cik, company: c[1].trim(), form: c[2].trim(), filed, path: c[4].trim() })
  }
  return out
}

/**
 * The forms whose filing can change a company's shares outstanding or its XBRL financial facts:
 * annual and quarterly reports (domestic, transition, foreign private issuers' 20-F and Canadian
 * 40-F) and their amendments. 8-K and 6-K are left out: they carry no cover-page share count and
 * almost never financial statements in XBRL, and thousands are filed a day.
 */
export const REPORT_FORMS: ReadonlySet<string> = new Set(
  ['10-K', '10-KT', '10-Q', '10-QT', '20-F', '40-F'].flatMap((f) => [f, `${f}/A`]),
)
