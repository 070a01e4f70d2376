/**
 * Reads the model store with positioned reads of only the bytes a request needs: one symbol's
 * day run inside each chunk for a column, whole chunks for a row. File handles stay open and
 * decoded pieces are cached, both bounded LRUs.
 */
import { access } from 'node:fs/promises'
import { join } from 'node:path'
import type { ByteLru } from '../../platform/byte-lru.ts'
import { AppError } from '../../platform/errors.ts'
import type { BlobReader } from '../object-store/types.ts'
import { pieceCache } from './cache.ts'
import { FilePool, preadFully, preadFullySync } from './files.ts'
import {
  chunkCount,
  chunkFile,
  chunkKey,
  decodeChunk2D,
  type Grid2D,
  gatherRow,
  normalizePath,
} from './layout.ts'
import { ZarrFormatError } from './metadata.ts'
import { runBounded } from './pool.ts'
import { type ArrayMeta, allocColumn, assertLittleEndian, bytesOf, type Column, ColumnPool } from './types.ts'
import { type ArrayNode, type StoreTree, walkListing, walkStore } from './walk.ts'

export interface ZarrStoreReader {
  meta(path: string): ArrayMeta
  attributes(path: string): Record<string, unknown>
  /** One symbol's days [from, to). */
  readColumn(path: string, symbol: number, from?: number, to?: number): Promise<Column>
  /** One day across all symbols. */
  readRow(path: string, day: number): Promise<Column>
  readArray1D(path: string): Promise<Column>
  /** The whole array as per-symbol columns (incremental builds, export). */
  readAll2D(path: string): Promise<Column[]>
  /**
   * Days [from, to) of symbols [first, first + targets.length) into `targets` (at the same day
   * offsets), reading each needed chunk once: the bulk path for incremental builds.
   */
  readInto(path: string, first: number, from: number, to: number, targets: Column[]): Promise<void>
  close(): Promise<void>
}

export interface OpenOptions {
  /** Budget of the decoded-piece cache; default 256 MiB. */
  cacheBytes?: number
  /** Open chunk files kept; default 4096 (Node raises the fd soft limit to the hard limit). */
  maxOpenFiles?: number
  /**
   * Read column runs (≤ one chunk's days of one symbol) with blocking preads: faster and steadier
   * than the thread pool when the page cache is warm, but stalls the event loop on a cold disk.
   * Whole-chunk reads stay asynchronous. Default false.
   */
  blockingReads?: boolean
}

const READ_ALL_CONCURRENCY = 8

/**
 * Where chunk bytes come from: local chunk files (positioned reads on pooled descriptors) or a
 * remote store (range requests). `whole` says the read is a whole chunk rather than one
 * symbol's day run.
 */
interface ChunkIo {
  /** Bytes of `file` from `pos` into `dst`: the count read (short only at its end), undefined when it is absent. */
  read(file: string, dst: Uint8Array, pos: number, whole: boolean): Promise<number | undefined>
  close(): Promise<void>
}

class LocalChunks implements ChunkIo {
  constructor(
    private readonly files: FilePool,
    private readonly preadRun: (fd: number, buf: Uint8Array, pos: number) => Promise<number>,
  ) {}

  read(file: string, dst: Uint8Array, pos: number, whole: boolean): Promise<number | undefined> {
    const pread = whole ? preadFully : this.preadRun
    return this.files.use(file, (fd) => pread(fd, dst, pos))
  }

  close(): Promise<void> {
    return this.files.close()
  }
}

/**
 * Chunks of a published store: one range request per run or chunk (the BlobReader caches them).
 * The build's file listing answers "absent" (an all-fill chunk) without a request.
 */
class RemoteChunks implements ChunkIo {
  constructor(
    private readonly blobs: BlobReader,
    private readonly files: ReadonlyMap<string, number>,
  ) {}

  async read(file: string, dst: Uint8Array, pos: number): Promise<number | undefined> {
    if (!this.files.has(file)) return undefined
    const got = await this.blobs.getRange(file, pos, dst.length)
    if (got === null) return undefined
    dst.set(got.subarray(0, dst.length))
    return Math.min(got.length, dst.length)
  }

  async close(): Promise<void> {}
}

