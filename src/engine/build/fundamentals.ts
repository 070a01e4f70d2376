import { link, mkdir, writeFile } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import type { Worker } from 'node:worker_threads'
import { gunzipSync } from 'node:zlib'
import { sha256Hex } from '../../platform/digest.ts'
import type { Progress } from '../../platform/progress.ts'
import { fundamentalsFiles, readFundamentalsFile } from '../data/dataset-reader.ts'
import type { Dataset, DatasetManifest } from '../data/format.ts'
import { parseCompanyFacts } from '../data/fundamentals/index.ts'
import { storedCompanyGzip } from '../data/fundamentals/stored.ts'
import { STORE_FILES } from '../model-store/layout.ts'
import type { StoreBuildWriter } from '../model-store/writer.ts'
import { tsWorker } from './isolated.ts'

/**
 * The build's fundamentals stage (docs/methodology.md §13): every SEC companyfacts document of
 * the dataset is parsed once into its point-in-time quarters and stored as a digest per company
 * (STORE_FILES.fundamentals, gzip-compressed on the thread that parsed it, the deflate itself on
 * libuv's pool), and the dataset's rate curves as one document (STORE_FILES.rates),
 * so GET /fundamentals reads digests and never parses a filing. A document the parser rejects is
 * left out with a note naming the CIK and the reason (the rest of the build goes on). With
 * `reuse` (an incremental build over the same fundamentals files) the previous build's digests
 * are hard-linked instead of parsed again.
 */

/** sha256 over the dataset manifest's fundamentals entries (`path sha256`, sorted). */
export function fundamentalsDigest(files: Record<string, { sha256: string }>): string {
  const lines = Object.entries(files)
    .filter(([p]) => p.startsWith('fundamentals/'))
    .map(([p, f]) => `${p} ${f.sha256}`)
    .sort()
  return sha256Hex(lines.join('\n'))
}
/** One company's companyfacts document, loaded only when it must be parsed. */
export interface FundamentalsSource {
  cik: number
  gzipped: () => Promise<Uint8Array>
}

/** Where the parsed documents go: a build directory (StoreBuildWriter, or `documentWriter` on a worker). */
export type DocumentWriter = Pick<StoreBuildWriter, 'writeDocument' | 'linkDocument'>

/** A DocumentWriter over a build directory, for a thread that has no StoreBuildWriter. */
export function documentWriter(dir: string): DocumentWriter {
  return {
    async writeDocument(path, data) {
      await mkdir(dirname(join(dir, path)), { recursive: true })
      await writeFile(join(dir, path), data)
    },
    async linkDocument(prevDir, path) {
      await mkdir(dirname(join(dir, path)), { recursive: true })
      await link(join(prevDir, path), join(dir, path))
    },
  }
}

/** The documents of a dataset read with its fundamentals in memory. */
function loadedFundamentals(ds: Dataset): FundamentalsSource[] {
  return ds.fundamentals.map((f) => ({ cik: f.cik, gzipped: async () => f.gzipped }))
}

/** The documents of a dataset left on disk: each read (and checked) only if it must be parsed. */
export function fundamentalsOnDisk(
  dir: string,
  manifest: DatasetManifest,
  verify = true,
): FundamentalsSource[] {
  return fundamentalsFiles(manifest).map(({ cik, path }) => ({
    cik,
    gzipped: () => readFundamentalsFile(dir, manifest, path, verify),
  }))
}

/** Below this many companies the documents are parsed on the build's thread (a worker costs seconds to start). */
const THREAD_MIN_COMPANIES = 1000

/**
 * How the build gets the parsed documents: `linked` from the previous build (an incremental
 * build over the same filings: the dataset's documents are neither loaded nor verified, only read
 * if a link fails), parsed on a worker `thread` beside the per-stock model (a large market), or
 * parsed `inline` after the cross-sections.
 */
export type FundamentalsMode = 'linked' | 'thread' | 'inline'

export function fundamentalsMode(
  dm: DatasetManifest,
  previousDigest: string | null,
  thread: boolean | undefined,
): FundamentalsMode {
  if (previousDigest !== null && previousDigest === fundamentalsDigest(dm.files)) return 'linked'
  return (thread ?? fundamentalsFiles(dm).length >= THREAD_MIN_COMPANIES) ? 'thread' : 'inline'
}

/** The fundamentals stage, started by `startFundamentals` and finished once the model is written. */
export interface FundamentalsStage {
  finish(notes: string[], progress: Progress): Promise<void>
  cancel(): Promise<void>
}

