import { type FileHandle, open as openFile } from 'node:fs/promises'
import { floatPage, int64Page, type PageBody, Scratch, stringPage } from './pages.ts'
import { MAGIC } from './types.ts'
import {
  type ColumnSpec,
  dataPageHeader,
  groupsFooter,
  type RowGroup,
  specOfType,
  type WrittenChunk,
} from './write-footer.ts'

/**
 * Writes a Parquet file one row group at a time, for tables too large to hold in memory (the
 * long-panel export). Same page layout as encodeParquet (v1 data pages, PLAIN, RLE definition
 * levels, uncompressed), plus nullable INT64 for integer columns given as Float64Array with NaN
 * for null (the export format asks for INT64 integers).
 */
export type StreamColumn =
  | { name: string; type: 'DOUBLE'; values: Float64Array }
  | { name: string; type: 'INT64'; values: Float64Array }
  | { name: string; type: 'DATE'; values: Int32Array }
  | { name: string; type: 'STRING'; values: (string | null)[] }

export type StreamColumnType = StreamColumn['type']

const specOf = (type: StreamColumnType): ColumnSpec => specOfType(type)

export class ParquetStreamWriter {
  private offset = MAGIC.length
  private readonly groups: RowGroup[] = []
  private readonly scratch = new Scratch()

  private constructor(
    private readonly fh: FileHandle,
    private readonly schema: { name: string; type: StreamColumnType }[],
    private readonly metadata: Record<string, string>,
  ) {}

  static async open(
    path: string,
    schema: { name: string; type: StreamColumnType }[],
    metadata: Record<string, string> = {},
  ) {
    const fh = await openFile(path, 'w')
    await fh.write(MAGIC)
    return new ParquetStreamWriter(fh, schema, metadata)
  }

  async writeRowGroup(columns: StreamColumn[]): Promise<void> {
    if (columns.length !== this.schema.length) throw new Error('parquet: row group does not match the schema')
    const rows = columns.length ? columns[0].values.length : 0
    if (rows === 0) return
    const chunks: WrittenChunk[] = []
    const parts: Uint8Array[] = []
    columns.forEach((col, k) => {
      const want = this.schema[k]
      if (col.name !== want.name || col.type !== want.type)
        throw new Error(`parquet: column ${k} is ${col.name}:${col.type}, expected ${want.name}:${want.type}`)
      if (col.values.length !== rows)
        throw new Error(`parquet: column ${col.name} has ${col.values.length} rows, expected ${rows}`)
      const page = this.page(col, rows)
      const header = dataPageHeader(rows, page.size)
      parts.push(header)
      if (page.levels) parts.push(page.levels)
      parts.push(...page.values)
      const size = header.length + page.size
      chunks.push({
        name: col.name,
        spec: specOf(col.type),
        offset: this.offset,
        size,
        nulls: rows - page.present,
      })
      this.offset += size
    })
    await this.fh.writev(parts)
    this.groups.push({ chunks, rows })
  }

  private page(col: StreamColumn, rows: number): PageBody {
    switch (col.type) {
      case 'DOUBLE':
        return floatPage(col.values, 0, rows, this.scratch)
      case 'INT64':
        return int64Page(col.values, 0, rows, this.scratch)
      case 'DATE': {
        const bytes = new Uint8Array(col.values.buffer, col.values.byteOffset, rows * 4)
        return { rows, present: rows, levels: undefined, values: [bytes], size: bytes.length }
      }
      case 'STRING': {
        const lens = Int32Array.from(col.values, (s) => (s === null ? -1 : Buffer.byteLength(s)))
        return stringPage(col.values, lens, 0, rows, this.scratch)
      }
    }
  }

  async close(): Promise<void> {
    const schema = this.schema.map((s) => ({
      name: s.name,
      spec: specOf(s.type),
      offset: 0,
      size: 0,
      nulls: 0,
    }))
    const footer = groupsFooter(schema, this.groups, this.metadata)
    const tail = new Uint8Array(8)
    new DataView(tail.buffer).setUint32(0, footer.length, true)
    tail.set(MAGIC, 4)
    await this.fh.writev([footer, tail])
    await this.fh.close()
  }
}
