/**
 * `erm3 publish`: copies the current build of a local store to a shared location (an S3 bucket,
 * or the directory a static HTTP server serves) and switches that location's CURRENT last:
 *
 *   1. every file of builds/<id>/: files already there with the same size are skipped (so a
 *      re-publish, or one resumed after a failure, sends only what is missing); files identical
 *      to the target's current build's are copied there from it, storage-side (`BlobWriter.copy`);
 *      the rest are uploaded
 *   2. builds/<id>/erm3-files.json, the listing remote readers open the build from
 *   3. CURRENT {"build": "<id>"} — one PUT (or rename), so readers see the old build or the new one
 *
 * A failure at any step leaves CURRENT as it was. Old builds stay (nodes may still be reading
 * them); remove them with the bucket's lifecycle rules or by hand.
 *
 * An incremental build hard-links its unchanged day-chunks from the previous build, so after a
 * daily update most files of the new build are those of the build the target serves: they are
 * copied target-side instead of uploaded (docs/model-store.md §"Published stores").
 */
import { open, readFile, stat } from 'node:fs/promises'
import { join } from 'node:path'
import { LocalBlobs } from '../object-store/local.ts'
import type { BlobWriter } from '../object-store/types.ts'
import { runBounded } from '../zarr/pool.ts'
import { STORE_FILES } from './layout.ts'
import { ModelStore } from './reader.ts'

export interface PublishResult {
  build: string
  data_as_of: string
  /** The build the target served before (copies come from it), or null. */
  previous: string | null
  files: number
  /** Files sent to the target. */
  uploaded: number
  /** Files the target copied from the previous build (no bytes through erm3). */
  copied: number
  /** Files the target had already (a re-publish, or a resumed one). */
  skipped: number
  /** Bytes uploaded. */
  bytes: number
  /** Bytes of the copied files. */
  copied_bytes: number
}

const CONCURRENCY = 8

export async function publishStore(
  localRoot: string,
  target: BlobWriter,
  opts: { force?: boolean; onFile?: (done: number, total: number) => void } = {},
): Promise<PublishResult> {
  // Opening checks the build the way every reader will (format, versions, arrays).
  const store = await ModelStore.open(localRoot)
  const id = store.buildId
  const dataAsOf = store.dataAsOf
  await store.close()
  if (!id) throw new Error(`${localRoot} has no CURRENT build to publish (run erm3 build)`)
  const buildDir = join(localRoot, STORE_FILES.builds, id)
  const prefix = `${STORE_FILES.builds}/${id}`
  const local = await new LocalBlobs(buildDir).list('')
  local.delete(STORE_FILES.listing)
  const there = opts.force ? new Map<string, number>() : await target.list(`${prefix}/`)
  const todo = [...local].filter(([p, n]) => there.get(`${prefix}/${p}`) !== n)
  const previous = opts.force ? null : await targetCurrent(target, id)
  const same = previous ? await sameAsPrevious(target, localRoot, previous, buildDir, todo) : new Set()
  const r = { uploaded: 0, copied: 0, bytes: 0, copied_bytes: 0 }
  let done = 0
  await runBounded(
    todo.length,
    CONCURRENCY,
    () => null,
    async (_, i) => {
      const [p, n] = todo[i]
      if (previous && same.has(p)) {
        await target.copy(`${STORE_FILES.builds}/${previous}/${p}`, `${prefix}/${p}`)
        r.copied++
        r.copied_bytes += n
      } else {
        const body = await readFile(join(buildDir, p))
        await target.put(`${prefix}/${p}`, body)
        r.uploaded++
        r.bytes += body.length
      }
      opts.onFile?.(++done, todo.length)
    },
  )
  // The zarr.json documents ride along, so a node opens the build with one request, not one per array.
  const metadata: Record<string, string> = {}
  for (const p of [...local.keys()].sort())
    if (p === 'zarr.json' || p.endsWith('/zarr.json')) metadata[p] = await readFile(join(buildDir, p), 'utf8')
  const listing = `${JSON.stringify({ build: id, files: Object.fromEntries([...local].sort()), metadata })}\n`
  await target.put(`${prefix}/${STORE_FILES.listing}`, new TextEncoder().encode(listing))
  await target.put(STORE_FILES.current, new TextEncoder().encode(`${JSON.stringify({ build: id })}\n`))
  return {
    build: id,
    data_as_of: dataAsOf,
    previous,
    files: local.size,
    ...r,
    skipped: local.size - todo.length,
  }
}