/**
 * Starts the stage: in `thread` mode a worker parses every document of `dm` from the dataset
 * directory into the build directory now, beside the per-stock model; otherwise the work is done
 * in `finish`. The rate curves are written by `finish` (one small document).
 */
export function startFundamentals(
  mode: FundamentalsMode,
  writer: StoreBuildWriter,
  input: { datasetDir: string; dm: DatasetManifest; ds: Dataset; verify: boolean; prevDir: string | null },
): FundamentalsStage {
  const worker =
    mode === 'thread'
      ? runWorker(
          tsWorker(new URL('./fundamentals-worker.ts', import.meta.url), {
            datasetDir: input.datasetDir,
            manifest: input.dm,
            buildDir: writer.dir,
            verify: input.verify,
          }),
        )
      : null
  worker?.result.catch(() => undefined)
  return {
    async finish(notes, progress) {
      await writeRates(writer, input.ds)
      if (worker) {
        progress.start('build: parse filings (on a worker thread)', 1)
        notes.push(...(await worker.result).notes)
        progress.update(1)
        progress.stop()
        return
      }
      const sources =
        mode === 'linked' ? fundamentalsOnDisk(input.datasetDir, input.dm) : loadedFundamentals(input.ds)
      const reuse = mode === 'linked' && input.prevDir ? { prevDir: input.prevDir } : null
      await writeFundamentals(writer, sources, notes, progress, reuse)
    },
    async cancel() {
      await worker?.terminate()
    },
  }
}

/** What the fundamentals worker posts back. */
export type FundamentalsReply = { ok: true; notes: string[] } | { ok: false; message: string }

function runWorker(w: Worker): { result: Promise<{ notes: string[] }>; terminate: () => Promise<number> } {
  const result = new Promise<{ notes: string[] }>((resolve, reject) => {
    w.once('message', (m: FundamentalsReply) =>
      m.ok ? resolve({ notes: m.notes }) : reject(new Error(`fundamentals: ${m.message}`)),
    )
    w.once('error', reject)
    w.once('exit', (code) => reject(new Error(`the fundamentals worker exited (code ${code})`)))
  }).finally(() => void w.terminate())
  return { result, terminate: () => w.terminate() }
}

async function writeRates(writer: StoreBuildWriter, ds: Dataset): Promise<void> {
  if (!ds.rates) return
  const r = ds.rates
  const values = r.values.map((v) => Array.from(v, (x) => (Number.isNaN(x) ? null : x)))
  await writer.writeDocument(
    STORE_FILES.rates,
    JSON.stringify({ tenors: r.tenors, days: Array.from(r.days), values }),
  )
}

export async function writeFundamentals(
  writer: DocumentWriter,
  sources: FundamentalsSource[],
  notes: string[],
  progress: Progress,
  reuse: { prevDir: string } | null = null,
): Promise<{ companies: number; failed: number }> {
  let companies = 0
  let failed = 0
  const leftOut = (cik: number, err: unknown) => {
    failed++
    if (failed <= 20) notes.push(`fundamentals of CIK ${cik} left out: ${(err as Error).message}`)
  }
  // One digest is gzipped and written (the deflate on libuv's pool) while the next company is
  // parsed; this promise never rejects (a failed write leaves its company out).
  let writing: Promise<void> = Promise.resolve()
  progress.start('build: parse filings (companies)', sources.length)
  try {
    for (const [k, f] of sources.entries()) {
      try {
        const path = STORE_FILES.fundamentals(f.cik)
        // The same filings as the previous build (an incremental build): its digest, linked.
        const linked = reuse
          ? await writer.linkDocument(reuse.prevDir, path).then(
              () => true,
              () => false,
            )
          : false
        if (linked) companies++
        else {
          const doc = JSON.parse(gunzipSync(await f.gzipped()).toString('utf8')) as unknown
          const company = parseCompanyFacts(doc)
          await writing
          writing = storedCompanyGzip(company)
            .then((bytes) => writer.writeDocument(path, bytes))
            .then(
              () => void companies++,
              (err: unknown) => leftOut(f.cik, err),
            )
        }
      } catch (err) {
        leftOut(f.cik, err)
      }
      progress.update(k + 1)
    }
    await writing
  } finally {
    progress.stop()
  }
  if (failed > 20) notes.push(`fundamentals: ${failed - 20} more companies left out`)
  return { companies, failed }
}
