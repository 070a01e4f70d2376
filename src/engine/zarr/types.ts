/**
 * Value types of the model store's Zarr v3 arrays. A 2-D array is logically [day, symbol]; the
 * API hands data around as per-symbol columns because that is how the model kernels produce it.
 */
import { endianness } from 'node:os'

export type DType = 'float64' | 'float32' | 'int32' | 'int16' | 'int8' | 'uint8'
export type Column = Float64Array | Float32Array | Int32Array | Int16Array | Int8Array | Uint8Array

export interface Array2DSpec {
  dtype: DType
  days: number
  symbols: number
  chunkDays?: number
  chunkSymbols?: number
  /** Default: NaN for floats, 0 for integers. */
  fillValue?: number
  attributes?: Record<string, unknown>
  /** The two axes' names in zarr.json (default day, symbol). */
  dimensionNames?: [string, string]
}

/** What the reader knows about one array, parsed once from its zarr.json. */
export interface ArrayMeta {
  path: string
  shape: number[]
  dtype: DType
  chunks: number[]
  fillValue: number
  attributes: Record<string, unknown>
  dimensionNames: (string | null)[] | null
}

interface ColumnCtor {
  new (length: number): Column
  new (buffer: ArrayBufferLike, byteOffset: number, length: number): Column
  readonly BYTES_PER_ELEMENT: number
}

interface DTypeInfo {
  ctor: ColumnCtor
  itemSize: number
  float: boolean
  min: number
  max: number
}

export const DTYPES: Readonly<Record<DType, DTypeInfo>> = {
  float64: { ctor: Float64Array, itemSize: 8, float: true, min: -Infinity, max: Infinity },
  float32: { ctor: Float32Array, itemSize: 4, float: true, min: -Infinity, max: Infinity },
  int32: { ctor: Int32Array, itemSize: 4, float: false, min: -(2 ** 31), max: 2 ** 31 - 1 },
  int16: { ctor: Int16Array, itemSize: 2, float: false, min: -(2 ** 15), max: 2 ** 15 - 1 },
  int8: { ctor: Int8Array, itemSize: 1, float: false, min: -128, max: 127 },
  uint8: { ctor: Uint8Array, itemSize: 1, float: false, min: 0, max: 255 },
}

export function isDType(s: unknown): s is DType {
  return typeof s === 'string' && Object.hasOwn(DTYPES, s)
}

export function dtypeOf(col: Column): DType {
  if (col instanceof Float64Array) return 'float64'
  if (col instanceof Float32Array) return 'float32'
  if (col instanceof Int32Array) return 'int32'
  if (col instanceof Int16Array) return 'int16'
  if (col instanceof Int8Array) return 'int8'
  if (col instanceof Uint8Array && !(col instanceof Uint8ClampedArray)) return 'uint8'
  throw new TypeError('zarr: column is not a Float64/Float32/Int32/Int16/Int8/Uint8 array')
}

export function defaultFill(dtype: DType): number {
  return DTYPES[dtype].float ? Number.NaN : 0
}

export function allocColumn(dtype: DType, length: number, fill = 0): Column {
  const col = new DTYPES[dtype].ctor(length)
  if (!Object.is(fill, 0)) col.fill(fill)
  return col
}

/**
 * Buffers handed back for reuse, by dtype and length. A fresh buffer's first write costs a page
 * fault per page (about 13 µs on the 2-core virtual machines of docs/performance.md) and V8 has
 * to collect it afterwards; a reused one costs neither.
 */
export class ColumnPool {
  private readonly free = new Map<string, Column[]>()
  take(dtype: DType, length: number): Column {
    return this.free.get(`${dtype}:${length}`)?.pop() ?? allocColumn(dtype, length)
  }
  give(bufs: readonly Column[]): void {
    for (const b of bufs) {
      const key = `${dtypeOf(b)}:${b.length}`
      const list = this.free.get(key)
      if (list) list.push(b)
      else this.free.set(key, [b])
    }
  }
}

/** The raw bytes behind a typed array (no copy). */
export function bytesOf(col: Column): Uint8Array {
  return new Uint8Array(col.buffer, col.byteOffset, col.byteLength)
}

/**
 * Chunk bytes are little-endian on disk and we copy them straight into typed arrays, which use
 * the host byte order; a big-endian host would silently read garbage, so refuse outright.
 */
export function assertLittleEndian(): void {
  if (endianness() !== 'LE') throw new Error('zarr: this store implementation needs a little-endian host')
}

/**
 * Whether every value equals the fill value. NaN fill matches any NaN; otherwise compares with
 * Object.is so -0 is not taken for a fill of +0 (a skipped chunk would read back as +0).
 */
export function isAllFill(col: Column, fill: number): boolean {
  const n = col.length
  if (Number.isNaN(fill)) {
    for (let i = 0; i < n; i++) if (!Number.isNaN(col[i])) return false
    return true
  }
  if (fill === 0) {
    for (let i = 0; i < n; i++) if (!Object.is(col[i], fill)) return false
    return true
  }
  for (let i = 0; i < n; i++) if (col[i] !== fill) return false
  return true
}
