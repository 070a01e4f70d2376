import { createReadStream } from 'node:fs'
import { open, readFile, stat } from 'node:fs/promises'
import { Transform, type TransformCallback } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { createGunzip, gunzipSync } from 'node:zlib'
import { CsvError, parse } from 'csv-parse'
import { parquetMetadata, parquetReadObjects, parquetSchema } from 'hyparquet'
import { compressors } from 'hyparquet-compressors'
import { InputError } from '../../../platform/errors.ts'
import type { Progress } from '../../../platform/progress.ts'
import type { Cell } from './cells.ts'

/**
 * Reads a user table (CSV, gzip-compressed CSV or Parquet) and hands it to a sink one row at a
 * time, with the 1-based line number an editor shows (for Parquet: the 1-based row number plus
 * one for a notional header line, so "line" means the same thing in both formats).
 *
 * The reader enforces what is true of every table: it is not empty, has data rows, has no
 * duplicate header names and no ragged rows. The sink checks the meaning of the cells.
 */
export interface TableSink {
  header(columns: string[]): void
  row(cells: Cell[], line: number): void
}

type FileKind = 'csv' | 'csv.gz' | 'parquet'

export async function readTable(
  file: string,
  sink: TableSink,
  progress: Progress,
  stage: string,
): Promise<void> {
  const kind = await detectKind(file)
  if (kind === 'parquet') await readParquet(file, sink, progress, stage)
  else await readCsv(file, kind === 'csv.gz', sink, progress, stage)
}

export async function readRawFile(file: string): Promise<Buffer> {
  try {
    return await readFile(file)
  } catch (err) {
    throw new InputError({ file }, `cannot read file: ${errorText(err)}`)
  }
}

/** The bytes, gunzipped when the content is gzip (by magic bytes, whatever the name). */
export function gunzipIfNeeded(file: string, raw: Buffer): Buffer {
  if (!isGzip(raw)) return raw
  try {
    return gunzipSync(raw)
  } catch (err) {
    throw new InputError({ file }, `corrupt gzip data: ${errorText(err)}`)
  }
}

export function isGzip(b: Uint8Array): boolean {
  return b.length >= 2 && b[0] === 0x1f && b[1] === 0x8b
}

async function detectKind(file: string): Promise<FileKind> {
  const head = Buffer.alloc(4)
  let n = 0
  try {
    const fh = await open(file, 'r')
    try {
      n = (await fh.read(head, 0, 4, 0)).bytesRead
    } finally {
      await fh.close()
    }
  } catch (err) {
    throw new InputError({ file }, `cannot read file: ${errorText(err)}`)
  }
  if (n === 0) throw new InputError({ file, line: 1, column: 1 }, 'empty file')
  if (isGzip(head.subarray(0, n))) return 'csv.gz'
  if (n === 4 && head.toString('latin1') === 'PAR1') return 'parquet'
  return 'csv'
}

/** Enforces the table-wide rules and counts rows; shared by the CSV and Parquet paths. */
class TableGuard {
  private width = -1
  rows = 0
  constructor(
    private readonly file: string,
    private readonly sink: TableSink,
  ) {}

  record(cells: Cell[], line: number): void {
    if (this.width < 0) {
      const names = cells.map((c) => (c === null || c === undefined ? '' : String(c).trim()))
      this.checkHeader(names)
      this.width = names.length
      this.sink.header(names)
      return
    }
    if (cells.length !== this.width) {
      const column = Math.min(cells.length, this.width) + 1
      throw new InputError(
        { file: this.file, line, column },
        `ragged row: ${cells.length} fields where the header has ${this.width}`,
      )
    }
    this.rows++
    this.sink.row(cells, line)
  }

  finish(): void {
    if (this.width < 0) throw new InputError({ file: this.file, line: 1, column: 1 }, 'empty file')
    if (this.rows === 0)
      throw new InputError({ file: this.file, line: 2, column: 1 }, 'no data rows below the header')
  }

  private checkHeader(names: string[]): void {
    const seen = new Map<string, number>()
    names.forEach((name, i) => {
      if (name === '')
        throw new InputError({ file: this.file, line: 1, column: i + 1 }, 'empty column name in header')
      const key = name.toLowerCase()
      const first = seen.get(key)
      if (first !== undefined) {
        throw new InputError(
          { file: this.file, line: 1, column: i + 1 },
          `duplicate column "${name}" (also column ${first + 1})`,
        )
      }
      seen.set(key, i)
    })
  }
}

async function readCsv(
  file: string,
  gz: boolean,
  sink: TableSink,
  progress: Progress,
  stage: string,
): Promise<void> {
  const total = (await stat(file)).size
  const guard = new TableGuard(file, sink)
  const parser = parse({
    bom: true,
    relax_column_count: true,
    skip_empty_lines: true,
    // Errors thrown here (InputError) reject the pipeline unchanged.
    on_record: (record: string[], info) => {
      guard.record(record, info.lines)
      return null
    },
  })
  progress.start(stage, total)
  const source = createReadStream(file, { highWaterMark: 1 << 20 })
  const counter = byteCounter((done) => progress.update(done))
  try {
    if (gz) await pipeline(source, counter, createGunzip(), parser)
    else await pipeline(source, counter, parser)
  } catch (err) {
    throw asInputError(file, err)
  } finally {
    progress.stop()
  }
  guard.finish()
}

function byteCounter(onBytes: (done: number) => void): Transform {
  let done = 0
  return new Transform({
    transform(chunk: Buffer, _enc: BufferEncoding, cb: TransformCallback) {
      done += chunk.length
      onBytes(done)
      cb(null, chunk)
    },
  })
}

function asInputError(file: string, err: unknown): Error {
  if (err instanceof InputError) return err
  if (err instanceof CsvError) {
    const line = typeof err.lines === 'number' ? err.lines : undefined
    const column = typeof err.column === 'number' ? err.column + 1 : undefined
    return new InputError({ file, line, column }, `malformed CSV: ${err.message}`)
  }
  return new InputError({ file }, `cannot read file: ${errorText(err)}`)
}

async function readParquet(file: string, sink: TableSink, progress: Progress, stage: string): Promise<void> {
  const buf = await readRawFile(file)
  // A copy with its own ArrayBuffer: Node's Buffers may share a larger pooled one.
  const ab = new Uint8Array(buf).buffer
  let rows: Record<string, unknown>[]
  let columns: string[]
  try {
    const metadata = parquetMetadata(ab)
    columns = parquetSchema(metadata).children.map((c) => c.element.name)
    rows = await parquetReadObjects({ file: ab, metadata, compressors })
  } catch (err) {
    throw new InputError({ file }, `not a readable Parquet file: ${errorText(err)}`)
  }
  const guard = new TableGuard(file, sink)
  progress.start(stage, rows.length)
  try {
    guard.record(columns, 1)
    for (let i = 0; i < rows.length; i++) {
      const row = rows[i]
      guard.record(
        columns.map((c) => row[c] as Cell),
        i + 2,
      )
      if ((i & 0xffff) === 0) progress.update(i)
    }
    progress.update(rows.length)
  } finally {
    progress.stop()
  }
  guard.finish()
}

export function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err)
}
