/**
 * RFC 4180 CSV writing: comma separator, CRLF line ends, a field is quoted when it contains a
 * quote, comma, CR or LF (quotes doubled). Numbers are written in JavaScript's shortest
 * round-trip form, so a value read back is bit-identical. null/undefined/NaN become empty.
 */
export type CsvCell = string | number | boolean | null | undefined

const NEEDS_QUOTES = /[",\r\n]/

export function csvCell(v: CsvCell): string {
  if (v === null || v === undefined) return ''
  if (typeof v === 'number') return Number.isFinite(v) ? String(v) : ''
  if (typeof v === 'boolean') return v ? 'true' : 'false'
  return NEEDS_QUOTES.test(v) ? `"${v.replaceAll('"', '""')}"` : v
}

/**
 * A text cell a spreadsheet would read as a formula (OWASP "CSV injection"): one starting with
 * `=`, `+`, `-`, `@`, a tab or a carriage return.
 */
const FORMULA_LEAD = /^[=+\-@\t\r]/

/**
 * The cell of a text column in a file meant for people (API answers, exports): as `csvCell`, and a
 * text that a spreadsheet would evaluate is prefixed with `'`, which spreadsheets show as text.
 * Numbers never come here (a negative number must stay one).
 */
export function csvTextCell(v: string | null | undefined): string {
  if (v === null || v === undefined) return ''
  return csvCell(FORMULA_LEAD.test(v) ? `'${v}` : v)
}

export function csvLine(cells: readonly CsvCell[]): string {
  let s = ''
  for (let i = 0; i < cells.length; i++) {
    if (i > 0) s += ','
    s += csvCell(cells[i])
  }
  return `${s}\r\n`
}

export function csvDocument(header: readonly string[], rows: Iterable<readonly CsvCell[]>): string {
  const parts = [csvLine(header)]
  for (const r of rows) parts.push(csvLine(r))
  return parts.join('')
}
