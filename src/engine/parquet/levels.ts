/**
 * Definition levels of flat OPTIONAL columns (max level 1) in the RLE/bit-packed hybrid encoding
 * with bit width 1, plus the in-place spreading of densely stored values over null slots.
 */

/** Shorter runs are cheaper bit-packed (1 bit each) than as an RLE run (2+ bytes). */
const MIN_RLE_RUN = 8

/** Worst case of `encodeLevels` output for n levels, including its 4-byte length prefix. */
export function maxEncodedLevelsSize(n: number): number {
  return 4 + Math.ceil(n / 4) + 64
}

/**
 * Writes levels[0..n) (each 0 or 1) into out at pos as a 4-byte little-endian length followed by
 * the hybrid encoding; returns the position after it. Long runs become RLE runs, the rest bit-packed
 * groups of 8 (the final group may be padded, which readers ignore since they know n).
 */
export function encodeLevels(levels: Uint8Array, n: number, out: Uint8Array, pos: number): number {
  const start = pos
  pos += 4
  let i = 0
  while (i < n) {
    const v = levels[i]
    let j = i + 1
    while (j < n && levels[j] === v) j++
    if (j - i >= MIN_RLE_RUN || j === n) {
      pos = writeVarint(out, pos, (j - i) * 2)
      out[pos++] = v
      i = j
      continue
    }
    const from = i
    do i += 8
    while (i < n && !runAtLeast(levels, i, n, MIN_RLE_RUN))
    const groups = (i - from) / 8
    pos = writeVarint(out, pos, groups * 2 + 1)
    out.fill(0, pos, pos + groups)
    const to = Math.min(i, n)
    for (let k = from; k < to; k++) out[pos + ((k - from) >> 3)] |= levels[k] << ((k - from) & 7)
    pos += groups
  }
  // Typed arrays drop out-of-range writes silently; make a broken size bound loud instead.
  if (pos > out.length) throw new Error('parquet encoder bug: definition levels overflowed their buffer')
  const len = pos - start - 4
  out[start] = len & 0xff
  out[start + 1] = (len >>> 8) & 0xff
  out[start + 2] = (len >>> 16) & 0xff
  out[start + 3] = len >>> 24
  return pos
}

function runAtLeast(levels: Uint8Array, i: number, n: number, min: number): boolean {
  if (i + min > n) return false
  const v = levels[i]
  for (let k = i + 1; k < i + min; k++) if (levels[k] !== v) return false
  return true
}

/** Unsigned LEB128 varint (arithmetic past 31 bits); returns the position after it. */
export function writeVarint(out: Uint8Array, pos: number, v: number): number {
  while (v >= 0x80) {
    out[pos++] = (v % 0x80) | 0x80
    v = Math.floor(v / 0x80)
  }
  out[pos++] = v
  return pos
}

/**
 * Decodes n levels from bytes[pos..end) into levels[0..n) and returns how many are 1 (present),
 * or -1 when the stream is truncated or holds a level above 1 (the caller names the column).
 */
export function decodeLevels(
  bytes: Uint8Array,
  pos: number,
  end: number,
  levels: Uint8Array,
  n: number,
): number {
  let i = 0
  let present = 0
  while (i < n) {
    let header = 0
    let scale = 1
    for (let b = 0x80; b >= 0x80; scale *= 0x80) {
      if (pos >= end || scale > 2 ** 35) return -1
      b = bytes[pos++]
      header += (b & 0x7f) * scale
    }
    if (header % 2 === 0) {
      if (pos >= end) return -1
      const v = bytes[pos++]
      if (v > 1) return -1
      const count = Math.min(header / 2, n - i)
      levels.fill(v, i, i + count)
      if (v) present += count
      i += count
    } else {
      const groups = (header - 1) / 2
      if (groups > end - pos) return -1
      const count = Math.min(groups * 8, n - i)
      for (let k = 0; k < count; k++) {
        const bit = (bytes[pos + (k >> 3)] >> (k & 7)) & 1
        levels[i + k] = bit
        present += bit
      }
      pos += groups
      i += count
    }
  }
  return present
}

/**
 * dest[0..present) holds the present values densely; spreads them to their row positions given by
 * levels[0..n) and fills null rows with NaN. Walks backwards run by run, so every move goes to an
 * equal or higher index and nothing is overwritten before it is read.
 */
export function expandNulls(
  dest: Float64Array | Float32Array,
  levels: Uint8Array,
  n: number,
  present: number,
): void {
  let j = present
  let i = n
  while (i > 0) {
    const v = levels[i - 1]
    let s = i - 1
    while (s > 0 && levels[s - 1] === v) s--
    if (v) {
      j -= i - s
      if (j !== s) dest.copyWithin(s, j, j + (i - s))
    } else dest.fill(Number.NaN, s, i)
    i = s
  }
}
