import { CT, type TStruct, type TValue } from './thrift.ts'
import { CompactReader } from './thrift-reader.ts'
import { MAGIC, MAX_ROWS, Repetition } from './types.ts'

export interface SchemaNode {
  name: string
  type?: number
  repetition?: number
  numChildren: number
  convertedType?: number
  logical?: TStruct
}

interface ChunkMeta {
  type: number
  codec: number
  encodings: number[]
  numValues: number
  /** First byte of the chunk (dictionary page if any, else first data page) and its length. */
  start: number
  size: number
  hasDictionary: boolean
  /** path_in_schema: the names from the root's child down to this chunk's leaf. */
  path: string[]
  /** The statistics' null count, when the writer recorded one. */
  nulls?: number
}

export interface RowGroupMeta {
  numRows: number
  /** Empty for a group the footer was parsed without (all its rows lie before `fromRow`). */
  chunks: ChunkMeta[]
}

/** A top-level column: a leaf directly under the root, or a nested group (which we cannot decode). */
export interface TopColumn {
  name: string
  leaf: SchemaNode
  /** Index of its (first) leaf, which is also its column chunk index in every row group. */
  leafIndex: number
  nested: boolean
}

export interface FileMeta {
  numRows: number
  columns: TopColumn[]
  rowGroups: RowGroupMeta[]
  metadata: Record<string, string>
}

const text = new TextDecoder()

/** Validates the 8-byte file tail and returns the footer length it announces. */
export function footerLength(tail: Uint8Array, fileSize: number): number {
  if (fileSize < 12) throw new Error(`not a parquet file: only ${fileSize} bytes`)
  for (let i = 0; i < 4; i++) {
    if (tail[4 + i] !== MAGIC[i]) throw new Error('not a parquet file: no PAR1 magic at the end (truncated?)')
  }
  const len = tail[0] | (tail[1] << 8) | (tail[2] << 16) | (tail[3] << 24)
  if (len <= 0 || len > fileSize - 12) {
    throw new Error(`corrupt parquet file: footer length ${len} does not fit a ${fileSize}-byte file`)
  }
  return len
}

export function checkHeadMagic(head: Uint8Array): void {
  for (let i = 0; i < 4; i++) {
    if (head[i] !== MAGIC[i]) throw new Error('not a parquet file: no PAR1 magic at the start')
  }
}

/**
 * Parses the footer. With `fromRow`, row groups whose rows all lie before it keep only their row
 * count: a wide file's footer holds one column-chunk record per column and group, and building
 * them all took longer than decoding the groups a tail read wants.
 */
export function parseFooter(bytes: Uint8Array, fileSize: number, fromRow = 0): FileMeta {
  const r = new CompactReader(bytes, 0, bytes.length, 'footer')
  const fm: TStruct = {}
  let groups: RowGroupMeta[] | undefined
  r.forEachField((id, type) => {
    if (id === 4 && type === CT.LIST) groups = rowGroupsFrom(r, fromRow, fileSize)
    else fm[id] = r.readValue(type)
  })
  const numRows = int(fm, 3, 'num_rows')
  if (numRows < 0 || numRows > MAX_ROWS) throw new Error(`corrupt parquet footer: num_rows ${numRows}`)
  const schema = list(fm, 2, 'schema').map(schemaNode)
  const rowGroups = groups ?? []
  const total = rowGroups.reduce((sum, rg) => sum + rg.numRows, 0)
  if (total !== numRows)
    throw new Error(`corrupt parquet footer: row groups hold ${total} rows, file says ${numRows}`)
  const metadata: Record<string, string> = {}
  for (const kv of optList(fm, 5)) {
    const s = asStruct(kv, 'key_value_metadata')
    const value = s[2] === undefined ? '' : str(s, 2, 'value')
    // defineProperty, so a key such as "__proto__" stays an ordinary entry.
    Object.defineProperty(metadata, str(s, 1, 'key'), {
      value,
      enumerable: true,
      writable: true,
      configurable: true,
    })
  }
  const columns = topColumns(schema)
  const seen = new Set<string>()
  for (const c of columns) {
    if (seen.has(c.name))
      throw new Error(`corrupt parquet footer: duplicate column name ${JSON.stringify(c.name)}`)
    seen.add(c.name)
  }
  const paths = leafPaths(schema)
  for (const rg of rowGroups) {
    if (rg.chunks.length !== paths.length && !(rg.chunks.length === 0 && skippable(rowGroups, rg, fromRow))) {
      throw new Error(
        `corrupt parquet footer: row group has ${rg.chunks.length} chunks for ${paths.length} columns`,
      )
    }
    // Readers find a chunk's column by this path; one that names another column would be read twice.
    rg.chunks.forEach((chunk, i) => {
      if (chunk.path.join('\0') !== paths[i].join('\0')) {
        throw new Error(
          `corrupt parquet footer: column chunk ${i} is for ${JSON.stringify(chunk.path.join('.'))}, the schema says ${JSON.stringify(paths[i].join('.'))}`,
        )
      }
    })
  }
  return { numRows, columns, rowGroups, metadata }
}

