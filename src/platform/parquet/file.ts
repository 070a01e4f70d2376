import { type FileHandle, open } from 'node:fs/promises'
import { decodeSource, firstGroupRow, readMeta, selectColumns } from './decode.ts'
import { type EncodeOptions, encodeParts } from './encode.ts'
import { memorySource, withFileSource } from './source.ts'
import type { DecodeOptions, ParquetInput, ParquetTable } from './types.ts'

/**
 * Writes the parts straight from the table's arrays (writev), skipping an in-memory copy of the
 * file; the arrays must therefore not change until the returned promise settles.
 */
export async function writeParquetFile(
  path: string,
  table: ParquetInput,
  opts: EncodeOptions = {},
): Promise<void> {
  const parts = encodeParts(table, undefined, opts)
  const fh = await open(path, 'w')
  try {
    // Stay within the usual IOV_MAX of 1024 buffers per call.
    for (let i = 0; i < parts.length; i += 1024) await writeAll(fh, parts.slice(i, i + 1024))
  } finally {
    await fh.close()
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
