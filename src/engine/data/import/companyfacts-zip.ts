import { close, createReadStream, fstat, open, read } from 'node:fs'
import { basename } from 'node:path'
import type { Readable } from 'node:stream'
import { promisify } from 'node:util'
import { crc32, gzipSync } from 'node:zlib'
import { type Entry, fromRandomAccessReaderPromise, RandomAccessReader, type ZipFile } from 'yauzl'
import { InputError } from '../../../platform/errors.ts'
import type { Progress } from '../../../platform/progress.ts'
import type { FundamentalsFile, QualityFinding } from '../format.ts'
import { checkCompanyFacts, FILE_RE } from './fundamentals.ts'
import { errorText, gunzipIfNeeded } from './table-reader.ts'

/** The CIKs the dataset's stocks carry, each with the tickers that carry it (for messages). */
export type WantedCiks = ReadonlyMap<number, readonly string[]>

/** Progress updates every this many entries: the bulk zip has ≈ 19,000. */
const PROGRESS_EVERY = 500
/** Wanted-but-missing CIKs listed by name in the note; the rest are counted. */
const MAX_LISTED = 20

/**
 * SEC's bulk `companyfacts.zip` (one `CIK##########.json` per filer, ≈ 19,000 entries, ≈ 1 GB
 * inflated), streamed: the central directory is read entry by entry, and only the entries of
 * wanted CIKs are inflated — in memory, one at a time — checked like a directory file and
 * re-gzipped. Nothing is unpacked to disk. The counts go into a `note` finding.
 */
export async function readCompanyFactsZip(
  zip: string,
  wanted: WantedCiks,
  findings: QualityFinding[],
  progress: Progress,
): Promise<FundamentalsFile[]> {
  if (wanted.size === 0) {
    throw new InputError(
      { file: zip },
      'no stock has a CIK (give a securities file with a CIK column or --cik-map), so no entry of the zip is wanted',
    )
  }
  const zf = await openZip(zip)
  const taken = new Map<number, string>()
  const files: FundamentalsFile[] = []
  let entries = 0
  progress.start(`fundamentals ${basename(zip)}`, zf.entryCount)
  try {
    for await (const entry of centralDirectory(zf, zip)) {
      entries++
      if (entries % PROGRESS_EVERY === 0) progress.update(entries)
      const m = FILE_RE.exec(basename(entry.fileName))
      const cik = m ? Number(m[1]) : null
      if (cik === null || !wanted.has(cik)) continue
      const where = `${zip} (entry ${entry.fileName})`
      const other = taken.get(cik)
      if (other !== undefined) throw new InputError({ file: where }, `CIK ${cik} given twice (also ${other})`)
      const raw = gunzipIfNeeded(where, await inflate(zf, entry, where))
      checkCompanyFacts(where, raw, cik)
      taken.set(cik, entry.fileName)
      files.push({ cik, gzipped: new Uint8Array(gzipSync(raw)) })
    }
    progress.update(entries)
  } finally {
    progress.stop()
    zf.close()
  }
  findings.push({ kind: 'note', detail: countsNote(zip, entries, taken, wanted) })
  files.sort((a, b) => a.cik - b.cik)
  return files
}

/** Reads ahead this much on a small read: SEC's central directory (≈ 1.3 MB) takes two reads. */
const READ_AHEAD = 1 << 20

/**
 * yauzl reads the central directory one record at a time, two small reads per entry, each a
 * round trip through the thread pool (seconds for SEC's 19,000 entries; docs/performance.md).
 * This reader serves them from a window it reads ahead; entry data still streams.
 */
class ReadAheadReader extends RandomAccessReader {
  private window = Buffer.alloc(0)
  private windowStart = 0

  constructor(private readonly fd: number) {
    super()
  }

  override read(
    buffer: Buffer,
    offset: number,
    length: number,
    position: number,
    callback: (err: Error | null) => void,
  ): void {
    const at = position - this.windowStart
    if (at >= 0 && at + length <= this.window.length) {
      this.window.copy(buffer, offset, at, at + length)
      queueMicrotask(() => callback(null))
      return
    }
    const window = Buffer.alloc(Math.max(length, READ_AHEAD))
    read(this.fd, window, 0, window.length, position, (err, bytesRead) => {
      if (err) return callback(err)
      if (bytesRead < length) return callback(new Error('unexpected end of file'))
      this.window = window.subarray(0, bytesRead)
      this.windowStart = position
      this.window.copy(buffer, offset, 0, length)
      callback(null)
    })
  }

  override _readStreamForRange(start: number, end: number): Readable {
    // The fd is shared by every stream and closed by close() alone: destroy() would close it.
    const fs = { read, close: (_fd: number, cb: (err: null) => void) => cb(null) }
    return createReadStream('', { fd: this.fd, start, end: end - 1, autoClose: false, fs })
  }

  override close(callback: (err: Error | null) => void): void {
    close(this.fd, callback)
  }
}

async function openZip(zip: string): Promise<ZipFile> {
  const fd = await promisify(open)(zip, 'r').catch((err: unknown) => {
    throw new InputError({ file: zip }, `cannot read file: ${errorText(err)}`)
  })
  try {
    const { size } = await promisify(fstat)(fd)
    return await fromRandomAccessReaderPromise(new ReadAheadReader(fd), size, {
      lazyEntries: true,
      autoClose: false,
    })
  } catch (err) {
    // yauzl leaves a reader it could not open to its owner.
    await promisify(close)(fd).catch(() => undefined)
    throw new InputError({ file: zip }, `not a readable zip file: ${errorText(err)}`)
  }
}

/** The entries as the central directory lists them; a damaged directory is the zip's fault. */
async function* centralDirectory(zf: ZipFile, zip: string): AsyncGenerator<Entry> {
  const it = zf.eachEntry()
  for (;;) {
    let next: IteratorResult<Entry>
    try {
      next = await it.next()
    } catch (err) {
      throw new InputError({ file: zip }, `corrupt zip file: ${errorText(err)}`)
    }
    if (next.done) return
    yield next.value
  }
}

/** One entry's bytes, inflated in memory and checked against the CRC-32 the zip records. */
async function inflate(zf: ZipFile, entry: Entry, where: string): Promise<Buffer> {
  try {
    const stream = await zf.openReadStreamPromise(entry)
    const chunks: Buffer[] = []
    for await (const chunk of stream) chunks.push(chunk as Buffer)
    const data = Buffer.concat(chunks)
    // yauzl checks the sizes but not the checksum; a flipped byte in stored data would pass.
    if (crc32(data) !== entry.crc32) throw new Error('CRC-32 does not match the central directory')
    return data
  } catch (err) {
    throw new InputError({ file: where }, `corrupt zip entry: ${errorText(err)}`)
  }
}

function countsNote(
  zip: string,
  entries: number,
  taken: ReadonlyMap<number, string>,
  wanted: WantedCiks,
): string {
  const missing = [...wanted].filter(([cik]) => !taken.has(cik)).sort(([a], [b]) => a - b)
  const listed = missing.slice(0, MAX_LISTED).map(([cik, tickers]) => `${cik} (${tickers.join(', ')})`)
  if (missing.length > MAX_LISTED) listed.push(`… ${missing.length - MAX_LISTED} more`)
  const head =
    `fundamentals: ${basename(zip)} has ${entries} entries: ${taken.size} matched a stock's CIK, ` +
    `${entries - taken.size} skipped without inflating; ${missing.length} wanted CIK(s) missing`
  return missing.length > 0 ? `${head}: ${listed.join('; ')}` : head
}
