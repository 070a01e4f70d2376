import { decodeChunk, UnsupportedChunk } from './chunk.ts'
import { decodeWithHyparquet } from './fallback.ts'
import {
  checkHeadMagic,
  type FileMeta,
  footerLength,
  parseFooter,
  type RowGroupMeta,
  type TopColumn,
} from './footer.ts'
import { isNativeColumn, targetType } from './schema.ts'
import { type ByteSource, memorySource } from './source.ts'
import {
  Codec,
  type ColumnType,
  type DecodeOptions,
  Encoding,
  type ParquetColumn,
  type ParquetTable,
} from './types.ts'

export async function decodeParquet(bytes: Uint8Array, opts?: DecodeOptions): Promise<ParquetTable> {
  const src = memorySource(bytes)
  return decodeSource(src, await readMeta(src), opts)
}

/**
 * Reads and parses only the footer (plus the leading magic). With `fromRow`, row groups wholly
 * before it are parsed only for their row count (see parseFooter); decode with the same fromRow.
 */
export async function readMeta(src: ByteSource, opts: { fromRow?: number } = {}): Promise<FileMeta> {
  if (src.size < 12) throw new Error(`not a parquet file: only ${src.size} bytes`)
  const len = footerLength(await src.read(src.size - 8, src.size), src.size)
  checkHeadMagic(await src.read(0, 4))
  return parseFooter(await src.read(src.size - 8 - len, src.size - 8), src.size, opts.fromRow ?? 0)
}

export function selectColumns(meta: FileMeta, names: string[] | undefined): TopColumn[] {
  if (names === undefined) return meta.columns
  const byName = new Map(meta.columns.map((c) => [c.name, c]))
  return [...new Set(names)].map((name) => {
    const col = byName.get(name)
    if (!col) {
      const available = meta.columns.map((c) => JSON.stringify(c.name)).join(', ')
      throw new Error(`parquet column "${name}" not found; available columns: ${available || '(none)'}`)
    }
    return col
  })
}

export async function decodeSource(
  src: ByteSource,
  meta: FileMeta,
  opts?: DecodeOptions,
): Promise<ParquetTable> {
  const selected = selectColumns(meta, opts?.columns)
  const firstRow = firstGroupRow(meta, opts?.fromRow ?? 0)
  const columns: ParquetColumn[] = []
  const slow: { top: TopColumn; col: ParquetColumn }[] = []
  const tailOnly = opts?.skippedRows === 'untouched' ? firstRow : 0
  const alloc = columnAllocator(selected, meta.numRows, tailOnly)
  for (const top of selected) {
    const col = alloc(targetType(top), top.name)
    columns.push(col)
    if (!(await decodeNative(src, meta, top, col, firstRow))) slow.push({ top, col })
  }
  // hyparquet rewrites every row, including any a half-done fast-path attempt left behind; its
  // page screening needs every group's chunks, which a footer parsed from a row may lack.
  if (slow.length > 0) {
    // It writes whole columns, which overlapping tail-only views (columnAllocator) cannot take.
    if (tailOnly > 0) for (const { col } of slow) col.values = alloc(col.type, col.name, true).values
    const whole = meta.rowGroups.some((rg) => rg.chunks.length === 0) ? await readMeta(src) : meta
    await decodeWithHyparquet(src, whole, slow)
  }
  if (opts?.skippedRows !== 'untouched') for (const col of columns) blankRows(col, firstRow)
  return { numRows: meta.numRows, columns, metadata: meta.metadata, firstRow }
}

/** The first row of the row group holding `fromRow` (numRows when fromRow is past the end). */
export function firstGroupRow(meta: FileMeta, fromRow: number): number {
  if (!Number.isSafeInteger(fromRow) || fromRow < 0)
    throw new RangeError(`parquet: fromRow must be a non-negative integer, got ${fromRow}`)
  let at = 0
  for (const rg of meta.rowGroups) {
    if (at + rg.numRows > fromRow) return at
    at += rg.numRows
  }
  return at
}

/** Rows before `firstRow` were not decoded: they read as missing. */
function blankRows(col: ParquetColumn, firstRow: number): void {
  if (firstRow === 0) return
  if (col.type === 'DOUBLE' || col.type === 'FLOAT') col.values.fill(Number.NaN, 0, firstRow)
  else if (col.type === 'STRING') col.values.fill(null, 0, firstRow)
  else col.values.fill(0, 0, firstRow)
}