export async function openZarrStore(root: string, opts: OpenOptions = {}): Promise<ZarrStoreReader> {
  assertLittleEndian()
  const tree = await walkStore(root)
  const cache = pieceCache(opts.cacheBytes ?? 256 * 2 ** 20)
  const pread = opts.blockingReads ? preadFullySync : preadFully
  // The root's metadata is the sentinel of a store's existence (a bare array tree may have none).
  const rootMeta = join(root, 'zarr.json')
  const sentinel = await access(rootMeta).then(
    () => rootMeta,
    () => null,
  )
  const files = new FilePool(opts.maxOpenFiles ?? 4096, sentinel)
  return new StoreReader(root, tree, cache, new LocalChunks(files, pread))
}

/**
 * A store under key `root` of a remote BlobReader, whose objects (keys relative to the reader,
 * with sizes) are `files`: the nodes are found from the listing, since HTTP servers and buckets
 * have no directories to walk.
 */
export async function openRemoteZarrStore(
  blobs: BlobReader,
  root: string,
  files: ReadonlyMap<string, number>,
  opts: Pick<OpenOptions, 'cacheBytes'> & {
    /** zarr.json documents by key, as the listing carries them (others are fetched). */
    metadata?: ReadonlyMap<string, string>
  } = {},
): Promise<ZarrStoreReader> {
  assertLittleEndian()
  const tree = await walkListing(blobs, root, files, opts.metadata)
  const cache = pieceCache(opts.cacheBytes ?? 256 * 2 ** 20)
  return new StoreReader(`${blobs.url}/${root}`, tree, cache, new RemoteChunks(blobs, files))
}

class StoreReader implements ZarrStoreReader {
  constructor(
    private readonly root: string,
    private readonly tree: StoreTree,
    private readonly cache: ByteLru<Column>,
    private readonly io: ChunkIo,
  ) {}
  private readonly scratch = new ColumnPool()

  meta(path: string): ArrayMeta {
    return this.node(path).meta
  }

  attributes(path: string): Record<string, unknown> {
    const p = normalizePath(path)
    const group = this.tree.groups.get(p)
    if (group) return group
    return this.node(p).meta.attributes
  }

  async readColumn(path: string, symbol: number, from = 0, to?: number): Promise<Column> {
    const a = this.node(path)
    const g = grid2D(a, 'readColumn')
    const end = to ?? g.days
    checkIndex(symbol, g.symbols, a, 'symbol')
    if (!Number.isSafeInteger(from) || !Number.isSafeInteger(end) || from < 0 || end < from || end > g.days)
      throw new RangeError(
        `zarr: array "${a.meta.path}": day range [${from}, ${end}) is outside [0, ${g.days})`,
      )
    // A symbol's whole column, once cached (a long window read it), serves any window as a copy;
    // a long-window miss reads and caches the whole column (histories repeat with other years).
    const key = `${a.meta.path}\0s${symbol}`
    const hit = this.cache.get(key)
    if (hit) return hit.slice(from, end)
    // A short window (under half the column's day-chunks: a snapshot's lookback, one day's
    // state) reads and caches only its own runs, so many symbols' recent days stay cached.
    const i0 = Math.floor(from / g.cd)
    const i1 = Math.floor((Math.max(end, from + 1) - 1) / g.cd)
    if (end > from && 2 * (i1 - i0 + 1) < chunkCount(g.days, g.cd))
      return this.readWindow(a, g, symbol, from, end)
    const out = allocColumn(g.dtype, g.days)
    const jobs: Promise<void>[] = []
    for (let i = 0; i * g.cd < g.days; i++) jobs.push(this.readRun(a, g, i, symbol, 0, g.days, out))
    await Promise.all(jobs)
    this.cache.set(key, out)
    return out.slice(from, end)
  }

  async readRow(path: string, day: number): Promise<Column> {
    const a = this.node(path)
    const g = grid2D(a, 'readRow')
    checkIndex(day, g.days, a, 'day')
    const out = allocColumn(g.dtype, g.symbols)
    const i = Math.floor(day / g.cd)
    const jobs: Promise<void>[] = []
    // Whole-chunk reads: a day is strided across the symbol-major chunk, and one read of
    // 512 KiB is far cheaper than 256 reads of 8 bytes, and the chunk serves nearby days.
    for (let k = 0; k < chunkCount(g.symbols, g.cs); k++) {
      jobs.push(
        this.chunk(a, [i, k]).then((chunk) => {
          if (chunk) gatherRow(chunk, g, k, day - i * g.cd, out)
          else out.fill(g.fill, k * g.cs, Math.min(g.symbols, (k + 1) * g.cs))
        }),
      )
    }
    await Promise.all(jobs)
    return out
  }

