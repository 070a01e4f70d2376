import { gunzipSync } from 'node:zlib'
import { sha256Hex } from '../../platform/digest.ts'
import type { Progress } from '../../platform/progress.ts'
import { fundamentalsFiles, readFundamentalsFile } from '../data/dataset-reader.ts'
import type { Dataset, DatasetManifest } from '../data/format.ts'
import { parseCompanyFacts } from '../data/fundamentals/index.ts'
import { storedCompanyJson } from '../data/fundamentals/stored.ts'
import { STORE_FILES } from '../model-store/layout.ts'
import type { StoreBuildWriter } from '../model-store/writer.ts'

/**
 * The build's fundamentals stage (docs/methodology.md §13): every SEC companyfacts document of
 * the dataset is parsed once into its point-in-time quarters and stored as a digest per company
 * (STORE_FILES.fundamentals), and the dataset's rate curves as one document (STORE_FILES.rates),
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

/** The documents of a dataset read with its fundamentals in memory. */
export function loadedFundamentals(ds: Dataset): FundamentalsSource[] {
  return ds.fundamentals.map((f) => ({ cik: f.cik, gzipped: async () => f.gzipped }))
}

/** The documents of a dataset left on disk: each read (and checked) only if it must be parsed. */
export function fundamentalsOnDisk(dir: string, manifest: DatasetManifest): FundamentalsSource[] {
  return fundamentalsFiles(manifest).map(({ cik, path }) => ({
    cik,
    gzipped: () => readFundamentalsFile(dir, manifest, path),
  }))
}

export async function writeFundamentals(
  writer: StoreBuildWriter,
  ds: Dataset,
  sources: FundamentalsSource[],
  notes: string[],
  progress: Progress,
  reuse: { prevDir: string } | null = null,
): Promise<{ companies: number; failed: number }> {
  if (ds.rates) {
    const r = ds.rates
    const values = r.values.map((v) => Array.from(v, (x) => (Number.isNaN(x) ? null : x)))
    await writer.writeDocument(
      STORE_FILES.rates,
      JSON.stringify({ tenors: r.tenors, days: Array.from(r.days), values }),
    )
  }
  let companies = 0
  let failed = 0
  progress.start('fundamentals', sources.length)
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
        if (!linked) {
          const doc = JSON.parse(gunzipSync(await f.gzipped()).toString('utf8')) as unknown
          await writer.writeDocument(path, storedCompanyJson(parseCompanyFacts(doc)))
        }
        companies++
      } catch (err) {
        failed++
        if (failed <= 20) notes.push(`fundamentals of CIK ${f.cik} left out: ${(err as Error).message}`)
      }
      progress.update(k + 1)
    }
  } finally {
    progress.stop()
  }
  if (failed > 20) notes.push(`fundamentals: ${failed - 20} more companies left out`)
  return { companies, failed }
}
