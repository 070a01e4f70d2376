/**
 * Incremental array writes for append-only builds: chunks whose days all lie before `fromDay`
 * are hard-linked from the previous store (no bytes copied). The chunk holding `fromDay` starts
 * from the previous chunk's bytes and takes only days from `fromDay` on from the columns; later
 * chunks are encoded from the columns. So the columns need valid values only from `fromDay` on,
 * and the result is byte-identical to a fresh write whenever the previous store holds what the
 * fresh write would have written before `fromDay` (the incremental build's contract).
 */
import { closeSync, copyFileSync, linkSync, openSync, readdirSync, readSync } from 'node:fs'
import { readFile } from 'node:fs/promises'
import { join, resolve } from 'node:path'
import {
  CHUNK_SEPARATOR,
  chunkCount,
  chunkFile,
  encodeChunk2D,
  type Grid2D,
  normalizePath,
} from './layout.ts'
import { parseNodeJson } from './metadata.ts'
import { type Array2DSpec, type ArrayMeta, bytesOf, type Column, isAllFill } from './types.ts'
import {
  type ChunkEncoder,
  prepareArrayDir,
  resolveGrid,
  writeArray2D,
  writeArrayJson2D,
  writeChunks2D,
} from './writer.ts'

/** Errors meaning "this file system cannot hard-link here": fall back to copying. */
const NO_LINK = new Set(['EXDEV', 'EPERM', 'ENOTSUP', 'EOPNOTSUPP', 'EMLINK', 'ENOSYS'])

export async function writeArray2DIncremental(
  root: string,
  prevRoot: string,
  path: string,
  columns: Column[],
  spec: Array2DSpec,
  fromDay: number,
  /** Fail instead of writing everything when the previous array is missing or laid out differently:
   * for callers whose columns hold only the days from `fromDay`'s chunk on. */
  opts: { requirePrevious?: boolean } = {},
): Promise<void> {
  const g = resolveGrid(columns, spec, path)
  if (!Number.isSafeInteger(fromDay) || fromDay < 0 || fromDay > g.days)
    throw new RangeError(`zarr: ${path}: fromDay ${fromDay} is outside [0, ${g.days}]`)
  if (resolve(root) === resolve(prevRoot))
    throw new Error(`zarr: ${path}: incremental write needs a new root, not the previous store itself`)
  const prevDir = join(prevRoot, normalizePath(path))
  const prev = await readPrevMeta(prevDir, path)
  if (!prev || !sameLayout(prev, g)) {
    if (opts.requirePrevious)
      throw new Error(`zarr: ${path}: the previous store has no array of this layout to extend`)
    return writeArray2D(root, path, columns, spec)
  }

  const [prevDays, prevSymbols] = prev.shape
  // Only full day-chunks that were already full in the previous store and stay full now.
  const linkDayChunks = Math.floor(Math.min(fromDay, prevDays, g.days) / g.cd)
  // A symbol-chunk is reusable when it covers the same symbols (and the same padding) as before.
  const reusableK = (k: number) =>
    Math.min((k + 1) * g.cs, g.symbols) === Math.min((k + 1) * g.cs, prevSymbols)
  const dir = await prepareArrayDir(root, path)
  await writeArrayJson2D(dir, g, spec)
  await linkChunks(prevDir, dir, g, linkDayChunks, reusableK)
  const from = Math.min(fromDay, prevDays)
  const encode = appendEncoder(prevDir, columns, g, from, reusableK)
  await writeChunks2D(dir, columns, g, (i, k) => i >= linkDayChunks || !reusableK(k), encode)
}

/**
 * Encodes chunks for an append from day `from`: the chunk holding `from` (when it is not the
 * first day of a chunk) is the previous array's chunk with days from `from` on overwritten;
 * any other chunk is encoded from the columns. Days past the previous array's end were padding
 * (fill) in its chunk, as they are in a fresh write past the new end.
 */
