import { encodeLevels, maxEncodedLevelsSize, writeVarint } from './levels.ts'

/** The body of one data page: encoded definition levels (if OPTIONAL) and the PLAIN values as byte parts. */
export interface PageBody {
  rows: number
  present: number
  levels: Uint8Array | undefined
  /** Views into the caller's arrays where possible, so writing a file copies each value only once. */
  values: Uint8Array[]
  size: number
}

/** Buffers reused from page to page; sized for the largest page seen. */
export class Scratch {
  levels = new Uint8Array(0)
  encoded = new Uint8Array(0)
  bounds = new Int32Array(0)
  private capacity = -1

  fit(rows: number): void {
    if (this.capacity >= rows) return
    this.capacity = rows
    this.levels = new Uint8Array(rows)
    this.bounds = new Int32Array(maxRuns(rows) + 1)
    this.encoded = new Uint8Array(Math.max(maxEncodedLevelsSize(rows), 6 * this.bounds.length + 4))
  }
}

/** Past this many runs the hybrid encoder (with bit-packing) beats one RLE run per null/present stretch. */
function maxRuns(rows: number): number {
  return (rows >> 4) + 2
}

export function densePage(values: Int32Array, start: number, end: number): PageBody {
  const part = bytesOf(values, start, end)
  return { rows: end - start, present: end - start, levels: undefined, values: [part], size: part.length }
}

/** OPTIONAL float page; NaN is null. */
export function floatPage(
  values: Float64Array | Float32Array,
  start: number,
  end: number,
  scratch: Scratch,
): PageBody {
  const rows = end - start
  scratch.fit(rows)
  const runs = floatRuns(values, start, end, scratch.bounds, maxRuns(rows))
  if (runs < 0) return scatteredFloatPage(values, start, end, scratch)
  const { bounds, encoded } = scratch
  // biome-ignore lint/suspicious/noSelfCompare: NaN test
  let present = rows > 0 && values[start] === values[start] ? 1 : 0
  const parts: Uint8Array[] = []
  let pos = 4
  let s = start
  let count = 0
  for (let r = 0; r < runs; r++) {
    const e = bounds[r]
    pos = writeVarint(encoded, pos, (e - s) * 2)
    encoded[pos++] = present
    if (present) {
      parts.push(bytesOf(values, s, e))
      count += e - s
    }
    present ^= 1
    s = e
  }
  writeU32(encoded, 0, pos - 4)
  return body(rows, count, encoded.slice(0, pos), parts)
}

/** Ends of the alternating present/absent runs, or -1 when there are more than `max` of them. */
function floatRuns(
  values: Float64Array | Float32Array,
  start: number,
  end: number,
  bounds: Int32Array,
  max: number,
) {
  if (start === end) return 0
  let runs = 0
  // biome-ignore lint/suspicious/noSelfCompare: NaN test
  let cur = values[start] === values[start]
  for (let i = start + 1; i < end; i++) {
    const v = values[i]
    // biome-ignore lint/suspicious/noSelfCompare: NaN test
    if ((v === v) !== cur) {
      if (runs === max) return -1
      bounds[runs++] = i
      cur = !cur
    }
  }
  bounds[runs++] = end
  return runs
}

function scatteredFloatPage(
  values: Float64Array | Float32Array,
  start: number,
  end: number,
  scratch: Scratch,
) {
  const { levels, encoded } = scratch
  const dense = values instanceof Float64Array ? new Float64Array(end - start) : new Float32Array(end - start)
  let j = 0
  for (let i = start; i < end; i++) {
    const v = values[i]
    // biome-ignore lint/suspicious/noSelfCompare: NaN test
    const p = v === v ? 1 : 0
    levels[i - start] = p
    dense[j] = v
    j += p
  }
  const len = encodeLevels(levels, end - start, encoded, 0)
  return body(end - start, j, encoded.slice(0, len), [bytesOf(dense, 0, j)])
}

/** OPTIONAL UTF-8 page; lens[i] is the byte length of values[i], or -1 for null. */
export function stringPage(
  values: (string | null)[],
  lens: Int32Array,
  start: number,
  end: number,
  scratch: Scratch,
): PageBody {
  scratch.fit(end - start)
  const { levels, encoded } = scratch
  let present = 0
  let size = 0
  for (let i = start; i < end; i++) {
    const p = lens[i] >= 0 ? 1 : 0
    levels[i - start] = p
    present += p
    size += p * (4 + lens[i])
  }
  const out = Buffer.allocUnsafe(size)
  let pos = 0
  for (let i = start; i < end; i++) {
    const s = values[i]
    if (s === null) continue
    pos = out.writeUInt32LE(lens[i], pos)
    pos += out.write(s, pos, lens[i], 'utf8')
  }
  const len = encodeLevels(levels, end - start, encoded, 0)
  return body(end - start, present, encoded.slice(0, len), [new Uint8Array(out.buffer, out.byteOffset, size)])
}

/** OPTIONAL INT64 page from integer-valued doubles (INT64, TIMESTAMP_MILLIS); NaN is null. */
export function int64Page(values: Float64Array, start: number, end: number, scratch: Scratch): PageBody {
  const rows = end - start
  scratch.fit(rows)
  const { levels, encoded } = scratch
  const dense = new BigInt64Array(rows)
  let j = 0
  for (let i = start; i < end; i++) {
    const v = values[i]
    // biome-ignore lint/suspicious/noSelfCompare: NaN test
    const p = v === v ? 1 : 0
    levels[i - start] = p
    if (p) dense[j++] = BigInt(Math.trunc(v))
  }
  const len = encodeLevels(levels, rows, encoded, 0)
  return body(rows, j, encoded.slice(0, len), [new Uint8Array(dense.buffer, 0, j * 8)])
}

/** OPTIONAL BOOLEAN page; PLAIN booleans are bit-packed, least significant bit first. */
export function booleanPage(
  values: (boolean | null)[],
  start: number,
  end: number,
  scratch: Scratch,
): PageBody {
  const rows = end - start
  scratch.fit(rows)
  const { levels, encoded } = scratch
  const bits = new Uint8Array(Math.ceil(rows / 8))
  let j = 0
  for (let i = start; i < end; i++) {
    const v = values[i]
    levels[i - start] = v === null ? 0 : 1
    if (v === null) continue
    if (v) bits[j >> 3] |= 1 << (j & 7)
    j++
  }
  const len = encodeLevels(levels, rows, encoded, 0)
  return body(rows, j, encoded.slice(0, len), [bits.subarray(0, Math.ceil(j / 8))])
}

function body(rows: number, present: number, levels: Uint8Array | undefined, values: Uint8Array[]): PageBody {
  let size = levels?.length ?? 0
  for (const v of values) size += v.length
  return { rows, present, levels, values, size }
}

function bytesOf(values: Float64Array | Float32Array | Int32Array, start: number, end: number): Uint8Array {
  const w = values.BYTES_PER_ELEMENT
  return new Uint8Array(values.buffer, values.byteOffset + start * w, (end - start) * w)
}

function writeU32(out: Uint8Array, pos: number, v: number): void {
  out[pos] = v & 0xff
  out[pos + 1] = (v >>> 8) & 0xff
  out[pos + 2] = (v >>> 16) & 0xff
  out[pos + 3] = v >>> 24
}
