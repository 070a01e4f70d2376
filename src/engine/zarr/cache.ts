/** The decoded-piece cache of the store readers (and the remote range cache): a ByteLru of columns. */
import { ByteLru } from '../../platform/byte-lru.ts'
import type { Column } from './types.ts'

/** Rough cost of a Map entry, key string and typed-array object, so tiny pieces are not free. */
export const ENTRY_OVERHEAD_BYTES = 160

/** Values must not be mutated once cached: readers hand out copies. */
export function pieceCache(budgetBytes: number): ByteLru<Column> {
  return new ByteLru<Column>(budgetBytes, (_key, v) => v.byteLength + ENTRY_OVERHEAD_BYTES)
}
