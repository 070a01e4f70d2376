/** Generators and comparison helpers for the Zarr store tests. */
import assert from 'node:assert/strict'
import { readdir, readFile } from 'node:fs/promises'
import { join, relative } from 'node:path'
import { FileSystemStore } from '@zarrita/storage'
import * as zarr from 'zarrita'
import type { Array2DSpec, Column, DType } from '../../src/engine/zarr/index.ts'
import * as fc from '../helpers/fc.ts'

export const DTYPE_LIST: DType[] = ['float64', 'float32', 'int32', 'int16', 'int8', 'uint8']

const CTORS = {
  float64: Float64Array,
  float32: Float32Array,
  int32: Int32Array,
  int16: Int16Array,
  int8: Int8Array,
  uint8: Uint8Array,
} as const

const RANGE: Record<DType, [number, number]> = {
  float64: [0, 0],
  float32: [0, 0],
  int32: [-(2 ** 31), 2 ** 31 - 1],
  int16: [-32768, 32767],
  int8: [-128, 127],
  uint8: [0, 255],
}

export function makeColumn(dtype: DType, values: readonly number[]): Column {
  return CTORS[dtype].from(values)
}

export interface Case2D {
  spec: Array2DSpec
  columns: Column[]
  /** The fill the columns' leading runs use (the spec's, or the dtype default). */
  fill: number
}

function valueArb(dtype: DType, fill: number): fc.Arbitrary<number> {
  const isFloat = dtype.startsWith('float')
  const [min, max] = RANGE[dtype]
  const any = isFloat ? (dtype === 'float64' ? fc.double() : fc.float()) : fc.integer({ min, max })
  return fc.oneof({ arbitrary: fc.constant(fill), weight: 1 }, { arbitrary: any, weight: 4 })
}

function fillArb(dtype: DType): fc.Arbitrary<number | undefined> {
  if (dtype.startsWith('float')) return fc.constantFrom(undefined, Number.NaN, 0, 1.5)
  const [min, max] = RANGE[dtype]
  return fc.oneof(fc.constant(undefined), fc.constant(0), fc.integer({ min, max }))
}

/** Random [day, symbol] arrays: odd shapes, empty axes, leading fill runs (pre-listing days). */
export const case2DArb: fc.Arbitrary<Case2D> = fc
  .record({
    dtype: fc.constantFrom(...DTYPE_LIST),
    days: fc.oneof(fc.constant(1), fc.integer({ min: 0, max: 40 })),
    symbols: fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 14 })),
    chunkDays: fc.integer({ min: 1, max: 12 }),
    chunkSymbols: fc.integer({ min: 1, max: 6 }),
  })
  .chain((s) =>
    fillArb(s.dtype).chain((fillValue) => {
      const fill = fillValue ?? (s.dtype.startsWith('float') ? Number.NaN : 0)
      const col = fc.tuple(
        fc.integer({ min: 0, max: s.days }),
        fc.array(valueArb(s.dtype, fill), { minLength: s.days, maxLength: s.days }),
      )
      return fc.array(col, { minLength: s.symbols, maxLength: s.symbols }).map((cols) => ({
        spec: { ...s, fillValue, attributes: { units: 'test', n: s.days } },
        fill,
        columns: cols.map(([lead, vals]) =>
          makeColumn(
            s.dtype,
            vals.map((v, d) => (d < lead ? fill : v)),
          ),
        ),
      }))
    }),
  )

export function assertSameColumn(actual: Column, expected: Column, what: string): void {
  assert.equal(actual.constructor, expected.constructor, `${what}: type`)
  assert.equal(actual.length, expected.length, `${what}: length`)
  for (let i = 0; i < expected.length; i++) {
    if (!Object.is(actual[i], expected[i]))
      assert.fail(`${what}[${i}]: got ${actual[i]}, want ${expected[i]}`)
  }
}

/** Reads a whole array with zarrita, the independent reader, as nested [day][symbol]. */
export async function zarritaRead(
  root: string,
  path: string,
): Promise<{ shape: number[]; at: (idx: number[]) => number }> {
  const arr = await zarr.open(zarr.root(new FileSystemStore(root)).resolve(path), { kind: 'array' })
  // zarrita 0.7 opens empty arrays but its get() throws on a zero-length axis.
  if (arr.shape.includes(0)) return { shape: arr.shape, at: () => Number.NaN }
  const got = await zarr.get(
    arr,
    arr.shape.map(() => null),
  )
  const data = got.data as unknown as ArrayLike<number>
  return {
    shape: got.shape,
    at: (idx) => data[idx.reduce((o, x, a) => o + x * got.stride[a], 0)],
  }
}

export async function zarritaAttrs(root: string, path: string): Promise<Record<string, unknown>> {
  const node = await zarr.open(zarr.root(new FileSystemStore(root)).resolve(path), { kind: 'group' })
  return node.attrs
}

/** The chunk files of the array at `dir` ("c.<i>.<k>" beside its zarr.json), sorted. */
export async function chunkFiles(dir: string): Promise<string[]> {
  return (await listFiles(dir)).filter((f) => f.startsWith('c.'))
}

/** Every file under dir, relative and sorted. */
export async function listFiles(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true })
  return entries
    .filter((e) => e.isFile())
    .map((e) => relative(dir, join(e.parentPath, e.name)))
    .sort()
}

export async function assertSameTree(a: string, b: string): Promise<void> {
  const fa = await listFiles(a)
  assert.deepEqual(fa, await listFiles(b))
  for (const f of fa) {
    const [x, y] = await Promise.all([readFile(join(a, f)), readFile(join(b, f))])
    assert.ok(x.equals(y), `file ${f} differs`)
  }
}