  async readArray1D(path: string): Promise<Column> {
    const a = this.node(path)
    if (a.meta.shape.length !== 1) throw new Error(`zarr: array "${a.meta.path}" is not 1-D`)
    const [n] = a.meta.shape
    const [c] = a.meta.chunks
    const out = allocColumn(a.meta.dtype, n, a.meta.fillValue)
    const jobs: Promise<void>[] = []
    for (let q = 0; q < chunkCount(n, c); q++) {
      jobs.push(
        this.chunk(a, [q]).then((chunk) => {
          if (chunk) out.set(chunk.subarray(0, Math.min(c, n - q * c)), q * c)
        }),
      )
    }
    await Promise.all(jobs)
    return out
  }

  async readInto(path: string, first: number, from: number, to: number, targets: Column[]): Promise<void> {
    const a = this.node(path)
    const g = grid2D(a, 'readInto')
    const last = Math.min(g.symbols, first + targets.length)
    const stop = Math.min(to, g.days)
    if (first >= last || from >= stop) return
    const k0 = Math.floor(first / g.cs)
    const k1 = Math.floor((last - 1) / g.cs)
    const i0 = Math.floor(from / g.cd)
    const i1 = Math.floor((stop - 1) / g.cd)
    const jobs: [number, number][] = []
    for (let i = i0; i <= i1; i++) for (let k = k0; k <= k1; k++) jobs.push([i, k])
    await this.withScratch(jobs.length, g.dtype, g.cd * g.cs, async (scratch, n) => {
      const [i, k] = jobs[n]
      const chunk = await this.chunk(a, [i, k], scratch)
      const d0 = Math.max(from, i * g.cd)
      const d1 = Math.min(stop, (i + 1) * g.cd)
      for (let j = Math.max(first, k * g.cs); j < Math.min(last, (k + 1) * g.cs); j++) {
        const target = targets[j - first]
        if (!chunk) {
          target.fill(g.fill, d0, d1)
          continue
        }
        const base = (j - k * g.cs) * g.cd - i * g.cd
        target.set(chunk.subarray(base + d0, base + d1), d0)
      }
    })
  }

  async readAll2D(path: string): Promise<Column[]> {
    const a = this.node(path)
    const g = grid2D(a, 'readAll2D')
    const columns: Column[] = []
    for (let j = 0; j < g.symbols; j++) columns.push(allocColumn(g.dtype, g.days, g.fill))
    const nk = chunkCount(g.symbols, g.cs)
    await this.withScratch(chunkCount(g.days, g.cd) * nk, g.dtype, g.cd * g.cs, async (scratch, n) => {
      const i = Math.floor(n / nk)
      const k = n % nk
      const chunk = await this.chunk(a, [i, k], scratch)
      if (chunk) decodeChunk2D(chunk, g, i, k, columns)
    })
    return columns
  }

  async close(): Promise<void> {
    this.cache.clear()
    await this.io.close()
  }

  private node(path: string): ArrayNode {
    const p = normalizePath(path)
    const a = this.tree.arrays.get(p)
    if (a) return a
    const what = this.tree.groups.has(p) ? 'is a group, not an array' : 'does not exist'
    throw new AppError('NOT_FOUND', `zarr: array "${p}" ${what} in store ${this.root}`)
  }

