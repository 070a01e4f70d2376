/**
 * Least-recently-used map with a byte budget. A Map keeps insertion order, so re-inserting on
 * every hit makes its first key the least recently used; entries go from the front until the
 * costs fit the budget. An entry costing more than the whole budget is not kept.
 */
export class ByteLru<V> {
  private readonly entries = new Map<string, V>()
  private used = 0

  /** `costOf` must give the same figure for an entry every time (it is asked again on eviction). */
  constructor(
    readonly budgetBytes: number,
    private readonly costOf: (key: string, value: V) => number,
  ) {}

  get bytes(): number {
    return this.used
  }

  get size(): number {
    return this.entries.size
  }

  get(key: string): V | undefined {
    const v = this.entries.get(key)
    if (v !== undefined) {
      this.entries.delete(key)
      this.entries.set(key, v)
    }
    return v
  }

  /** Replaces any entry of the key; false when the value alone is over the budget (not kept). */
  set(key: string, value: V): boolean {
    this.delete(key)
    const cost = this.costOf(key, value)
    if (cost > this.budgetBytes) return false
    this.entries.set(key, value)
    this.used += cost
    for (const [k, v] of this.entries) {
      if (this.used <= this.budgetBytes) break
      this.entries.delete(k)
      this.used -= this.costOf(k, v)
    }
    return true
  }

  delete(key: string): void {
    const old = this.entries.get(key)
    if (old === undefined) return
    this.entries.delete(key)
    this.used -= this.costOf(key, old)
  }

  clear(): void {
    this.entries.clear()
    this.used = 0
  }
}

/** Rough cost of a Map entry, key string and typed-array object, so tiny pieces are not free. */
export const ENTRY_OVERHEAD_BYTES = 160

/** A ByteLru of typed arrays, each costing its bytes plus ENTRY_OVERHEAD_BYTES. */
export function typedArrayLru<V extends ArrayBufferView>(budgetBytes: number): ByteLru<V> {
  return new ByteLru<V>(budgetBytes, (_key, v) => v.byteLength + ENTRY_OVERHEAD_BYTES)
}
