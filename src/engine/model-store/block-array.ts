import { join } from 'node:path'
import { appendEncoder, linkChunks } from '../zarr/incremental.ts'
import type { Array2DSpec, Column } from '../zarr/index.ts'
import { chunkCount, normalizePath } from '../zarr/layout.ts'
import { allocColumn } from '../zarr/types.ts'
import {
  ChunkScratch,
  prepareArrayDir,
  resolveGrid,
  writeArrayJson2D,
  writeChunks2D,
} from '../zarr/writer.ts'
import { chunkSymbolsFor } from './layout.ts'

/**
 * A 2-D [day, symbol] array written one block of symbols at a time, so a build never holds the
 * whole panel of a field in memory. Its symbol chunk is the store's (chunkSymbolsFor) unless the
 * spec names one. Blocks must start on a chunk boundary of the symbol axis;
 * the chunk files a block writes are exactly those of a one-shot write of the same data.
 */
export class BlockArray {
  private constructor(
    private readonly dir: string,
    private readonly spec: Required<Pick<Array2DSpec, 'chunkSymbols'>> & Array2DSpec,
    private readonly filler: Column,
    /** An append to the previous build's array: its directory and the first new day. */
    private readonly append: { prevDir: string; fromDay: number } | null = null,
    /** Chunk buffers and made directories, shared by the arrays of one build (ChunkScratch). */
    private readonly scratch = new ChunkScratch(),
  ) {}

  /** Day-chunks below this index were hard-linked from the previous build: never rewritten. */
  private get linkedDayChunks(): number {
    return this.append ? Math.floor(this.append.fromDay / (this.spec.chunkDays ?? 256)) : 0
  }

  /**
   * Like `create`, but hard-links every chunk of the previous build's array whose days all lie
   * before `fromDay` (same symbols and layout required); blocks then write only the rest, and
   * need values only from `fromDay` on (the chunk holding it keeps the previous days' bytes).
   */
  static async createIncremental(
    root: string,
    prevRoot: string,
    path: string,
    spec: Array2DSpec,
    fromDay: number,
    scratch = new ChunkScratch(),
  ): Promise<BlockArray> {
    const fresh = await BlockArray.create(root, path, spec, scratch)
    const cd = spec.chunkDays ?? 256
    const linked = Math.floor(fromDay / cd)
    const g = resolveGrid(
      Array.from({ length: spec.symbols }, () => fresh.filler),
      fresh.spec,
      path,
    )
    const prevDir = join(prevRoot, normalizePath(path))
    await linkChunks(prevDir, fresh.dir, g, linked, () => true)
    return new BlockArray(fresh.dir, fresh.spec, fresh.filler, { prevDir, fromDay }, scratch)
  }

  static async create(
    root: string,
    path: string,
    spec: Array2DSpec,
    scratch = new ChunkScratch(),
  ): Promise<BlockArray> {
    const filler = allocColumn(
      spec.dtype,
      spec.days,
      spec.fillValue ?? (spec.dtype.startsWith('float') ? Number.NaN : 0),
    )
    const full = { ...spec, chunkSymbols: spec.chunkSymbols ?? chunkSymbolsFor(spec.symbols) }
    const g = resolveGrid(
      Array.from({ length: spec.symbols }, () => filler),
      full,
      path,
    )
    const dir = await prepareArrayDir(root, path)
    await writeArrayJson2D(dir, g, full)
    return new BlockArray(dir, full, filler, null, scratch)
  }

  /** Writes symbols [first, first + columns.length); `skip(i, k)` leaves chunk (i, k) alone (already linked). */
  async writeBlock(
    first: number,
    columns: Column[],
    skip: (i: number, k: number) => boolean = () => false,
  ): Promise<void> {
    const cs = this.spec.chunkSymbols
    if (first % cs !== 0) throw new RangeError(`block must start on a chunk boundary (${cs}), got ${first}`)
    const all: Column[] = new Array(this.spec.symbols).fill(this.filler)
    for (let k = 0; k < columns.length; k++) all[first + k] = columns[k]
    const g = resolveGrid(all, this.spec, this.dir)
    const k0 = first / cs
    const k1 = chunkCount(first + columns.length, cs)
    const linked = this.linkedDayChunks
    // An append takes the days before fromDay of its first chunk from the previous build, so
    // the columns need values only from fromDay on.
    const encode = this.append
      ? appendEncoder(this.append.prevDir, all, g, this.append.fromDay, () => true)
      : undefined
    const want = (i: number, k: number) => k >= k0 && k < k1 && i >= linked && !skip(i, k)
    await writeChunks2D(this.dir, all, g, want, encode, this.scratch)
  }
}
