import { compressors } from 'hyparquet-compressors'
import { asStruct, int, optInt } from './footer.ts'
import type { TStruct } from './thrift.ts'
import { CompactReader } from './thrift-reader.ts'
import { PageType } from './types.ts'

/**
 * Sanity checks on a column chunk before hyparquet decodes it. hyparquet trusts page headers and
 * RLE run lengths: on a damaged file an RLE run of 2^30 values makes it grow a plain array until
 * V8 aborts the whole process, which no try/catch can stop. So we walk the pages first and throw
 * an ordinary Error on sizes, counts or runs no valid flat column can have.
 */

/**
 * Writers keep pages to a few MiB, so a header claiming a large page that also inflates from a
 * tiny one is corrupt; rejecting it spares allocating its claimed size.
 */
const MAX_PAGE_BYTES = 1024 * 1024 * 1024
const LARGE_PAGE_BYTES = 64 * 1024 * 1024
const MAX_RATIO = 2048
/** RLE/bit-packed streams may overshoot their value count by the padding of one bit-packed group. */
const RUN_SLACK = 8

const CODECS = ['UNCOMPRESSED', 'SNAPPY', 'GZIP', 'LZO', 'BROTLI', 'LZ4', 'ZSTD', 'LZ4_RAW'] as const
const DICTIONARY_ENCODINGS = new Set([2, 8]) // PLAIN_DICTIONARY, RLE_DICTIONARY

export function checkChunk(
  bytes: Uint8Array,
  rows: number,
  codec: number,
  optional: boolean,
  name: string,
): void {
  const fail = (message: string): never => {
    throw new Error(`corrupt parquet page in column "${name}": ${message}`)
  }
  const inflate = decompressor(codec)
  let pos = 0
  let seen = 0
  while (seen < rows && pos < bytes.length) {
    const r = new CompactReader(bytes, pos, bytes.length, `page header in column "${name}"`)
    const h = r.readStruct()
    pos = r.pos
    const type = int(h, 1, 'page type')
    const raw = int(h, 2, 'uncompressed_page_size')
    const size = int(h, 3, 'compressed_page_size')
    if (size < 0 || size > bytes.length - pos) fail(`${size} bytes overrun the chunk`)
    if (raw < 0 || raw > MAX_PAGE_BYTES || (raw > LARGE_PAGE_BYTES && raw > size * MAX_RATIO)) {
      fail(`implausible page size ${raw} (stored in ${size} bytes)`)
    }
    const page = bytes.subarray(pos, pos + size)
    pos += size
    if (type === PageType.DICTIONARY_PAGE) {
      const dict = asStruct(h[7], 'dictionary_page_header')
      int(dict, 2, 'dictionary encoding')
      const n = int(dict, 1, 'num_values')
      if (n < 0 || n > raw * 8 + 8) fail(`dictionary of ${n} values in ${raw} bytes`)
    } else if (type === PageType.DATA_PAGE || type === PageType.DATA_PAGE_V2) {
      const v2 = type === PageType.DATA_PAGE_V2
      const dh = asStruct(h[v2 ? 8 : 5], 'data page header')
      // hyparquet misbehaves (up to looping forever) when a required field is missing.
      for (const id of v2 ? [2, 3, 4, 5, 6] : [2, 3, 4]) int(dh, id, `data page header field ${id}`)
      const n = int(dh, 1, 'num_values')
      if (n < 0 || n > rows - seen) fail(`${n} values where ${rows - seen} rows remain`)
      let bad: string | undefined
      try {
        bad = v2 ? checkV2(page, dh, raw, n, optional, inflate) : checkV1(page, dh, raw, n, optional, inflate)
      } catch (err) {
        bad = `cannot decompress page (${err instanceof Error ? err.message : String(err)})`
      }
      if (bad) fail(bad)
      seen += n
    }
  }
}

type Inflate = ((input: Uint8Array, outputLength: number) => Uint8Array) | undefined

function decompressor(codec: number): Inflate {
  if (codec === 0) return (input) => input
  const key = CODECS[codec]
  return key === undefined ? undefined : compressors[key]
}

/** Returns a problem description, or undefined when the page looks decodable. */
function checkV1(page: Uint8Array, dh: TStruct, raw: number, n: number, optional: boolean, inflate: Inflate) {
  if (!inflate) return undefined
  const data = inflate(page, raw)
  let off = 0
  if (optional) {
    if (data.length < 4) return 'definition levels are truncated'
    const len = data[0] | (data[1] << 8) | (data[2] << 16) | (data[3] << 24)
    if (len < 0 || len > data.length - 4) return 'definition levels overrun the page'
    if (!runsFit(data, 4, 4 + len, n, 1)) return 'definition level runs do not match the value count'
    off = 4 + len
  }
  return checkValues(data, off, optInt(dh, 2), n)
}

function checkV2(page: Uint8Array, dh: TStruct, raw: number, n: number, optional: boolean, inflate: Inflate) {
  const defLen = optInt(dh, 5) ?? 0
  const repLen = optInt(dh, 6) ?? 0
  if (defLen < 0 || repLen < 0 || defLen + repLen > page.length || defLen + repLen > raw) {
    return 'level sections overrun the page'
  }
  if (optional && !runsFit(page, repLen, repLen + defLen, n, 1))
    return 'definition level runs do not match the value count'
  const rest = page.subarray(repLen + defLen)
  const compressed = dh[7] !== false
  if (compressed && !inflate) return undefined
  const data = compressed && inflate ? inflate(rest, raw - defLen - repLen) : rest
  return checkValues(data, 0, optInt(dh, 4), n)
}

/** Dictionary indices are another RLE/bit-packed stream, prefixed by their bit width. */
function checkValues(
  data: Uint8Array,
  off: number,
  encoding: number | undefined,
  n: number,
): string | undefined {
  if (encoding === undefined || !DICTIONARY_ENCODINGS.has(encoding) || off >= data.length) return undefined
  const width = data[off]
  if (width > 32) return `dictionary index width ${width}`
  return runsFit(data, off + 1, data.length, n, width, false)
    ? undefined
    : 'dictionary index runs exceed the value count'
}

/**
 * Walks an RLE/bit-packed hybrid stream and checks that no run reaches past n values (plus padding)
 * and, if `complete`, that its bytes cover all n: hyparquet would otherwise read on past the end and
 * take the following bytes for run headers. Dictionary indices skip nulls, so they can be fewer.
 */
function runsFit(
  bytes: Uint8Array,
  pos: number,
  end: number,
  n: number,
  width: number,
  complete = true,
): boolean {
  let seen = 0
  while (seen < n && pos < end) {
    let header = 0
    let scale = 1
    for (let b = 0x80; b >= 0x80 && pos < end; scale *= 0x80) {
      b = bytes[pos++]
      header += (b & 0x7f) * scale
    }
    if (header % 2 === 0) {
      seen += header / 2
      if (seen > n + RUN_SLACK) return false
      pos += (width + 7) >> 3
    } else {
      const groups = (header - 1) / 2
      seen += groups * 8
      pos += groups * width
    }
  }
  return !complete || seen >= n
}
