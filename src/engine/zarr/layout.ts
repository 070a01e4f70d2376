/**
 * Where values live inside chunk files. A 2-D chunk [cd days, cs symbols] is stored after the
 * transpose codec (order [1,0]) as C-order [cs, cd]: symbol jl's cd days start at byte
 * jl * cd * itemSize. Chunks at the array edge still have the full chunk shape (Zarr v3), padded
 * with the fill value.
 */
import { sep } from 'node:path'
import { type Column, type DType, isAllFill } from './types.ts'

/**
 * The chunk key separator erm3 writes: "c.<i>.<k>" files beside the array's zarr.json, so an
 * array is one directory whatever its chunk count (a directory per day-chunk cost a mkdir of
 * about 0.15–0.3 ms each on the machines of docs/performance.md, 1,400 of them per build).
 * Readers take each array's separator from its zarr.json, so stores written with "/" still read.
 */
export const CHUNK_SEPARATOR = '.'

export function chunkKey(indices: readonly number[], separator: '/' | '.' = CHUNK_SEPARATOR): string {
  let key = 'c'
  for (const x of indices) key += separator + x
  return key
}

/** Plain concatenation, not path.join: this runs for every read and `arrayDir` is normalised. */
export function chunkFile(
  arrayDir: string,
  indices: readonly number[],
  separator: '/' | '.' = CHUNK_SEPARATOR,
): string {
  return `${arrayDir}${sep}${chunkKey(indices, separator)}`
}

export function chunkCount(extent: number, chunk: number): number {
  return Math.ceil(extent / chunk)
}

/** A node path relative to the store root: "" for the root, else segments joined by "/". */
export function normalizePath(path: string): string {
  const trimmed = path.replace(/^\/+|\/+$/g, '')
  if (trimmed === '') return ''
  for (const seg of trimmed.split('/')) {
    // "c" would collide with chunk keys only inside arrays, but "..", "." and "__" are reserved.
    if (seg === '' || seg === '.' || seg === '..' || seg.startsWith('__') || /[\\\0]/.test(seg))
      throw new Error(`zarr: invalid node path ${JSON.stringify(path)}`)
  }
  return trimmed
}

export interface Grid2D {
  dtype: DType
  days: number
  symbols: number
  cd: number
  cs: number
  fill: number
}

/**
 * Fills `out` (length cd*cs) with chunk (i, k) of the per-symbol `columns`; returns false when
 * the chunk holds only fill values (such chunks are not written). Copies whole day runs with
 * TypedArray.set, which is a memmove for same-typed arrays.
 */
export function encodeChunk2D(
  columns: readonly Column[],
  g: Grid2D,
  i: number,
  k: number,
  out: Column,
): boolean {
  const d0 = i * g.cd
  const dn = Math.min(g.cd, g.days - d0)
  for (let jl = 0; jl < g.cs; jl++) {
    const j = k * g.cs + jl
    const base = jl * g.cd
    if (j < g.symbols) {
      out.set(columns[j].subarray(d0, d0 + dn), base)
      if (dn < g.cd) out.fill(g.fill, base + dn, base + g.cd)
    } else {
      out.fill(g.fill, base, base + g.cd)
    }
  }
  return !isAllFill(out, g.fill)
}

/** Scatters decoded chunk (i, k) into per-symbol columns covering all days. */
export function decodeChunk2D(chunk: Column, g: Grid2D, i: number, k: number, columns: Column[]): void {
  const d0 = i * g.cd
  const dn = Math.min(g.cd, g.days - d0)
  const jn = Math.min(g.cs, g.symbols - k * g.cs)
  for (let jl = 0; jl < jn; jl++) {
    const base = jl * g.cd
    columns[k * g.cs + jl].set(chunk.subarray(base, base + dn), d0)
  }
}

/** Gathers day `dl` (chunk-local) of every symbol in chunk k into `out`, a whole-row column. */
export function gatherRow(chunk: Column, g: Grid2D, k: number, dl: number, out: Column): void {
  const s0 = k * g.cs
  const jn = Math.min(g.cs, g.symbols - s0)
  for (let jl = 0; jl < jn; jl++) out[s0 + jl] = chunk[jl * g.cd + dl]
}
