import { gunzipSync } from 'node:zlib'
import { sha256Hex } from '../../platform/digest.ts'
import type { Progress } from '../../platform/progress.ts'
import type { Dataset } from '../data/format.ts'
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
export async function writeFundamentals(
  writer: StoreBuildWriter,
  ds: Dataset,
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
  progress.start('fundamentals', ds.fundamentals.length)
  try {
    for (const [k, f] of ds.fundamentals.entries()) {
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
          const doc = JSON.parse(gunzipSync(f.gzipped).toString('utf8')) as unknown
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
