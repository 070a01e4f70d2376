import { basename } from 'node:path'
import { crc32, gzipSync } from 'node:zlib'
import { type Entry, openPromise, type ZipFile } from 'yauzl'
import { InputError } from '../../platform/errors.ts'
import type { Progress } from '../../platform/progress.ts'
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
  const zf = await openPromise(zip, { lazyEntries: true, autoClose: false }).catch((err: unknown) => {
    throw new InputError({ file: zip }, `not a readable zip file: ${errorText(err)}`)
  })
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
