import { type Array2DSpec, type Column, writeArray2D, writeArray2DIncremental } from '../zarr/index.ts'
import type { IncrementalPlan } from './incremental.ts'

/** The previous build an incremental build appends to, and its first new day. */
export interface Append {
  prevDir: string
  from: number
}

export const appendOf = (inc: IncrementalPlan | null): Append | null =>
  inc ? { prevDir: inc.prev.dir, from: inc.from } : null

/**
 * Writes a [day, ·] array into the build directory `dir`; incrementally (old day-chunks
 * hard-linked) when appending, in which case the columns hold only the rewritten days (tail.ts).
 */
export function writer2D(dir: string, inc: Append | null) {
  return (path: string, columns: Column[], spec: Array2DSpec) =>
    inc
      ? writeArray2DIncremental(dir, inc.prevDir, path, columns, spec, inc.from, { requirePrevious: true })
      : writeArray2D(dir, path, columns, spec)
}
