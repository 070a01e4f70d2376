import { booleanPage, densePage, floatPage, int64Page, type PageBody, Scratch, stringPage } from './pages.ts'
import { MAGIC, MAX_ROWS, type ParquetInput, type WritableColumn } from './types.ts'
import { columnSpec, dataPageHeader, groupsFooter, type RowGroup, type WrittenChunk } from './write-footer.ts'

export type { RowGroup } from './write-footer.ts'

/** Pages stay well below the i32 size limit and keep readers' per-page buffers modest. */
const MAX_PAGE_BYTES = 64 * 1024 * 1024

export function encodeParquet(table: ParquetInput, opts: EncodeOptions = {}): Uint8Array {
  return encodeParquetPaged(table, MAX_PAGE_BYTES, opts)
}

/** `encodeParquet` with a configurable page size limit, so tests can exercise multi-page chunks. */
export function encodeParquetPaged(
  table: ParquetInput,
  maxPageBytes: number,
  opts: EncodeOptions = {},
): Uint8Array {
  const parts = encodeParts(table, maxPageBytes, opts)
  let total = 0
  for (const p of parts) total += p.length
  // Every byte is copied from a part below, so skipping the zero-fill is safe.
  const buf = Buffer.allocUnsafeSlow(total)
  const out = new Uint8Array(buf.buffer, buf.byteOffset, total)
  let pos = 0
  for (const p of parts) {
    out.set(p, pos)
    pos += p.length
  }
  return out
}

export interface EncodeOptions {
  /**
   * Rows per row group (default: all rows in one). Groups are written one after another, each
   * holding every column, so a reader can decode a range of rows (say the last days of a daily
   * panel) without touching the rest of the file.
   */
  rowGroupRows?: number
  /**
   * The file continues one whose first `bytes` bytes (the magic and `groups`) are kept as they
   * are: the parts returned start after them, chunk offsets count from the file start, and the
   * footer lists `groups` before the new ones.
   */
  after?: { bytes: number; groups: RowGroup[] }
}

/**
 * The file as a sequence of byte parts, in order. Value parts are mostly views into the table's
 * own arrays, so a caller writing them out (writev) copies the data only once.
 */
function encodeParts(
  table: ParquetInput,
  maxPageBytes = MAX_PAGE_BYTES,
  opts: EncodeOptions = {},
): Uint8Array[] {
  return encodeLayout(table, maxPageBytes, opts).parts
}

/**
 * The parts of the file and where its sections end: the leading magic, each row group (its
 * column chunks lie back to back) and the footer, as byte offsets (the last is the file size).
 */
export function encodeLayout(
  table: ParquetInput,
  maxPageBytes = MAX_PAGE_BYTES,
  opts: EncodeOptions = {},
): { parts: Uint8Array[]; sectionEnds: number[] } {
  const numRows = validate(table.columns)
  const groupRows = opts.rowGroupRows ?? Math.max(1, numRows)
  if (!Number.isSafeInteger(groupRows) || groupRows < 1)
    throw new Error(`parquet: rowGroupRows must be a positive integer, got ${groupRows}`)
  const scratch = new Scratch()
  const parts: Uint8Array[] = opts.after ? [] : [MAGIC]
  const groups: RowGroup[] = [...(opts.after?.groups ?? [])]
  let offset = opts.after?.bytes ?? MAGIC.length
  const sectionEnds = [offset]
  let r0 = 0
  do {
    const r1 = Math.min(numRows, r0 + groupRows)
    const written: WrittenChunk[] = []
    for (const col of table.columns) {
      const chunk: WrittenChunk = { name: col.name, spec: columnSpec(col), offset, size: 0, nulls: 0 }
      for (const page of columnPages(col, r0, r1, maxPageBytes, scratch)) {
        if (page.size > 0x7fffffff) throw new Error(`parquet: a page of column "${col.name}" exceeds 2 GiB`)
        const header = dataPageHeader(page.rows, page.size)
        parts.push(header)
        if (page.levels) parts.push(page.levels)
        for (const v of page.values) parts.push(v)
        chunk.size += header.length + page.size
        chunk.nulls += page.rows - page.present
      }
      written.push(chunk)
      offset += chunk.size
    }
    groups.push({ chunks: written, rows: r1 - r0 })
    sectionEnds.push(offset)
    r0 = r1
  } while (r0 < numRows)
  const schema = table.columns.map((col) => ({
    name: col.name,
    spec: columnSpec(col),
    offset: 0,
    size: 0,
    nulls: 0,
  }))
  const footer = groupsFooter(schema, groups, table.metadata ?? {})
  const tail = new Uint8Array(8)
  new DataView(tail.buffer).setUint32(0, footer.length, true)
  tail.set(MAGIC, 4)
  parts.push(footer, tail)
  sectionEnds.push(offset + footer.length + tail.length)
  return { parts, sectionEnds }
}

