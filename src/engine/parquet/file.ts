import { createHash, type Hash } from 'node:crypto'
import { type FileHandle, open } from 'node:fs/promises'
import { decodeSource, firstGroupRow, readMeta, selectColumns } from './decode.ts'
import { type EncodeOptions, encodeLayout } from './encode.ts'
import { memorySource, withFileSource } from './source.ts'
import type { DecodeOptions, ParquetInput, ParquetTable } from './types.ts'

/** SHA-256 of a whole file and of each of its sections (magic, row groups, footer). */
export interface ParquetFileDigest {
  sha256: string
  bytes: number
  parts: { bytes: number; sha256: string }[]
}

/**
 * Writes the parts straight from the table's arrays (writev), skipping an in-memory copy of the
 * file; the arrays must therefore not change until the returned promise settles. Returns the
 * file's digest, hashed from the same parts as they are written (no second read of the file).
 */
export async function writeParquetFile(
  path: string,
  table: ParquetInput,
  opts: EncodeOptions = {},
): Promise<ParquetFileDigest> {
  const { parts, sectionEnds } = encodeLayout(table, undefined, opts)
  const digest = new SectionHasher(sectionEnds)
  const fh = await open(path, 'w')
  try {
    // Stay within the usual IOV_MAX of 1024 buffers per call.
    for (let i = 0; i < parts.length; i += 1024) {
      const batch = parts.slice(i, i + 1024)
      for (const p of batch) digest.update(p)
      await writeAll(fh, batch)
    }
  } finally {
    await fh.close()
  }
  return digest.finish()
}

/** Feeds bytes in file order to a whole-file hash and to one hash per section. */
class SectionHasher {
  private readonly whole = createHash('sha256')
  private section: Hash = createHash('sha256')
  private readonly done: { bytes: number; sha256: string }[] = []
  private at = 0
  private start = 0
  private k = 0

  constructor(private readonly ends: number[]) {}

  update(bytes: Uint8Array): void {
    this.whole.update(bytes)
    let rest = bytes
    while (rest.length > 0) {
      const take = Math.min(rest.length, this.ends[this.k] - this.at)
      this.section.update(take === rest.length ? rest : rest.subarray(0, take))
      this.at += take
      rest = rest.subarray(take)
      if (this.at === this.ends[this.k]) {
        this.done.push({ bytes: this.at - this.start, sha256: this.section.digest('hex') })
        this.section = createHash('sha256')
        this.start = this.at
        this.k++
      }
    }
  }

  finish(): ParquetFileDigest {
    if (this.k !== this.ends.length) throw new Error('parquet: the parts do not add up to the file layout')
    return { sha256: this.whole.digest('hex'), bytes: this.at, parts: this.done }
  }
}

async function writeAll(fh: FileHandle, parts: Uint8Array[]): Promise<void> {
  let want = 0
  for (const p of parts) want += p.length
  let { bytesWritten } = await fh.writev(parts)
  if (bytesWritten === want) return
  // A short write is rare on regular files; finish the remainder part by part.
  for (const p of parts) {
    if (bytesWritten >= p.length) {
      bytesWritten -= p.length
      continue
    }
    let rest = p.subarray(bytesWritten)
    bytesWritten = 0
    while (rest.length > 0) rest = rest.subarray((await fh.write(rest)).bytesWritten)
  }
}

export async function readParquetFile(path: string, opts?: DecodeOptions): Promise<ParquetTable> {
  return withPath(path, () =>
    withFileSource(path, async (file) => {
      const meta = await readMeta(file)
      const selected = selectColumns(meta, opts?.columns)
      const firstRow = firstGroupRow(meta, opts?.fromRow ?? 0)
      let bytes = 0
      let at = 0
      for (const rg of meta.rowGroups) {
        if (at >= firstRow) for (const c of selected) bytes += rg.chunks[c.leafIndex]?.size ?? 0
        at += rg.numRows
      }
      // Many small reads cost more than one big one once a good share of the file is wanted.
      if (bytes * 4 < file.size) return decodeSource(file, meta, opts)
      return decodeSource(memorySource(await file.read(0, file.size)), meta, opts)
    }),
  )
}

export async function readParquetColumnNames(path: string): Promise<string[]> {
  return withPath(path, () =>
    withFileSource(path, async (file) => (await readMeta(file)).columns.map((c) => c.name)),
  )
}

/** Prefixes errors about the file's content with its path; I/O errors already name it. */
async function withPath<T>(path: string, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn()
  } catch (err) {
    if (err instanceof Error && !('code' in err)) throw new Error(`${path}: ${err.message}`, { cause: err })
    throw err
  }
}
