/**
 * Incremental array writes for append-only builds: chunks whose days all lie before `fromDay`
 * are hard-linked from the previous store (no bytes copied), the rest are encoded from the full
 * columns. The result is byte-identical to a fresh write, provided the columns agree with the
 * previous store before `fromDay` (the incremental build's contract).
 */
import { copyFile, link, readdir, readFile } from 'node:fs/promises'
import { join, resolve } from 'node:path'
import { chunkCount, chunkFile, type Grid2D, normalizePath } from './layout.ts'
import { parseNodeJson } from './metadata.ts'
import { runBounded } from './pool.ts'
import type { Array2DSpec, ArrayMeta, Column } from './types.ts'
import {
  DirMaker,
  prepareArrayDir,
  resolveGrid,
  writeArray2D,
  writeArrayJson2D,
  writeChunks2D,
} from './writer.ts'

const LINK_CONCURRENCY = 16

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
  await writeChunks2D(dir, columns, g, (i, k) => i >= linkDayChunks || !reusableK(k))
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
  return node.kind === 'array' && node.separator === '/' ? node.meta : null
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

/** Links every existing chunk file (i < dayChunks, reusable k) of the previous array. */
export async function linkChunks(
  prevDir: string,
  dir: string,
  g: Grid2D,
  dayChunks: number,
  reusableK: (k: number) => boolean,
): Promise<void> {
  const nk = chunkCount(g.symbols, g.cs)
  const pairs: [number, number][] = []
  for (let i = 0; i < dayChunks; i++) {
    // A missing chunk file was all fill; the fresh write would skip it too.
    const names = await readdir(join(prevDir, 'c', String(i))).catch(() => [] as string[])
    for (const name of names) {
      const k = /^\d+$/.test(name) ? Number(name) : -1
      if (k >= 0 && k < nk && reusableK(k)) pairs.push([i, k])
    }
  }
  pairs.sort((a, b) => a[0] - b[0] || a[1] - b[1])
  const made = new DirMaker()
  await runBounded(
    pairs.length,
    LINK_CONCURRENCY,
    () => null,
    async (_, n) => {
      const [i, k] = pairs[n]
      await made.ensure(join(dir, 'c', String(i)))
      await linkOrCopy(chunkFile(prevDir, [i, k]), chunkFile(dir, [i, k]))
    },
  )
}

async function linkOrCopy(from: string, to: string): Promise<void> {
  try {
    await link(from, to)
  } catch (err) {
    if (!NO_LINK.has((err as NodeJS.ErrnoException).code ?? '')) throw err
    await copyFile(from, to)
  }
}
