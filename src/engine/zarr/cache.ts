/** The decoded-piece cache of the store readers: a ByteLru of columns (as the remote range cache). */
import { type ByteLru, typedArrayLru } from '../../platform/byte-lru.ts'
import type { Column } from './types.ts'

/** Values must not be mutated once cached: readers hand out copies. */
export function pieceCache(budgetBytes: number): ByteLru<Column> {
  return typedArrayLru<Column>(budgetBytes)
}