/** Pages of rows [r0, r1) of one column. */
function* columnPages(col: WritableColumn, r0: number, r1: number, maxPageBytes: number, scratch: Scratch) {
  if (col.type === 'STRING') {
    const lens = stringLengths(col.values)
    for (const [s, e] of stringPageRanges(lens, r0, r1, maxPageBytes))
      yield stringPage(col.values, lens, s, e, scratch)
    return
  }
  const bitsPerValue = col.type === 'BOOLEAN' ? 1 : col.values.BYTES_PER_ELEMENT * 8
  const rowsPerPage = Math.max(1, Math.floor((maxPageBytes * 8) / bitsPerValue))
  let s = r0
  do {
    const e = Math.min(r1, s + rowsPerPage)
    yield fixedWidthPage(col, s, e, scratch)
    s = e
  } while (s < r1)
}

function fixedWidthPage(
  col: Exclude<WritableColumn, { type: 'STRING' }>,
  s: number,
  e: number,
  scratch: Scratch,
): PageBody {
  switch (col.type) {
    case 'DOUBLE':
    case 'FLOAT':
      return floatPage(col.values, s, e, scratch)
    case 'INT32':
    case 'DATE':
      return densePage(col.values, s, e)
    case 'INT64':
    case 'TIMESTAMP_MILLIS':
      return int64Page(col.values, s, e, scratch)
    case 'BOOLEAN':
      return booleanPage(col.values, s, e, scratch)
  }
}

function stringLengths(values: (string | null)[]): Int32Array {
  const lens = new Int32Array(values.length)
  for (let i = 0; i < values.length; i++) {
    const s = values[i]
    lens[i] = s === null ? -1 : Buffer.byteLength(s, 'utf8')
  }
  return lens
}

/** Row ranges of string pages in [r0, r1): one page unless the values would exceed maxPageBytes. */
function stringPageRanges(
  lens: Int32Array,
  r0: number,
  r1: number,
  maxPageBytes: number,
): [number, number][] {
  const ranges: [number, number][] = []
  let start = r0
  let bytes = 0
  for (let i = r0; i < r1; i++) {
    const b = lens[i] >= 0 ? 4 + lens[i] : 0
    if (i > start && bytes + b > maxPageBytes) {
      ranges.push([start, i])
      start = i
      bytes = 0
    }
    bytes += b
  }
  ranges.push([start, r1])
  return ranges
}

function validate(columns: WritableColumn[]): number {
  const numRows = columns.length > 0 ? columns[0].values.length : 0
  if (numRows > MAX_ROWS) throw new Error(`parquet: ${numRows} rows exceed the format limit`)
  const names = new Set<string>()
  for (const col of columns) {
    if (names.has(col.name)) throw new Error(`parquet: duplicate column name "${col.name}"`)
    names.add(col.name)
    if (!valuesMatchType(col))
      throw new Error(`parquet: column "${col.name}" values do not match type ${col.type}`)
    if (col.values.length !== numRows) {
      throw new Error(
        `parquet: column "${col.name}" has ${col.values.length} values, expected ${numRows} like "${columns[0].name}"`,
      )
    }
  }
  return numRows
}

function valuesMatchType(col: WritableColumn): boolean {
  switch (col.type) {
    case 'DOUBLE':
    case 'INT64':
    case 'TIMESTAMP_MILLIS':
      return col.values instanceof Float64Array
    case 'FLOAT':
      return col.values instanceof Float32Array
    case 'INT32':
    case 'DATE':
      return col.values instanceof Int32Array
    case 'STRING':
      return Array.isArray(col.values) && col.values.every((v) => v === null || typeof v === 'string')
    case 'BOOLEAN':
      return Array.isArray(col.values) && col.values.every((v) => v === null || typeof v === 'boolean')
    default:
      return false
  }
}