/** The path of every leaf, in schema order (the order of the column chunks in a row group). */
function leafPaths(schema: SchemaNode[]): string[][] {
  const out: string[][] = []
  // Iterative walk (a damaged schema can nest as deep as it is long): each frame is a group's
  // path and how many of its children are still to come.
  const stack: { path: string[]; left: number }[] = [{ path: [], left: schema[0].numChildren }]
  for (let idx = 1; stack.length > 0; ) {
    const top = stack[stack.length - 1]
    if (top.left === 0) {
      stack.pop()
      continue
    }
    top.left--
    const node = schema[idx++]
    if (!node) throw new Error('corrupt parquet footer: schema ends early')
    const path = [...top.path, node.name]
    if (node.numChildren === 0) out.push(path)
    else stack.push({ path, left: node.numChildren })
  }
  return out
}

function topColumns(schema: SchemaNode[]): TopColumn[] {
  if (schema.length === 0) throw new Error('corrupt parquet footer: empty schema')
  const columns: TopColumn[] = []
  let idx = 1
  let leafIndex = 0
  for (let c = 0; c < schema[0].numChildren; c++) {
    const node = schema[idx]
    if (!node) throw new Error('corrupt parquet footer: schema ends early')
    const start = leafIndex
    // Walk this column's subtree to find where the next sibling starts.
    let pending = 1
    while (pending > 0) {
      const n = schema[idx++]
      if (!n) throw new Error('corrupt parquet footer: schema ends early')
      pending += n.numChildren - 1
      if (n.numChildren === 0) leafIndex++
    }
    const nested = node.numChildren > 0 || node.repetition === Repetition.REPEATED
    columns.push({ name: node.name, leaf: node, leafIndex: start, nested })
  }
  return columns
}

function schemaNode(v: TValue): SchemaNode {
  const s = asStruct(v, 'schema element')
  const numChildren = s[5] === undefined ? 0 : int(s, 5, 'num_children')
  if (numChildren < 0) throw new Error('corrupt parquet footer: negative num_children')
  return {
    name: str(s, 4, 'name'),
    type: optInt(s, 1),
    repetition: optInt(s, 3),
    numChildren,
    convertedType: optInt(s, 6),
    logical: s[10] === undefined ? undefined : asStruct(s[10], 'logicalType'),
  }
}

/** The row-group list; groups ending at or before fromRow are stepped over, keeping their row count. */
function rowGroupsFrom(r: CompactReader, fromRow: number, fileSize: number): RowGroupMeta[] {
  const { type, size } = r.listHeader()
  if (type !== CT.STRUCT) r.fail('row groups are not structs')
  const out: RowGroupMeta[] = []
  let at = 0
  for (let g = 0; g < size; g++) {
    const start = r.pos
    let numRows = -1
    r.forEachField((id, t) => {
      if (id === 3 && t !== CT.STRUCT) numRows = Number(r.readValue(t))
      else r.skipValue(t)
    })
    if (!Number.isSafeInteger(numRows) || numRows < 0 || numRows > MAX_ROWS)
      throw new Error(`corrupt parquet footer: row group num_rows ${numRows}`)
    if (fromRow > 0 && at + numRows <= fromRow) out.push({ numRows, chunks: [] })
    else {
      const end = r.pos
      r.pos = start
      out.push(rowGroup(r.readValue(CT.STRUCT), fileSize))
      r.pos = end
    }
    at += numRows
  }
  return out
}

