import { randomBytes } from 'node:crypto'
import { link, mkdir, readdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import type { Array2DSpec, Column } from '../zarr/index.ts'
import { ChunkScratch, writeArray1D, writeGroup } from '../zarr/index.ts'
import { BlockArray } from './block-array.ts'
import { type FactorMeta, STORE_FILES, type StoreManifest, type SymbolMeta } from './layout.ts'

/**
 * Writes one build of the model store into <root>/builds/<id> and, only when everything is on
 * disk, points <root>/CURRENT at it (write a temporary file, then rename: atomic on POSIX). A
 * failed or interrupted build leaves CURRENT untouched; `abort()` removes the partial build and
 * the next build sweeps any left by a crash.
 */
export class StoreBuildWriter {
  readonly dir: string
  private readonly arrays = new Map<string, BlockArray>()
  /** Chunk buffers and made directories shared by the build's block-written arrays. */
  private readonly scratch = new ChunkScratch()

  private constructor(
    readonly root: string,
    readonly id: string,
  ) {
    this.dir = join(root, STORE_FILES.builds, id)
  }

  static async begin(root: string): Promise<StoreBuildWriter> {
    const stamp = new Date()
      .toISOString()
      .replace(/[-:]/g, '')
      .replace(/\.\d+Z$/, 'Z')
    const w = new StoreBuildWriter(root, `${stamp}-${randomBytes(3).toString('hex')}`)
    await mkdir(w.dir, { recursive: true })
    await writeGroup(w.dir, '', { format: 'erm3-model-store' })
    return w
  }

  async writeMeta(
    calendar: Int32Array,
    symbols: SymbolMeta[],
    etfs: string[],
    industries: string[],
  ): Promise<void> {
    await writeArray1D(this.dir, STORE_FILES.calendar, calendar, {
      attributes: { units: 'days since 1970-01-01' },
    })
    await mkdir(join(this.dir, 'meta'), { recursive: true })
    await writeFile(join(this.dir, STORE_FILES.symbols), JSON.stringify(symbols))
    await writeFile(join(this.dir, STORE_FILES.etfs), JSON.stringify(etfs))
    await writeFile(join(this.dir, STORE_FILES.industries), JSON.stringify(industries))
  }

  /** meta/factors.json: the columns of factors/returns (after writeMeta, which makes meta/). */
  async writeFactorMeta(factors: FactorMeta[]): Promise<void> {
    await writeFile(join(this.dir, STORE_FILES.factors), JSON.stringify(factors))
  }

  /**
   * A document of the build at `path` under the build directory: JSON text (the rate curves) or
   * its gzip bytes under a `.gz` name (the fundamentals digests); parent directories are made as
   * needed.
   */
  async writeDocument(path: string, data: string | Uint8Array): Promise<void> {
    const file = join(this.dir, path)
    await mkdir(dirname(file), { recursive: true })
    await writeFile(file, data)
  }

  /** Hard-links `prevDir`'s document at `path` into this build (the same bytes, no copy). */
  async linkDocument(prevDir: string, path: string): Promise<void> {
    const file = join(this.dir, path)
    await mkdir(dirname(file), { recursive: true })
    await link(join(prevDir, path), file)
  }

  /** Creates a block-written array; with `link`, the previous build's chunks before `fromDay` are hard-linked. */
  async createArray(
    path: string,
    spec: Array2DSpec,
    link?: { prevDir: string; fromDay: number },
  ): Promise<void> {
    const a = link
      ? await BlockArray.createIncremental(this.dir, link.prevDir, path, spec, link.fromDay, this.scratch)
      : await BlockArray.create(this.dir, path, spec, this.scratch)
    this.arrays.set(path, a)
  }

  async writeBlock(path: string, first: number, columns: Column[]): Promise<void> {
    const a = this.arrays.get(path)
    if (!a) throw new Error(`store: array ${path} was not created`)
    await a.writeBlock(first, columns)
  }

  /** Writes the manifest, then switches CURRENT to this build and prunes older builds. */
  async commit(manifest: StoreManifest, keepPrevious = 1): Promise<void> {
    await writeFile(join(this.dir, STORE_FILES.manifest), `${JSON.stringify(manifest, null, 2)}\n`)
    const previous = await currentBuild(this.root)
    const tmp = join(this.root, `.${STORE_FILES.current}.${this.id}`)
    await writeFile(tmp, `${JSON.stringify({ build: this.id })}\n`)
    await rename(tmp, join(this.root, STORE_FILES.current))
    await pruneBuilds(this.root, new Set([this.id, ...(previous && keepPrevious > 0 ? [previous] : [])]))
  }

  async abort(): Promise<void> {
    await rm(this.dir, { recursive: true, force: true })
  }
}

/** The build id CURRENT points at, or null for an empty store root. */
export async function currentBuild(root: string): Promise<string | null> {
  try {
    const parsed = JSON.parse(await readFile(join(root, STORE_FILES.current), 'utf8')) as { build?: unknown }
    return typeof parsed.build === 'string' ? parsed.build : null
  } catch {
    return null
  }
}

/**
 * How long a superseded build stays on disk: serving nodes switch builds by polling CURRENT (every
 * ERM3_STORE_POLL_SECONDS) and close the old one 30 s later, and a request may still be reading
 * it; a build being written by another process (no manifest yet) is spared as long.
 */
const PRUNE_GRACE_MS = 10 * 60_000

/**
 * Removes builds other than `keep` once they are no longer read: a build superseded (the next
 * newer build's manifest written) more than `graceMs` ago, or a manifest-less leftover (an
 * interrupted build) untouched for as long.
 */
export async function pruneBuilds(
  root: string,
  keep: Set<string>,
  now = Date.now(),
  graceMs = PRUNE_GRACE_MS,
): Promise<string[]> {
  const dir = join(root, STORE_FILES.builds)
  let names: string[] = []
  try {
    names = await readdir(dir)
  } catch {
    return []
  }
  const committedAt = new Map<string, number>()
  const touchedAt = new Map<string, number>()
  for (const n of names) {
    const m = await stat(join(dir, n, STORE_FILES.manifest)).catch(() => null)
    if (m) committedAt.set(n, m.mtimeMs)
    else touchedAt.set(n, (await stat(join(dir, n)).catch(() => null))?.mtimeMs ?? 0)
  }
  const removed: string[] = []
  for (const n of names) {
    if (keep.has(n)) continue
    const at = committedAt.get(n)
    let since: number
    if (at === undefined) since = touchedAt.get(n) ?? 0
    else {
      // Superseded when the first build committed after it was.
      const later = [...committedAt.values()].filter((t) => t > at)
      if (later.length === 0) continue // nothing newer has committed: not superseded
      since = Math.min(...later)
    }
    if (now - since < graceMs) continue
    await rm(join(dir, n), { recursive: true, force: true })
    removed.push(n)
  }
  return removed
}
