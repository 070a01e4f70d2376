import { type AsyncBuffer, type ColumnData, parquetRead } from 'hyparquet'
import { compressors } from 'hyparquet-compressors'
import type { FileMeta, TopColumn } from './footer.ts'
import { checkChunk } from './guard.ts'
import type { ByteSource } from './source.ts'
import { type ParquetColumn, Repetition } from './types.ts'

const text = new TextDecoder()

/** Dates and timestamps come out of hyparquet as day numbers (floored), JSON as its text. */
const parsers = {
  dateFromDays: (days: number) => days,
  timestampFromMilliseconds: (v: bigint) => floorDiv(v, 86_400_000n),
  timestampFromMicroseconds: (v: bigint) => floorDiv(v, 86_400_000_000n),
  timestampFromNanoseconds: (v: bigint) => floorDiv(v, 86_400_000_000_000n),
  jsonFromBytes: (bytes: Uint8Array) => text.decode(bytes),
}

function floorDiv(v: bigint | number, d: bigint): number {
  const b = BigInt(v)
  const q = b / d
  return Number(b % d < 0n ? q - 1n : q)
}

/**
 * Fills the given (preallocated, same-named) columns using hyparquet, for files or chunks the fast
 * path does not handle: compression, dictionaries, page v2, INT64, timestamps and so on.
 */
export async function decodeWithHyparquet(
  src: ByteSource,
  meta: FileMeta,
  targets: { top: TopColumn; col: ParquetColumn }[],
): Promise<void> {
  for (const { top } of targets) {
    const optional = top.leaf.repetition !== Repetition.REQUIRED
    for (const rg of meta.rowGroups) {
      const chunk = rg.chunks[top.leafIndex]
      const bytes = await src.read(chunk.start, chunk.start + chunk.size)
      checkChunk(bytes, rg.numRows, chunk.codec, optional, top.name)
    }
  }
  const columns = targets.map((t) => t.col)
  const file: AsyncBuffer = {
    byteLength: src.size,
    slice: async (start, end) => {
      const b = await src.read(start, end ?? src.size)
      return b.buffer.slice(b.byteOffset, b.byteOffset + b.length) as ArrayBuffer
    },
  }
  // Converting inside onChunk could throw where hyparquet cannot catch it, so collect first.
  const chunks: ColumnData[] = []
  try {
    await parquetRead({
      file,
      columns: columns.map((c) => c.name),
      compressors,
      parsers,
      utf8: true,
      onChunk: (chunk) => chunks.push(chunk),
    })
  } catch (err) {
    // hyparquet's own messages can be cryptic on damaged files (e.g. a TypeError from deep inside).
    const message = err instanceof Error ? err.message : String(err)
    throw new Error(`parquet file could not be read (via hyparquet): ${message}`, { cause: err })
  }
  const byName = new Map(columns.map((c) => [c.name, c]))
  for (const chunk of chunks) {
    const col = byName.get(chunk.columnName)
    if (col) fill(col, chunk.columnData, chunk.rowStart)
  }
}

function fill(col: ParquetColumn, data: ArrayLike<unknown>, at: number): void {
  if (at < 0 || at + data.length > col.values.length) {
    throw new Error(
      `parquet column "${col.name}": rows ${at}..${at + data.length} exceed the file's row count`,
    )
  }
  switch (col.type) {
    case 'DOUBLE':
    case 'FLOAT':
      for (let i = 0; i < data.length; i++) col.values[at + i] = toNumber(data[i], col)
      return
    case 'INT32':
    case 'DATE':
      for (let i = 0; i < data.length; i++) col.values[at + i] = toInt(data[i], col)
      return
    case 'STRING':
      for (let i = 0; i < data.length; i++) col.values[at + i] = toText(data[i], col)
  }
}

function toNumber(v: unknown, col: ParquetColumn): number {
  if (typeof v === 'number') return v
  if (v === null || v === undefined) return Number.NaN
  if (typeof v === 'bigint') return Number(v)
  if (typeof v === 'boolean') return v ? 1 : 0
  return unconvertible(v, col)
}

function toInt(v: unknown, col: ParquetColumn): number {
  if (v === null || v === undefined) {
    throw new Error(`parquet column "${col.name}" has nulls, which a ${col.type} column cannot hold`)
  }
  if (typeof v === 'number' && Number.isInteger(v)) return v
  if (v instanceof Date) return Math.floor(v.getTime() / 86_400_000)
  return unconvertible(v, col)
}

function toText(v: unknown, col: ParquetColumn): string | null {
  if (typeof v === 'string') return v
  if (v === null || v === undefined) return null
  if (v instanceof Uint8Array) return text.decode(v)
  return unconvertible(v, col)
}

function unconvertible(v: unknown, col: ParquetColumn): never {
  const kind = v === null ? 'null' : typeof v === 'object' ? (v.constructor?.name ?? 'object') : typeof v
  throw new Error(`parquet column "${col.name}": cannot convert a ${kind} value to ${col.type}`)
}
