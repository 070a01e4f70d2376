/**
 * Writes groups and uncompressed Zarr v3 arrays into a directory the caller owns (it creates and
 * renames it atomically). Output depends only on the input, so two writes of the same data are
 * byte-identical; chunks holding only the fill value are not written.
 */
import { mkdir, readdir, rm, unlink, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { chunkCount, chunkFile, encodeChunk2D, type Grid2D, normalizePath } from './layout.ts'
import { arrayJson, checkFill, groupJson } from './metadata.ts'
import { runBounded } from './pool.ts'
import {
  type Array2DSpec,
  allocColumn,
  assertLittleEndian,
  bytesOf,
  type Column,
  ColumnPool,
  DTYPES,
  defaultFill,
  dtypeOf,
  isAllFill,
} from './types.ts'

const DEFAULT_CHUNK_DAYS = 256
const DEFAULT_CHUNK_SYMBOLS = 256
/** One chunk file for the 1-D arrays we keep (dates, per-symbol metadata), up to 1 Mi values. */
const MAX_DEFAULT_CHUNK_1D = 1 << 20
/** Chunk files in flight: enough to keep libuv's 4 threads busy while we encode the next one. */
const WRITE_CONCURRENCY = 8

export async function writeGroup(
  root: string,
  path: string,
  attributes: Record<string, unknown>,
): Promise<void> {
  const dir = join(root, normalizePath(path))
  await mkdir(dir, { recursive: true })
  await writeFile(join(dir, 'zarr.json'), groupJson(attributes))
}

export async function writeArray1D(
  root: string,
  path: string,
  data: Column,
  opts: { chunk?: number; attributes?: Record<string, unknown> } = {},
): Promise<void> {
  assertLittleEndian()
  const dtype = dtypeOf(data)
  const chunk = opts.chunk ?? Math.max(1, Math.min(data.length, MAX_DEFAULT_CHUNK_1D))
  checkPositiveInt(chunk, 'chunk')
  const fill = defaultFill(dtype)
  const dir = await prepareArrayDir(root, path)
  const meta = { shape: [data.length], dtype, chunks: [chunk], fillValue: fill, dimensionNames: null }
  await writeFile(join(dir, 'zarr.json'), arrayJson({ ...meta, attributes: opts.attributes ?? {} }))
  const n = chunkCount(data.length, chunk)
  await runBounded(
    n,
    WRITE_CONCURRENCY,
    () => allocColumn(dtype, chunk),
    async (buf, c) => {
      const part = data.subarray(c * chunk, (c + 1) * chunk)
      buf.set(part)
      buf.fill(fill, part.length)
      if (isAllFill(buf, fill)) return
      await writeFile(chunkFile(dir, [c]), bytesOf(buf))
    },
  )
}

/** columns[i] = symbol i's values for days [0, days); all same dtype as spec. */
export async function writeArray2D(
  root: string,
  path: string,
  columns: Column[],
  spec: Array2DSpec,
): Promise<void> {
  assertLittleEndian()
  const g = resolveGrid(columns, spec, path)
  const dir = await prepareArrayDir(root, path)
  await writeArrayJson2D(dir, g, spec)
  await writeChunks2D(dir, columns, g, () => true)
}

export function resolveGrid(columns: readonly Column[], spec: Array2DSpec, path: string): Grid2D {
  const { dtype, days, symbols } = spec
  if (!Object.hasOwn(DTYPES, dtype)) throw new TypeError(`zarr: ${path}: unsupported dtype ${String(dtype)}`)
  checkNonNegInt(days, 'days')
  checkNonNegInt(symbols, 'symbols')
  const cd = spec.chunkDays ?? DEFAULT_CHUNK_DAYS
  const cs = spec.chunkSymbols ?? DEFAULT_CHUNK_SYMBOLS
  checkPositiveInt(cd, 'chunkDays')
  checkPositiveInt(cs, 'chunkSymbols')
  // Store float32 fills as float32 values, so the all-fill test and the metadata agree exactly.
  const raw = spec.fillValue ?? defaultFill(dtype)
  const fill = dtype === 'float32' ? Math.fround(raw) : raw
  checkFill(dtype, fill, `${path}: fillValue`)
  if (columns.length !== symbols)
    throw new RangeError(`zarr: ${path}: ${columns.length} columns given for ${symbols} symbols`)
  columns.forEach((col, j) => {
    if (dtypeOf(col) !== dtype)
      throw new TypeError(`zarr: ${path}: column ${j} is ${dtypeOf(col)}, not ${dtype}`)
    if (col.length !== days)
      throw new RangeError(`zarr: ${path}: column ${j} has ${col.length} days, not ${days}`)
  })
  return { dtype, days, symbols, cd, cs, fill }
}

export async function writeArrayJson2D(dir: string, g: Grid2D, spec: Array2DSpec): Promise<void> {
  const json = arrayJson({
    shape: [g.days, g.symbols],
    dtype: g.dtype,
    chunks: [g.cd, g.cs],
    fillValue: g.fill,
    attributes: spec.attributes ?? {},
    dimensionNames: spec.dimensionNames ?? ['day', 'symbol'],
  })
  await writeFile(join(dir, 'zarr.json'), json)
}

/** Fills `out` with chunk (i, k); false when it holds only fill values (it is then not written). */
export type ChunkEncoder = (i: number, k: number, out: Column) => boolean | Promise<boolean>

/**
 * What chunk writes can share across calls (a build writes each array block by block): the chunk
 * buffers, so a block does not allocate (and leave V8 to collect) buffers of its own. Writes that
 * share one must not run concurrently with more than WRITE_CONCURRENCY buffers each in flight.
 */
export class ChunkScratch extends ColumnPool {}

/** Encodes and writes every chunk (i, k) for which `want(i, k)`, skipping all-fill chunks. */
export async function writeChunks2D(
  dir: string,
  columns: readonly Column[],
  g: Grid2D,
  want: (i: number, k: number) => boolean,
  encode: ChunkEncoder = (i, k, out) => encodeChunk2D(columns, g, i, k, out),
  scratch: ChunkScratch = new ChunkScratch(),
): Promise<void> {
  const nk = chunkCount(g.symbols, g.cs)
  const jobs: number[] = []
  for (let i = 0; i < chunkCount(g.days, g.cd); i++)
    for (let k = 0; k < nk; k++) if (want(i, k)) jobs.push(i * nk + k)
  const used: Column[] = []
  const take = () => {
    const buf = scratch.take(g.dtype, g.cd * g.cs)
    used.push(buf)
    return buf
  }
  try {
    await runBounded(jobs.length, WRITE_CONCURRENCY, take, async (buf, n) => {
      const i = Math.floor(jobs[n] / nk)
      const k = jobs[n] % nk
      if (!(await encode(i, k, buf))) return
      await writeFile(chunkFile(dir, [i, k]), bytesOf(buf))
    })
  } finally {
    scratch.give(used)
  }
}

/**
 * Creates the array directory and, when it existed, removes any old chunks in it (a chunk tree
 * of "/" keys, or "c." files): a stale chunk would shadow the fill value, and writing through an
 * old hard link would corrupt the previous store. A directory just made (a new build's) has none.
 */
export async function prepareArrayDir(root: string, path: string): Promise<string> {
  const dir = join(root, normalizePath(path))
  if ((await mkdir(dir, { recursive: true })) !== undefined) return dir
  await rm(join(dir, 'c'), { recursive: true, force: true })
  const stale = (await readdir(dir)).filter((name) => name.startsWith('c.'))
  await Promise.all(stale.map((name) => unlink(join(dir, name))))
  return dir
}

function checkPositiveInt(v: number, what: string): void {
  if (!Number.isSafeInteger(v) || v < 1)
    throw new RangeError(`zarr: ${what} must be a positive integer, got ${v}`)
}

function checkNonNegInt(v: number, what: string): void {
  if (!Number.isSafeInteger(v) || v < 0)
    throw new RangeError(`zarr: ${what} must be a non-negative integer, got ${v}`)
}