/** A group parsed without its chunks: one that ends at or before fromRow. */
function skippable(groups: RowGroupMeta[], rg: RowGroupMeta, fromRow: number): boolean {
  let at = 0
  for (const g of groups) {
    if (g === rg) return fromRow > 0 && at + g.numRows <= fromRow
    at += g.numRows
  }
  return false
}

function rowGroup(v: TValue, fileSize: number): RowGroupMeta {
  const s = asStruct(v, 'row group')
  const numRows = int(s, 3, 'row group num_rows')
  if (numRows < 0 || numRows > MAX_ROWS)
    throw new Error(`corrupt parquet footer: row group num_rows ${numRows}`)
  return { numRows, chunks: list(s, 1, 'columns').map((c) => columnChunk(c, fileSize)) }
}

function columnChunk(v: TValue, fileSize: number): ChunkMeta {
  const cc = asStruct(v, 'column chunk')
  if (cc[1] !== undefined) throw new Error('unsupported parquet file: column chunk stored in another file')
  const m = asStruct(cc[3], 'column metadata')
  const dataPage = int(m, 9, 'data_page_offset')
  const dictPage = optInt(m, 11)
  const hasDictionary = dictPage !== undefined && dictPage > 0
  const start = hasDictionary ? Math.min(dictPage, dataPage) : dataPage
  const size = int(m, 7, 'total_compressed_size')
  if (start < 4 || size < 0 || start + size > fileSize) {
    throw new Error(
      `corrupt parquet footer: column chunk at ${start}+${size} lies outside the ${fileSize}-byte file`,
    )
  }
  return {
    type: int(m, 1, 'type'),
    codec: int(m, 4, 'codec'),
    encodings: list(m, 2, 'encodings').map((e) => (typeof e === 'number' ? e : -1)),
    numValues: int(m, 5, 'num_values'),
    start,
    size,
    hasDictionary,
    path: list(m, 3, 'path_in_schema').map((p) => {
      if (!(p instanceof Uint8Array))
        throw new Error('corrupt parquet metadata: path_in_schema holds a non-string')
      return text.decode(p)
    }),
    nulls: m[12] === undefined ? undefined : optInt(asStruct(m[12], 'statistics'), 3),
  }
}

export function asStruct(v: TValue | undefined, what: string): TStruct {
  if (typeof v !== 'object' || v === null || Array.isArray(v) || v instanceof Uint8Array) {
    throw new Error(`corrupt parquet metadata: ${what} is missing or not a struct`)
  }
  return v
}

export function int(s: TStruct, id: number, what: string): number {
  const v = s[id]
  if (typeof v !== 'number') throw new Error(`corrupt parquet metadata: ${what} is missing or not an integer`)
  return v
}

export function optInt(s: TStruct, id: number): number | undefined {
  const v = s[id]
  return typeof v === 'number' ? v : undefined
}

function str(s: TStruct, id: number, what: string): string {
  const v = s[id]
  if (!(v instanceof Uint8Array))
    throw new Error(`corrupt parquet metadata: ${what} is missing or not a string`)
  return text.decode(v)
}

function list(s: TStruct, id: number, what: string): TValue[] {
  const v = s[id]
  if (!Array.isArray(v)) throw new Error(`corrupt parquet metadata: ${what} is missing or not a list`)
  return v
}

function optList(s: TStruct, id: number): TValue[] {
  const v = s[id]
  return Array.isArray(v) ? v : []
}
