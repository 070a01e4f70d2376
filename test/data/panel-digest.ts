import { createHash } from 'node:crypto'
import { readFile } from 'node:fs/promises'
import type { FileDigest } from '../../src/engine/data/format.ts'
import { memorySource, readMeta } from '../../src/engine/parquet/index.ts'

const sha256 = (b: Uint8Array) => createHash('sha256').update(b).digest('hex')

/**
 * The digest of a Parquet panel recomputed from the file on disk (the writer hashes the bytes as
 * it writes them; tests hold the two to each other): the whole file, and its parts — the leading magic, each
 * row group (our writer lays a group's column chunks out back to back) and the footer.
 */
export async function panelDigest(path: string): Promise<FileDigest> {
  const bytes = new Uint8Array(await readFile(path))
  const meta = await readMeta(memorySource(bytes))
  const bounds = [0, 4]
  for (const rg of meta.rowGroups) {
    let end = bounds[bounds.length - 1]
    for (const c of rg.chunks) {
      if (c.start < bounds[bounds.length - 1])
        throw new Error(`${path}: row groups are not laid out in order`)
      end = Math.max(end, c.start + c.size)
    }
    bounds.push(end)
  }
  bounds.push(bytes.length)
  const parts = bounds.slice(1).map((end, n) => {
    const part = bytes.subarray(bounds[n], end)
    return { bytes: part.length, sha256: sha256(part) }
  })
  return { sha256: sha256(bytes), bytes: bytes.length, parts }
}