/** Decodes the column with our own page decoder; false when it needs the hyparquet fallback. */
async function decodeNative(
  src: ByteSource,
  meta: FileMeta,
  c: TopColumn,
  col: ParquetColumn,
  firstRow: number,
): Promise<boolean> {
  if (!isNativeColumn(c, col.type)) return false
  let end = 0
  for (const rg of meta.rowGroups) {
    end += rg.numRows
    if (!decoded(rg, end, firstRow)) continue
    const chunk = rg.chunks[c.leafIndex]
    const plain = chunk.encodings.every((e) => e === Encoding.PLAIN || e === Encoding.RLE)
    if (chunk.codec !== Codec.UNCOMPRESSED || chunk.hasDictionary || !plain || chunk.type !== c.leaf.type)
      return false
    if (chunk.numValues !== rg.numRows) {
      throw new Error(
        `corrupt parquet footer: column "${c.name}" has ${chunk.numValues} values in ${rg.numRows} rows`,
      )
    }
  }
  let at = 0
  try {
    for (const rg of meta.rowGroups) {
      const chunk = rg.chunks[c.leafIndex]
      if (decoded(rg, at + rg.numRows, firstRow))
        decodeChunk(await src.read(chunk.start, chunk.start + chunk.size), rg.numRows, c.leaf, col, at)
      at += rg.numRows
    }
  } catch (err) {
    if (err instanceof UnsupportedChunk) return false
    throw err
  }
  return true
}

/**
 * Whether a group (ending at row `end`) is decoded: it has rows from firstRow on. Groups before
 * firstRow may have been parsed without their chunks; an empty group has nothing to decode.
 */
function decoded(rg: RowGroupMeta, end: number, firstRow: number): boolean {
  return rg.numRows > 0 && end > firstRow
}

/**
 * Allocates the result columns: numeric ones as views into one buffer per type. Thousands of
 * separately allocated arrays (a wide panel) cost more in allocation and garbage collection than
 * the decoding itself.
 *
 * `tailOnly` > 0 (skippedRows 'untouched' from that row): the numeric columns are overlapping
 * views spaced rows − tailOnly apart, each owning only rows [tailOnly, rows), so the buffers hold
 * the decoded rows and nothing more (rows before tailOnly read as other columns' values). A tail
 * read of a long, wide panel then touches as many pages as it decodes values, where disjoint
 * full-length columns touch one or two partial pages per column on top: on a machine where a
 * page fault costs microseconds, that was most of the decoding. `own`: a disjoint column.
 */
function columnAllocator(selected: TopColumn[], rows: number, tailOnly = 0) {
  const counts = new Map<ColumnType, number>()
  for (const top of selected) counts.set(targetType(top), (counts.get(targetType(top)) ?? 0) + 1)
  const used = new Map<ColumnType, number>()
  const first = Math.min(tailOnly, rows)
  const span = rows - first
  const size = (n: number) => (n === 0 ? 0 : n * span + first)
  const f64 = new Float64Array(size(counts.get('DOUBLE') ?? 0))
  const f32 = new Float32Array(size(counts.get('FLOAT') ?? 0))
  const i32 = new Int32Array(size((counts.get('INT32') ?? 0) + (counts.get('DATE') ?? 0)))
  const next = (type: ColumnType): [number, number] => {
    // INT32 and DATE share one buffer.
    const key = type === 'DATE' ? 'INT32' : type
    const k = used.get(key) ?? 0
    used.set(key, k + 1)
    return [k * span, k * span + rows]
  }
  return (type: ColumnType, name: string, own = false): ParquetColumn => {
    switch (type) {
      case 'DOUBLE':
        return { name, type, values: own ? new Float64Array(rows) : f64.subarray(...next(type)) }
      case 'FLOAT':
        return { name, type, values: own ? new Float32Array(rows) : f32.subarray(...next(type)) }
      case 'INT32':
      case 'DATE':
        return { name, type, values: own ? new Int32Array(rows) : i32.subarray(...next(type)) }
      case 'STRING':
        return { name, type, values: new Array<string | null>(rows).fill(null) }
    }
  }
}
