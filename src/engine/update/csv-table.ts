import { parse } from 'csv-parse/sync'
import { InputError } from '../../platform/errors.ts'

/** One data row of a data-directory CSV file: cells by column name, and its 1-based line. */
export interface CsvRow {
  cells: Record<string, string>
  line: number
}

/**
 * The rows of a small data-directory CSV (RFC 4180, as `csvDocument` writes it). The file must
 * start with `required` in that order; further columns are optional and kept by name, so a
 * newer writer can add columns an older reader ignores.
 */
export function parseCsvTable(text: string, file: string, required: readonly string[]): CsvRow[] {
  let records: string[][]
  try {
    records = parse(text, { relax_column_count: false, skip_empty_lines: true, bom: true })
  } catch (e) {
    throw new InputError({ file }, `not a readable CSV file: ${(e as Error).message}`)
  }
  const header = (records[0] ?? []).map((h) => h.trim())
  if (required.some((name, i) => header[i] !== name))
    throw new InputError({ file, line: 1 }, `expected the header ${required.join(',')}`)
  return records.slice(1).map((r, i) => ({
    cells: Object.fromEntries(header.map((h, k) => [h, (r[k] ?? '').trim()])),
    line: i + 2,
  }))
}
