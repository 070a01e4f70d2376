import { createHash, type Hash } from 'node:crypto'
import { type FileHandle, open } from 'node:fs/promises'
import { decodeSource, firstGroupRow, readMeta, selectColumns } from './decode.ts'
import { type EncodeOptions, encodeLayout, type RowGroup } from './encode.ts'
import { memorySource, withFileSource } from './source.ts'
import type { DecodeOptions, ParquetInput, ParquetTable, WritableColumn } from './types.ts'
import { specOfType } from './write-footer.ts'

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

/**
 * Writes a Parquet file that continues `from.path`: its first `from.bytes` bytes (the magic and
 * the row groups `from.groups`, whose section digests are `from.parts`) are copied unchanged,
 * then `table`'s rows are encoded as further row groups with a footer listing all of them. The
 * copied bytes are hashed into the whole-file digest as they pass; their sections are not hashed
 * again. The result is the file `writeParquetFile` would write for all the rows, byte for byte,
 * when the copied groups are what it would encode for the first rows.
 */
export async function writeParquetContinuation(
  path: string,
  from: { path: string; bytes: number; groups: RowGroup[]; parts: { bytes: number; sha256: string }[] },
  table: ParquetInput,
  opts: EncodeOptions = {},
): Promise<ParquetFileDigest> {
  const { parts, sectionEnds } = encodeLayout(table, undefined, {
    ...opts,
    after: { bytes: from.bytes, groups: from.groups },
  })
  const known: number[] = []
  for (const p of from.parts) known.push((known[known.length - 1] ?? 0) + p.bytes)
  if (known[known.length - 1] !== from.bytes) throw new Error('parquet: the kept parts do not add up')
  const digest = new SectionHasher([...known, ...sectionEnds.slice(1)], from.parts)
  const fh = await open(path, 'w')
  try {
    const src = await open(from.path, 'r')
    try {
      const buf = Buffer.allocUnsafe(4 * 1024 * 1024)
      for (let at = 0; at < from.bytes; ) {
        const { bytesRead } = await src.read(buf, 0, Math.min(buf.length, from.bytes - at), at)
        if (bytesRead === 0) throw new Error(`${from.path}: shorter than its kept ${from.bytes} bytes`)
        const chunk = buf.subarray(0, bytesRead)
        digest.update(chunk)
        await writeAll(fh, [chunk])
        at += bytesRead
      }
    } finally {
      await src.close()
    }
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

/**
 * Feeds bytes in file order to a whole-file hash and to one hash per section; the first
 * `known.length` sections' digests are given and only go into the whole-file hash.
 */
class SectionHasher {
  private readonly whole = createHash('sha256')
  private section: Hash = createHash('sha256')
  private readonly done: { bytes: number; sha256: string }[] = []
  private at = 0
  private start = 0
  private k = 0

  constructor(
    private readonly ends: number[],
    private readonly known: readonly { bytes: number; sha256: string }[] = [],
  ) {}

  update(bytes: Uint8Array): void {
    this.whole.update(bytes)
    let rest = bytes
    while (rest.length > 0) {
      const take = Math.min(rest.length, this.ends[this.k] - this.at)
      if (this.k < this.known.length) {
        this.at += take
        rest = rest.subarray(take)
        if (this.at === this.ends[this.k]) {
          this.done.push(this.known[this.k])
          this.start = this.at
          this.k++
        }
        continue
      }
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

/**
 * The first `count` row groups of a file written by this codec, as the footer of a continuation
 * lists them (writeParquetContinuation), with the bytes they end at. `types` are the columns'
 * types in file order; a file whose columns differ in name or number, or whose groups do not lie
 * back to back, is refused.
 */
export async function readKeptGroups(
  path: string,
  count: number,
  types: readonly { name: string; type: WritableColumn['type'] }[],
): Promise<{ bytes: number; groups: RowGroup[]; rows: number }> {
  const meta = await withPath(path, () => withFileSource(path, (file) => readMeta(file)))
  if (meta.columns.length !== types.length || meta.columns.some((c, i) => c.name !== types[i].name))
    throw new Error(`${path}: its columns are not the expected ones`)
  if (meta.rowGroups.length < count) throw new Error(`${path}: fewer than ${count} row groups`)
  const groups: RowGroup[] = []
  let bytes = 4
  let rows = 0
  for (const rg of meta.rowGroups.slice(0, count)) {
    const chunks = rg.chunks.map((c, i) => {
      if (c.start !== bytes || c.nulls === undefined) throw new Error(`${path}: not a file of this writer`)
      bytes += c.size
      return {
        name: types[i].name,
        spec: specOfType(types[i].type),
        offset: c.start,
        size: c.size,
        nulls: c.nulls,
      }
    })
    groups.push({ chunks, rows: rg.numRows })
    rows += rg.numRows
  }
  return { bytes, groups, rows }
}
