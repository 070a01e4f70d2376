import type { FlatTable, TableColumn } from '../../contract/table.ts'
import { csvCell, csvLine, csvTextCell } from '../../platform/csv.ts'
import { encodeParquet, type WritableColumn } from '../parquet/index.ts'

/** Keeps a reader's per-group buffers modest while long series still make few groups. */
const ROW_GROUP_ROWS = 65_536
const DAY_MS = 86_400_000
/** The range of a JavaScript Date, so every timestamp has an ISO form. */
const MAX_DATE_MS = 8.64e15

/**
 * One Parquet file in memory: UTF8 as STRING, DOUBLE, INT64, BOOLEAN and TIMESTAMP_MILLIS
 * (INT64, UTC, millis), every column OPTIONAL (null, or NaN in numeric columns, is null), PLAIN
 * and uncompressed. Doubles are stored bit for bit (-0 and infinities included).
 */
export function encodeTableParquet(table: FlatTable, metadata: Record<string, string> = {}): Uint8Array {
  checkTable(table)
  return encodeParquet(
    { columns: table.columns.map(parquetColumn), metadata },
    { rowGroupRows: ROW_GROUP_ROWS },
  )
}

/**
 * RFC 4180 CSV with a header row (csvCell quotes). Text cells a spreadsheet would take for a
 * formula get a leading `'` (csvTextCell); numbers never do. Nulls are empty; numbers in shortest
 * round-trip form with -0 written as 0 and infinities as `Infinity`/`-Infinity` (so they still
 * read back); booleans `true`/`false`; timestamps `YYYY-MM-DD` at midnight UTC, else ISO 8601.
 * CSV cannot tell null from the empty string: both are empty.
 */
export function encodeTableCsv(table: FlatTable): string {
  const rows = checkTable(table)
  const cells = table.columns.map(cellText)
  const parts = [csvLine(table.columns.map((c) => c.name))]
  for (let r = 0; r < rows; r++) {
    let line = ''
    for (let k = 0; k < cells.length; k++) line += k > 0 ? `,${cells[k](r)}` : cells[k](r)
    // A one-column null would be a blank line, which many readers (pandas) skip: quote it.
    parts.push(line === '' && cells.length === 1 ? '""' : line, '\r\n')
  }
  return parts.join('')
}

function parquetColumn(c: TableColumn): WritableColumn {
  switch (c.type) {
    case 'UTF8':
      return { name: c.name, type: 'STRING', values: c.values }
    case 'DOUBLE':
    case 'INT64':
    case 'TIMESTAMP_MILLIS':
      return { name: c.name, type: c.type, values: nanForNull(c.values) }
    case 'BOOLEAN':
      return { name: c.name, type: 'BOOLEAN', values: c.values }
  }
}

function nanForNull(values: Float64Array | (number | null)[]): Float64Array {
  if (values instanceof Float64Array) return values
  return Float64Array.from(values, (v) => (v === null ? Number.NaN : v))
}

/** The CSV text of row r of a column (already quoted where needed). */
function cellText(c: TableColumn): (r: number) => string {
  switch (c.type) {
    case 'UTF8': {
      const v = c.values
      return (r) => csvTextCell(v[r])
    }
    case 'DOUBLE':
    case 'INT64': {
      const v = c.values
      return (r) => numberText(v[r])
    }
    case 'BOOLEAN': {
      const v = c.values
      return (r) => csvCell(v[r])
    }
    case 'TIMESTAMP_MILLIS': {
      const v = c.values
      return (r) => timestampText(v[r])
    }
  }
}

function numberText(x: number | null): string {
  // biome-ignore lint/suspicious/noSelfCompare: NaN test
  if (x === null || x !== x) return ''
  return x === 0 ? '0' : String(x)
}

function timestampText(ms: number | null): string {
  // biome-ignore lint/suspicious/noSelfCompare: NaN test
  if (ms === null || ms !== ms) return ''
  const iso = new Date(ms).toISOString()
  // Years past 9999 have a signed six-digit form, so cut at the 'T' rather than at a fixed width.
  return ms % DAY_MS === 0 ? iso.slice(0, iso.indexOf('T')) : iso
}

/**
 * Row count after checking what both encoders rely on: equal column lengths, INT64 values that
 * are safe integers (beyond 2^53 a JavaScript number is no longer an exact integer) and
 * timestamps that are whole milliseconds within the Date range.
 */
function checkTable(table: FlatTable): number {
  const rows = table.columns[0]?.values.length ?? 0
  for (const c of table.columns) {
    if (c.values.length !== rows)
      throw new Error(`table: column "${c.name}" has ${c.values.length} values, expected ${rows}`)
    if (c.type !== 'INT64' && c.type !== 'TIMESTAMP_MILLIS') continue
    for (const v of c.values) {
      // biome-ignore lint/suspicious/noSelfCompare: NaN test
      if (v === null || v !== v) continue
      const ok =
        c.type === 'INT64' ? Number.isSafeInteger(v) : Number.isInteger(v) && Math.abs(v) <= MAX_DATE_MS
      if (!ok) throw new Error(`table: column "${c.name}" holds ${v}, not a valid ${c.type} value`)
    }
  }
  return rows
}
