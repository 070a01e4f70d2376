/**
 * `erm3 publish`: copies the current build of a local store to a shared location (an S3 bucket,
 * or the directory a static HTTP server serves) and switches that location's CURRENT last:
 *
 *   1. every file of builds/<id>/ (files already there with the same size are skipped, so a
 *      re-publish, or one resumed after a failure, uploads only what is missing)
 *   2. builds/<id>/erm3-files.json, the listing remote readers open the build from
 *   3. CURRENT {"build": "<id>"} — one PUT (or rename), so readers see the old build or the new one
 *
 * A failure at any step leaves CURRENT as it was. Old builds stay (nodes may still be reading
 * them); remove them with the bucket's lifecycle rules or by hand.
 */
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { LocalBlobs } from '../object-store/local.ts'
import type { BlobWriter } from '../object-store/types.ts'
import { runBounded } from '../zarr/pool.ts'
import { STORE_FILES } from './layout.ts'
import { ModelStore } from './reader.ts'

export interface PublishResult {
  build: string
  data_as_of: string
  files: number
  uploaded: number
  skipped: number
  bytes: number
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
  let bytes = 0
  let done = 0
  await runBounded(
    todo.length,
    CONCURRENCY,
    () => null,
    async (_, i) => {
      const [p] = todo[i]
      const body = await readFile(join(buildDir, p))
      await target.put(`${prefix}/${p}`, body)
      bytes += body.length
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
    files: local.size,
    uploaded: todo.length,
    skipped: local.size - todo.length,
    bytes,
  }
}