export function appendEncoder(
  prevDir: string,
  columns: readonly Column[],
  g: Grid2D,
  from: number,
  reusableK: (k: number) => boolean,
): ChunkEncoder {
  const seam = from % g.cd === 0 ? -1 : Math.floor(from / g.cd)
  return (i, k, out) => {
    if (i !== seam || !reusableK(k)) return encodeChunk2D(columns, g, i, k, out)
    if (!readWhole(chunkFile(prevDir, [i, k]), bytesOf(out))) out.fill(g.fill)
    const d0 = i * g.cd
    const end = Math.min(g.days, d0 + g.cd)
    const last = Math.min(g.cs, g.symbols - k * g.cs)
    for (let jl = 0; jl < last; jl++)
      out.set(columns[k * g.cs + jl].subarray(from, end), jl * g.cd + (from - d0))
    return !isAllFill(out, g.fill)
  }
}

/**
 * Reads a chunk file into `buf`; false when it does not exist (an all-fill chunk). Synchronous:
 * from the page cache a chunk read takes less than a thread-pool round trip.
 */
function readWhole(file: string, buf: Uint8Array): boolean {
  let fd: number
  try {
    fd = openSync(file, 'r')
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false
    throw err
  }
  try {
    let done = 0
    while (done < buf.length) {
      const n = readSync(fd, buf, done, buf.length - done, done)
      if (n === 0) throw new Error(`zarr: chunk file ${file} is shorter than the chunk shape`)
      done += n
    }
    return true
  } finally {
    closeSync(fd)
  }
}

async function readPrevMeta(prevDir: string, path: string): Promise<ArrayMeta | null> {
  const file = join(prevDir, 'zarr.json')
  let text: string
  try {
    text = await readFile(file, 'utf8')
  } catch {
    return null
  }
  const node = parseNodeJson(text, normalizePath(path), file)
  // Chunks are linked by their file names: only an array of the separator written here.
  return node.kind === 'array' && node.separator === CHUNK_SEPARATOR ? node.meta : null
}

function sameLayout(prev: ArrayMeta, g: Grid2D): boolean {
  return (
    prev.shape.length === 2 &&
    prev.dtype === g.dtype &&
    prev.chunks[0] === g.cd &&
    prev.chunks[1] === g.cs &&
    Object.is(prev.fillValue, g.fill)
  )
}

/**
 * Links every existing chunk file (i < dayChunks, reusable k) of the previous array ("c.<i>.<k>"
 * beside its zarr.json: one directory listing, no directory to make). The links are synchronous
 * on purpose: thousands of link(2) calls on cached metadata take microseconds each, far less
 * than a thread-pool round trip per call (docs/performance.md). Async so callers need not
 * change should that ever be otherwise.
 */
export async function linkChunks(
  prevDir: string,
  dir: string,
  g: Grid2D,
  dayChunks: number,
  reusableK: (k: number) => boolean,
): Promise<void> {
  const nk = chunkCount(g.symbols, g.cs)
  let names: string[]
  try {
    names = readdirSync(prevDir)
  } catch {
    return
  }
  // A chunk tree of "/" keys (an older layout) would leave this array without its old days.
  if (names.includes('c')) throw new Error(`zarr: ${prevDir} has "/" chunk keys: it cannot be appended to`)
  // A missing chunk file was all fill; the fresh write would skip it too.
  for (const name of names) {
    const m = /^c\.(\d+)\.(\d+)$/.exec(name)
    if (!m) continue
    const i = Number(m[1])
    const k = Number(m[2])
    if (i < dayChunks && k < nk && reusableK(k)) linkOrCopy(join(prevDir, name), chunkFile(dir, [i, k]))
  }
}

function linkOrCopy(from: string, to: string): void {
  try {
    linkSync(from, to)
  } catch (err) {
    if (!NO_LINK.has((err as NodeJS.ErrnoException).code ?? '')) throw err
    copyFileSync(from, to)
  }
}
