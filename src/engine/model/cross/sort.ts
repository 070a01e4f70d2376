/**
 * Ordering kernels shared by the cross-sectional products.
 *
 * Sorting symbol indices with a JS comparator (`idx.sort((a, b) => …)`) pays a function call
 * per comparison, and even the engine's native numeric sort loses most of its time to
 * mispredicted branches on fresh data. `orderBy` instead maps each key to the high 32 bits of an
 * order-preserving integer image of the double (sign, exponent and 20 mantissa bits) and sorts
 * member positions by that word with a stable three-pass LSD radix sort (11 + 11 + 10 bits):
 * no comparisons at all. Keys that share the high word — exact ties, or keys equal to about six
 * significant digits — end up adjacent, and each such run is re-sorted with the exact comparator
 * (value, then symbol index). The result is exactly the comparator sort's order, several times
 * faster; `bench/cross.ts` measures both (docs/performance.md).
 */

const DIGIT = 2048

/** Reusable working memory for `orderBy` over many rankings of up to `capacity` members. */
export interface OrderScratch {
  packed: Float64Array
  key: Uint32Array
  keyAlt: Uint32Array
  idx: Int32Array
  idxAlt: Int32Array
  hist: Int32Array
}

export function orderScratch(capacity: number): OrderScratch {
  return {
    packed: new Float64Array(capacity),
    key: new Uint32Array(capacity),
    keyAlt: new Uint32Array(capacity),
    idx: new Int32Array(capacity),
    idxAlt: new Int32Array(capacity),
    hist: new Int32Array(3 * DIGIT),
  }
}

const exactCompare = (keys: Float64Array, descending: boolean) => (a: number, b: number) => {
  const ka = keys[a]
  const kb = keys[b]
  return ka === kb ? a - b : descending ? kb - ka : ka - kb
}

/**
 * Symbol indices of `members[0 .. n)` in rank order: by `keys[member]` descending (or ascending),
 * ties by the members' order in `members` (pass them in ascending symbol index). Keys must not be
 * NaN; -0 and +0 are the same key. Returns a new array of length n, or with `scratch` a view into
 * it (valid until its next use).
 */
export function orderBy(
  keys: Float64Array,
  members: Int32Array,
  n: number,
  descending: boolean,
  scratch: OrderScratch = orderScratch(n),
): Int32Array {
  const { packed, hist } = scratch
  let key = scratch.key
  let keyAlt = scratch.keyAlt
  let idx = scratch.idx
  let idxAlt = scratch.idxAlt
  hist.fill(0)
  // `+ 0` turns -0 into +0 (a comparator sees them equal; their bit patterns differ).
  if (descending) for (let j = 0; j < n; j++) packed[j] = -keys[members[j]] + 0
  else for (let j = 0; j < n; j++) packed[j] = keys[members[j]] + 0
  const word = new Uint32Array(packed.buffer, packed.byteOffset, 2 * n) // little-endian: high word odd
  for (let j = 0; j < n; j++) {
    const h = word[2 * j + 1]
    // Negative doubles order by descending magnitude: flip them; lift positives above them.
    const k = h & 0x80000000 ? ~h >>> 0 : (h | 0x80000000) >>> 0
    key[j] = k
    idx[j] = members[j]
    hist[k & 2047]++
    hist[DIGIT + ((k >>> 11) & 2047)]++
    hist[2 * DIGIT + (k >>> 22)]++
  }
  for (let p = 0; p < 3; p++) {
    const base = p * DIGIT
    const shift = p * 11
    if (n === 0 || hist[base + ((key[0] >>> shift) & 2047)] === n) continue // one bucket: no-op
    let sum = 0
    for (let b = 0; b < DIGIT; b++) {
      const c = hist[base + b]
      hist[base + b] = sum
      sum += c
    }
    for (let j = 0; j < n; j++) {
      const pos = hist[base + ((key[j] >>> shift) & 2047)]++
      keyAlt[pos] = key[j]
      idxAlt[pos] = idx[j]
    }
    const k = key
    key = keyAlt
    keyAlt = k
    const i = idx
    idx = idxAlt
    idxAlt = i
  }
  let start = 0
  for (let r = 1; r <= n; r++) {
    if (r < n && key[r] === key[r - 1]) continue
    if (r - start > 1) idx.subarray(start, r).sort(exactCompare(keys, descending))
    start = r
  }
  return idx.subarray(0, n)
}

/** Largest size a cohort may have: ordinals and sizes are stored as Int16. */
export const MAX_COHORT = 32767

/**
 * Relabels group indices (e.g. ETF symbol indices, -1 = none) as 0 .. n-1 in order of first
 * appearance, so per-group counters stay small enough for L1 when ranking.
 */
export function denseGroups(group: Int16Array): { ids: Int16Array; n: number } {
  let max = -1
  for (let i = 0; i < group.length; i++) if (group[i] > max) max = group[i]
  const label = new Int32Array(max + 1).fill(-1)
  const ids = new Int16Array(group.length)
  let n = 0
  for (let i = 0; i < group.length; i++) {
    const g = group[i]
    if (g < 0) ids[i] = -1
    else {
      if (label[g] < 0) label[g] = n++
      ids[i] = label[g]
    }
  }
  return { ids, n }
}

/**
 * Within-group ordinals from an overall order: members keep their relative order inside their
 * group (`group[i]` in [0, nGroups), -1 = no group), so the group ranking inherits the value
 * order and the index tie-break. Writes the ordinal and the group's size per member;
 * non-grouped members get 0.
 */
export function groupOrdinals(
  order: Int32Array,
  group: Int16Array,
  nGroups: number,
  ordinal: Int16Array,
  size: Int16Array,
): void {
  if (nGroups === 0) return
  const counts = new Int32Array(nGroups)
  const seen = new Int32Array(nGroups)
  for (let r = 0; r < order.length; r++) {
    const g = group[order[r]]
    if (g >= 0) counts[g]++
  }
  for (let r = 0; r < order.length; r++) {
    const i = order[r]
    const g = group[i]
    if (g < 0) continue
    ordinal[i] = ++seen[g]
    size[i] = counts[g]
  }
}
