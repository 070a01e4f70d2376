import { densePage, floatPage, type PageBody, Scratch, stringPage } from './pages.ts'
import { MAGIC, MAX_ROWS, type ParquetColumn, type ParquetInput } from './types.ts'
import { columnSpec, dataPageHeader, fileFooter, type WrittenChunk } from './write-footer.ts'

/** Pages stay well below the i32 size limit and keep readers' per-page buffers modest. */
const MAX_PAGE_BYTES = 64 * 1024 * 1024

export function encodeParquet(table: ParquetInput): Uint8Array {
  return encodeParquetPaged(table, MAX_PAGE_BYTES)
}

/** `encodeParquet` with a configurable page size limit, so tests can exercise multi-page chunks. */
export function encodeParquetPaged(table: ParquetInput, maxPageBytes: number): Uint8Array {
  const parts = encodeParts(table, maxPageBytes)
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

/**
 * The file as a sequence of byte parts, in order. Value parts are mostly views into the table's
 * own arrays, so a caller writing them out (writev) copies the data only once.
 */
export function encodeParts(table: ParquetInput, maxPageBytes = MAX_PAGE_BYTES): Uint8Array[] {
  const numRows = validate(table.columns)
  const scratch = new Scratch()
  const parts: Uint8Array[] = [MAGIC]
  const written: WrittenChunk[] = []
  let offset = MAGIC.length
  for (const col of table.columns) {
    const chunk: WrittenChunk = { name: col.name, spec: columnSpec(col), offset, size: 0, nulls: 0 }
    for (const page of columnPages(col, numRows, maxPageBytes, scratch)) {
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
  const footer = fileFooter(written, numRows, table.metadata ?? {})
  const tail = new Uint8Array(8)
  new DataView(tail.buffer).setUint32(0, footer.length, true)
  tail.set(MAGIC, 4)
  parts.push(footer, tail)
  return parts
}

function* columnPages(col: ParquetColumn, numRows: number, maxPageBytes: number, scratch: Scratch) {
  if (col.type === 'STRING') {
    const lens = stringLengths(col.values)
    for (const [s, e] of stringPageRanges(lens, maxPageBytes))
      yield stringPage(col.values, lens, s, e, scratch)
    return
  }
  const rowsPerPage = Math.max(1, Math.floor(maxPageBytes / col.values.BYTES_PER_ELEMENT))
  let s = 0
  do {
    const e = Math.min(numRows, s + rowsPerPage)
    const page: PageBody =
      col.type === 'DOUBLE' || col.type === 'FLOAT'
        ? floatPage(col.values, s, e, scratch)
        : densePage(col.values, s, e)
    yield page
    s = e
  } while (s < numRows)
}

function stringLengths(values: (string | null)[]): Int32Array {
  const lens = new Int32Array(values.length)
  for (let i = 0; i < values.length; i++) {
    const s = values[i]
    lens[i] = s === null ? -1 : Buffer.byteLength(s, 'utf8')
  }
  return lens
}

/** Row ranges of string pages: one page unless the values would exceed maxPageBytes. */
function stringPageRanges(lens: Int32Array, maxPageBytes: number): [number, number][] {
  const ranges: [number, number][] = []
  let start = 0
  let bytes = 0
  for (let i = 0; i < lens.length; i++) {
    const b = lens[i] >= 0 ? 4 + lens[i] : 0
    if (i > start && bytes + b > maxPageBytes) {
      ranges.push([start, i])
      start = i
      bytes = 0
    }
    bytes += b
  }
  ranges.push([start, lens.length])
  return ranges
}

function validate(columns: ParquetColumn[]): number {
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

function valuesMatchType(col: ParquetColumn): boolean {
  switch (col.type) {
    case 'DOUBLE':
      return col.values instanceof Float64Array
    case 'FLOAT':
      return col.values instanceof Float32Array
    case 'INT32':
    case 'DATE':
      return col.values instanceof Int32Array
    case 'STRING':
      return Array.isArray(col.values) && col.values.every((v) => v === null || typeof v === 'string')
    default:
      return false
  }
}