  /** Days [from, end) of one symbol from its cached day-chunk runs (each run read once, whole). */
  private async readWindow(
    a: ArrayNode,
    g: Grid2D,
    symbol: number,
    from: number,
    end: number,
  ): Promise<Column> {
    const out = allocColumn(g.dtype, end - from)
    const jobs: Promise<void>[] = []
    for (let i = Math.floor(from / g.cd); i * g.cd < end; i++) {
      const d0 = i * g.cd
      const copy = (run: Column) => {
        const s = Math.max(from, d0)
        const e = Math.min(end, d0 + g.cd)
        out.set(run.subarray(s - d0, e - d0), s - from)
      }
      const key = `${a.meta.path}\0s${symbol}\0r${i}`
      const hit = this.cache.get(key)
      if (hit) {
        copy(hit)
        continue
      }
      const run = allocColumn(g.dtype, Math.min(g.cd, g.days - d0))
      jobs.push(
        this.readRun(a, g, i, symbol, d0, d0 + run.length, run).then(() => {
          this.cache.set(key, run)
          copy(run)
        }),
      )
    }
    await Promise.all(jobs)
    return out
  }

  /**
   * Days [from, end) ∩ day-chunk i of symbol j, read straight into `out` (which starts at day
   * `from`) with one positioned read: the symbol's days are contiguous inside the chunk.
   */
  private readRun(a: ArrayNode, g: Grid2D, i: number, j: number, from: number, end: number, out: Column) {
    const k = Math.floor(j / g.cs)
    const d0 = i * g.cd
    const s = Math.max(from, d0)
    const e = Math.min(end, d0 + g.cd)
    const inChunk = (j - k * g.cs) * g.cd + (s - d0)
    const whole = this.cache.get(chunkCacheKey(a, [i, k]))
    if (whole) {
      out.set(whole.subarray(inChunk, inChunk + (e - s)), s - from)
      return Promise.resolve()
    }
    const dst = new Uint8Array(out.buffer, out.byteOffset + (s - from) * a.itemSize, (e - s) * a.itemSize)
    const file = chunkFile(a.dir, [i, k], a.separator)
    return this.io.read(file, dst, inChunk * a.itemSize, false).then((got) => {
      if (got === undefined) out.fill(g.fill, s - from, e - from)
      else if (got < dst.length) throw truncated(a, file)
    })
  }

  /**
   * A whole chunk, or null when its file is absent (all fill). Read into `scratch` when given
   * (bulk reads reuse buffers and bypass the cache, which they would only flush), else into a
   * new buffer that is cached.
   */
  /** runBounded over chunk-sized scratch buffers the reader keeps for its next bulk read (ColumnPool). */
  private async withScratch(
    count: number,
    dtype: ArrayMeta['dtype'],
    length: number,
    work: (scratch: Column, n: number) => Promise<void>,
  ): Promise<void> {
    const used: Column[] = []
    const take = () => {
      const buf = this.scratch.take(dtype, length)
      used.push(buf)
      return buf
    }
    await runBounded(count, READ_ALL_CONCURRENCY, take, work)
    // Not after a failure: a worker still reading into its buffer may outlive the rejection.
    this.scratch.give(used)
  }

  private async chunk(a: ArrayNode, idx: number[], scratch?: Column): Promise<Column | null> {
    const key = chunkCacheKey(a, idx)
    const hit = this.cache.get(key)
    if (hit) return hit
    const chunkLength = a.meta.chunks.reduce((x, y) => x * y, 1)
    const buf = scratch ?? allocColumn(a.meta.dtype, chunkLength)
    const file = chunkFile(a.dir, idx, a.separator)
    const got = await this.io.read(file, bytesOf(buf), 0, true)
    if (got === undefined) return null
    if (got < buf.byteLength) throw truncated(a, file)
    if (!scratch) this.cache.set(key, buf)
    return buf
  }
}

function chunkCacheKey(a: ArrayNode, idx: number[]): string {
  return `${a.meta.path}\0${chunkKey(idx)}`
}

function grid2D(a: ArrayNode, op: string): Grid2D {
  if (!a.grid) throw new Error(`zarr: array "${a.meta.path}" is 1-D; ${op} needs a [day, symbol] array`)
  return a.grid
}

function checkIndex(v: number, n: number, a: ArrayNode, what: string): void {
  if (!Number.isSafeInteger(v) || v < 0 || v >= n)
    throw new RangeError(`zarr: array "${a.meta.path}": ${what} ${v} is outside [0, ${n})`)
}

function truncated(a: ArrayNode, file: string): ZarrFormatError {
  return new ZarrFormatError(`array "${a.meta.path}"`, `chunk file ${file} is shorter than the chunk shape`)
}
