/**
 * Ordering kernels shared by the cross-sectional products.
 *
 * A JS comparator per element (`idx.sort((a, b) => …)`) is the obvious way to sort symbols by a
 * key with an index tie-break, but the comparator call dominates. Instead the keys are copied into
 * a Float64Array and sorted by the engine's native numeric sort (no comparator), and every member
 * is then placed at the lower bound of its key in the sorted copy; members that share a key fill
 * the run in the order they are visited. Visiting the members in ascending symbol index makes the
 * tie-break "lower index first" exact. `bench/cross.ts` measures it against the comparator sort.
 */

/**
 * Symbol indices of `members` in rank order: by `keys[member]` descending (or ascending), ties by
 * the members' order in `members` (pass them in ascending symbol index). Keys must not be NaN;
 * -0 and +0 are the same key. Returns a new array of length `n`.
 */
export function orderBy(keys: Float64Array, members: Int32Array, n: number, descending: boolean): Int32Array {
  const k = new Float64Array(n)
  // `+ 0` turns -0 into +0: the native sort orders -0 before +0, a comparator sees them equal.
  if (descending) for (let j = 0; j < n; j++) k[j] = -keys[members[j]] + 0
  else for (let j = 0; j < n; j++) k[j] = keys[members[j]] + 0
  const sorted = k.slice().sort()
  const taken = new Int32Array(n)
  const out = new Int32Array(n)
  for (let j = 0; j < n; j++) {
    const v = k[j]
    let lo = 0
    let hi = n
    while (lo < hi) {
      const mid = (lo + hi) >>> 1
      if (sorted[mid] < v) lo = mid + 1
      else hi = mid
    }
    out[lo + taken[lo]++] = members[j]
  }
  return out
}

/** 1-based position of each ordered member (`ordinal[order[r]] = r + 1`), written into `ordinal`. */
export function writeOrdinals(order: Int32Array, ordinal: Int16Array | Int32Array): void {
  for (let r = 0; r < order.length; r++) ordinal[order[r]] = r + 1
}

/** Largest size a cohort may have: ordinals and sizes are stored as Int16. */
export const MAX_COHORT = 32767

/**
 * Within-group ordinals from an overall order: members keep their relative order inside their
 * group (`group[i]`, -1 = no group), so the group ranking inherits the value order and the index
 * tie-break. Writes the ordinal and the group's size per member; non-grouped members get 0.
 */
export function groupOrdinals(
  order: Int32Array,
  group: Int16Array | Int32Array,
  ordinal: Int16Array,
  size: Int16Array,
): void {
  let maxGroup = -1
  for (let r = 0; r < order.length; r++) {
    const g = group[order[r]]
    if (g > maxGroup) maxGroup = g
  }
  if (maxGroup < 0) return
  const counts = new Int32Array(maxGroup + 1)
  for (let r = 0; r < order.length; r++) {
    const i = order[r]
    const g = group[i]
    if (g >= 0) ordinal[i] = ++counts[g]
  }
  for (let r = 0; r < order.length; r++) {
    const i = order[r]
    const g = group[i]
    if (g >= 0) size[i] = counts[g]
  }
}