/** The build the target's CURRENT names, unless it is `id` itself; null when there is none. */
async function targetCurrent(target: BlobWriter, id: string): Promise<string | null> {
  const bytes = await target.get(STORE_FILES.current)
  if (!bytes) return null
  try {
    const build = (JSON.parse(new TextDecoder().decode(bytes)) as { build?: unknown }).build
    return typeof build === 'string' && build !== id && !build.includes('/') ? build : null
  } catch {
    return null
  }
}

/**
 * The files of `todo` that the target's build `previous` holds with the same bytes. Its listing
 * (written after all its files) says the target has the file at that size; the local copy of
 * that build (an incremental build's predecessor is kept beside it) says the bytes are the same:
 * the same inode (a hard-linked chunk), or equal contents. Without the listing or the local
 * build nothing is copied.
 */
async function sameAsPrevious(
  target: BlobWriter,
  localRoot: string,
  previous: string,
  buildDir: string,
  todo: [string, number][],
): Promise<Set<string>> {
  const out = new Set<string>()
  const listing = await target.get(`${STORE_FILES.builds}/${previous}/${STORE_FILES.listing}`)
  const prevDir = join(localRoot, STORE_FILES.builds, previous)
  if (!listing || !(await stat(prevDir).catch(() => null))) return out
  let files: Record<string, number>
  try {
    files = (JSON.parse(new TextDecoder().decode(listing)) as { files: Record<string, number> }).files
  } catch {
    return out
  }
  await runBounded(
    todo.length,
    CONCURRENCY,
    () => [Buffer.allocUnsafe(COMPARE_BYTES), Buffer.allocUnsafe(COMPARE_BYTES)] as const,
    async (bufs, i) => {
      const [p, n] = todo[i]
      if (files[p] === n && (await sameFile(join(buildDir, p), join(prevDir, p), n, bufs))) out.add(p)
    },
  )
  return out
}

/** Piece size of a content comparison (two reused buffers per worker, so no garbage per file). */
const COMPARE_BYTES = 64 * 1024

/**
 * Whether two local files hold the same `size` bytes: one inode (a hard-linked chunk), or equal
 * contents, compared piece by piece. A rewritten chunk differs early (each symbol's days are
 * contiguous, the first symbol's new days within its first 2 KiB), so it costs one piece.
 */
async function sameFile(
  a: string,
  b: string,
  size: number,
  [ba, bb]: readonly [Buffer, Buffer],
): Promise<boolean> {
  const [sa, sb] = await Promise.all([stat(a), stat(b).catch(() => null)])
  if (!sb || sb.size !== size || sa.size !== size) return false
  if (sa.dev === sb.dev && sa.ino === sb.ino) return true
  const [ha, hb] = await Promise.all([open(a, 'r'), open(b, 'r')])
  try {
    for (let at = 0; at < size; at += COMPARE_BYTES) {
      const len = Math.min(COMPARE_BYTES, size - at)
      const [ra, rb] = await Promise.all([ha.read(ba, 0, len, at), hb.read(bb, 0, len, at)])
      if (ra.bytesRead !== len || rb.bytesRead !== len) return false
      if (ba.compare(bb, 0, len, 0, len) !== 0) return false
    }
    return true
  } finally {
    await Promise.all([ha.close(), hb.close()])
  }
}
