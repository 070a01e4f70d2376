/**
 * Least-recently-used cache of decoded chunk pieces with a byte budget. A Map keeps insertion
 * order, so re-inserting on every hit makes its first key the least recently used.
 */
import type { Column } from './types.ts'

/** Rough cost of a Map entry, key string and typed-array object, so tiny pieces are not free. */
export const ENTRY_OVERHEAD_BYTES = 160

export class ByteLru {
  private readonly entries = new Map<string, Column>()
  private used = 0

  constructor(readonly budgetBytes: number) {}

  get bytes(): number {
    return this.used
  }

  get size(): number {
    return this.entries.size
  }

  get(key: string): Column | undefined {
    const v = this.entries.get(key)
    if (v !== undefined) {
      this.entries.delete(key)
      this.entries.set(key, v)
    }
    return v
  }

  /** Values must not be mutated afterwards: readers hand out copies. */
  set(key: string, value: Column): void {
    const cost = value.byteLength + ENTRY_OVERHEAD_BYTES
    const old = this.entries.get(key)
    if (old !== undefined) {
      this.entries.delete(key)
      this.used -= old.byteLength + ENTRY_OVERHEAD_BYTES
    }
    if (cost > this.budgetBytes) return
    this.entries.set(key, value)
    this.used += cost
    for (const [k, v] of this.entries) {
      if (this.used <= this.budgetBytes) break
      this.entries.delete(k)
      this.used -= v.byteLength + ENTRY_OVERHEAD_BYTES
    }
  }

  clear(): void {
    this.entries.clear()
    this.used = 0
  }
}
