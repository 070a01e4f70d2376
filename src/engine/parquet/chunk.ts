import { asStruct, int, type SchemaNode } from './footer.ts'
import { decodeLevels, expandNulls } from './levels.ts'
import { CompactReader } from './thrift-reader.ts'
import { Encoding, PageType, type ParquetColumn, PhysicalType, Repetition } from './types.ts'

/** The chunk uses a feature the fast path does not implement; the caller falls back to hyparquet. */
export class UnsupportedChunk extends Error {}

let levelScratch = new Uint8Array(1024)

/**
 * Decodes one column chunk of `rows` rows (uncompressed PLAIN v1 data pages) into col.values
 * starting at row `at`. Everything is synchronous, so the shared scratch buffer is safe to reuse.
 */
export function decodeChunk(
  bytes: Uint8Array,
  rows: number,
  leaf: SchemaNode,
  col: ParquetColumn,
  at: number,
): void {
  const optional = leaf.repetition !== Repetition.REQUIRED
  const what = `page in column "${col.name}"`
  let pos = 0
  let done = 0
  while (done < rows) {
    const r = new CompactReader(bytes, pos, bytes.length, `${what} header`)
    const h = r.readStruct()
    pos = r.pos
    const type = int(h, 1, 'page type')
    const size = int(h, 3, 'compressed_page_size')
    if (size < 0 || size > bytes.length - pos)
      throw new Error(`corrupt parquet ${what}: ${size} bytes overrun the chunk`)
    if (type === PageType.INDEX_PAGE) {
      pos += size
      continue
    }
    if (type !== PageType.DATA_PAGE || int(h, 2, 'uncompressed_page_size') !== size)
      throw new UnsupportedChunk()
    const dph = asStruct(h[5], 'data_page_header')
    const n = int(dph, 1, 'num_values')
    if (n < 0 || n > rows - done)
      throw new Error(`corrupt parquet ${what}: ${n} values where ${rows - done} remain`)
    if (int(dph, 2, 'encoding') !== Encoding.PLAIN) throw new UnsupportedChunk()
    if (optional && int(dph, 3, 'definition_level_encoding') !== Encoding.RLE) throw new UnsupportedChunk()
    decodePage(bytes.subarray(pos, pos + size), n, optional, leaf.type ?? -1, col, at + done)
    done += n
    pos += size
  }
}

function decodePage(
  page: Uint8Array,
  n: number,
  optional: boolean,
  physical: number,
  col: ParquetColumn,
  at: number,
) {
  let present = n
  let values = page
  let levels: Uint8Array | undefined
  if (optional) {
    if (page.length < 4) corrupt(col, 'definition levels are truncated')
    const len = page[0] | (page[1] << 8) | (page[2] << 16) | (page[3] << 24)
    if (len < 0 || len > page.length - 4) corrupt(col, 'definition levels overrun the page')
    if (levelScratch.length < n) levelScratch = new Uint8Array(n)
    levels = levelScratch
    present = decodeLevels(page, 4, 4 + len, levels, n)
    if (present < 0) corrupt(col, 'invalid or truncated definition levels')
    values = page.subarray(4 + len)
  }
  switch (col.type) {
    case 'DOUBLE':
      if (physical === PhysicalType.INT32) intsToDoubles(col, values, at, n, present, levels)
      else floats(col, values, at, n, present, levels)
      return
    case 'FLOAT':
      floats(col, values, at, n, present, levels)
      return
    case 'INT32':
    case 'DATE':
      if (present < n)
        throw new Error(`parquet column "${col.name}" has nulls, which a ${col.type} column cannot hold`)
      copyDense(col, col.values, values, at, n)
      return
    case 'STRING':
      strings(col, col.values, values, at, n, levels)
  }
}

function floats(
  col: ParquetColumn & { values: Float64Array | Float32Array },
  values: Uint8Array,
  at: number,
  n: number,
  present: number,
  levels: Uint8Array | undefined,
): void {
  copyDense(col, col.values, values, at, present)
  if (present < n) expandNulls(col.values.subarray(at, at + n), levels!, n, present)
}

/** Copies `count` PLAIN values into dest[at..]; a byte copy, since the source offset may be unaligned. */
function copyDense(
  col: ParquetColumn,
  dest: Float64Array | Float32Array | Int32Array,
  values: Uint8Array,
  at: number,
  count: number,
): void {
  const w = dest.BYTES_PER_ELEMENT
  if (count * w > values.length) corrupt(col, `${count} values do not fit the page`)
  new Uint8Array(dest.buffer, dest.byteOffset + at * w, count * w).set(values.subarray(0, count * w))
}

function intsToDoubles(
  col: ParquetColumn & { values: Float64Array },
  values: Uint8Array,
  at: number,
  n: number,
  present: number,
  levels: Uint8Array | undefined,
): void {
  const ints = new Int32Array(present)
  copyDense(col, ints, values, 0, present)
  const dest = col.values
  let j = 0
  for (let i = 0; i < n; i++) dest[at + i] = levels && !levels[i] ? Number.NaN : ints[j++]
}

function strings(
  col: ParquetColumn,
  dest: (string | null)[],
  values: Uint8Array,
  at: number,
  n: number,
  levels: Uint8Array | undefined,
): void {
  const buf = Buffer.from(values.buffer, values.byteOffset, values.length)
  let p = 0
  for (let i = 0; i < n; i++) {
    if (levels && !levels[i]) {
      dest[at + i] = null
      continue
    }
    if (p + 4 > buf.length) corrupt(col, 'string values overrun the page')
    const len = buf.readUInt32LE(p)
    p += 4
    if (len > buf.length - p) corrupt(col, 'string values overrun the page')
    dest[at + i] = buf.toString('utf8', p, p + len)
    p += len
  }
}

function corrupt(col: ParquetColumn, message: string): never {
  throw new Error(`corrupt parquet page in column "${col.name}": ${message}`)
}
