import { CompactWriter, CT } from './thrift.ts'
import {
  Codec,
  ConvertedType,
  Encoding,
  LogicalTypeId,
  PageType,
  PhysicalType,
  Repetition,
  type WritableColumn,
} from './types.ts'

export interface ColumnSpec {
  physical: number
  optional: boolean
  convertedType?: number
  logicalType?: number
  /** Bytes per PLAIN value, or 0 for variable-length byte arrays. */
  width: number
}

export function columnSpec(col: WritableColumn): ColumnSpec {
  return specOfType(col.type)
}

/** Physical layout of each column type. */
export function specOfType(type: WritableColumn['type']): ColumnSpec {
  switch (type) {
    case 'BOOLEAN':
      // PLAIN booleans are bit-packed, so there is no whole-byte width.
      return { physical: PhysicalType.BOOLEAN, optional: true, width: 0 }
    case 'DOUBLE':
      return { physical: PhysicalType.DOUBLE, optional: true, width: 8 }
    case 'FLOAT':
      return { physical: PhysicalType.FLOAT, optional: true, width: 4 }
    case 'INT32':
      return { physical: PhysicalType.INT32, optional: false, width: 4 }
    case 'INT64':
      return { physical: PhysicalType.INT64, optional: true, width: 8 }
    case 'TIMESTAMP_MILLIS':
      return {
        physical: PhysicalType.INT64,
        optional: true,
        convertedType: ConvertedType.TIMESTAMP_MILLIS,
        logicalType: LogicalTypeId.TIMESTAMP,
        width: 8,
      }
    case 'DATE':
      return {
        physical: PhysicalType.INT32,
        optional: false,
        convertedType: ConvertedType.DATE,
        logicalType: LogicalTypeId.DATE,
        width: 4,
      }
    case 'STRING':
      return {
        physical: PhysicalType.BYTE_ARRAY,
        optional: true,
        convertedType: ConvertedType.UTF8,
        logicalType: LogicalTypeId.STRING,
        width: 0,
      }
  }
}

/** What the footer needs to know about one written column chunk. */
export interface WrittenChunk {
  name: string
  spec: ColumnSpec
  offset: number
  size: number
  nulls: number
}

const headerWriter = new CompactWriter(64)

export function dataPageHeader(numValues: number, size: number): Uint8Array {
  const w = headerWriter
  w.reset()
  w.i32(1, PageType.DATA_PAGE)
  w.i32(2, size)
  w.i32(3, size)
  w.beginStruct(5)
  w.i32(1, numValues)
  w.i32(2, Encoding.PLAIN)
  w.i32(3, Encoding.RLE)
  w.i32(4, Encoding.RLE)
  w.end()
  w.end()
  return w.bytes()
}

export interface RowGroup {
  chunks: WrittenChunk[]
  rows: number
}

/** The file footer; `schema` gives the columns, `groups` their chunks per row group. */
export function groupsFooter(
  schema: readonly WrittenChunk[],
  groups: readonly RowGroup[],
  metadata: Record<string, string>,
): Uint8Array {
  const w = new CompactWriter(64 * 1024)
  w.i32(1, 1)
  w.list(2, CT.STRUCT, schema.length + 1)
  w.beginElement()
  w.string(4, 'schema')
  w.i32(5, schema.length)
  w.end()
  for (const c of schema) schemaElementMeta(w, c)
  w.i64(
    3,
    groups.reduce((s, g) => s + g.rows, 0),
  )
  w.list(4, CT.STRUCT, groups.length)
  for (const g of groups) {
    w.beginElement()
    w.list(1, CT.STRUCT, g.chunks.length)
    for (const c of g.chunks) columnChunkMeta(w, c, g.rows)
    const total = g.chunks.reduce((sum, c) => sum + c.size, 0)
    w.i64(2, total)
    w.i64(3, g.rows)
    if (g.chunks.length > 0) w.i64(5, g.chunks[0].offset)
    w.i64(6, total)
    w.end()
  }
  const entries = Object.entries(metadata)
  if (entries.length > 0) {
    w.list(5, CT.STRUCT, entries.length)
    for (const [key, value] of entries) {
      w.beginElement()
      w.string(1, key)
      w.string(2, value)
      w.end()
    }
  }
  w.string(6, 'erm3')
  w.end()
  return w.bytes()
}

function schemaElementMeta(w: CompactWriter, c: WrittenChunk): void {
  w.beginElement()
  w.i32(1, c.spec.physical)
  w.i32(3, c.spec.optional ? Repetition.OPTIONAL : Repetition.REQUIRED)
  w.string(4, c.name)
  if (c.spec.convertedType !== undefined) w.i32(6, c.spec.convertedType)
  if (c.spec.logicalType !== undefined) {
    w.beginStruct(10)
    if (c.spec.logicalType === LogicalTypeId.TIMESTAMP) {
      // The only timestamps written are UTC instants in milliseconds: TimestampType
      // { 1: isAdjustedToUTC, 2: unit (TimeUnit union, field 1 = MILLIS) }.
      w.beginStruct(c.spec.logicalType)
      w.bool(1, true)
      w.beginStruct(2)
      w.emptyStruct(1)
      w.end()
      w.end()
    } else w.emptyStruct(c.spec.logicalType)
    w.end()
  }
  w.end()
}

function columnChunkMeta(w: CompactWriter, c: WrittenChunk, numRows: number): void {
  w.beginElement()
  w.i64(2, c.offset)
  w.beginStruct(3)
  w.i32(1, c.spec.physical)
  const encodings = c.spec.optional ? [Encoding.PLAIN, Encoding.RLE] : [Encoding.PLAIN]
  w.list(2, CT.I32, encodings.length)
  for (const e of encodings) w.listI32(e)
  w.list(3, CT.BINARY, 1)
  w.listString(c.name)
  w.i32(4, Codec.UNCOMPRESSED)
  w.i64(5, numRows)
  w.i64(6, c.size)
  w.i64(7, c.size)
  w.i64(9, c.offset)
  w.beginStruct(12)
  w.i64(3, c.nulls)
  w.end()
  w.end()
  w.end()
}
