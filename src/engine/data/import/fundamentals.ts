import { readdir } from 'node:fs/promises'
import { join } from 'node:path'
import { gzipSync } from 'node:zlib'
import { InputError } from '../../../platform/errors.ts'
import type { Progress } from '../../../platform/progress.ts'
import type { FundamentalsFile, QualityFinding } from '../format.ts'
import { errorText, gunzipIfNeeded, isGzip, readRawFile } from './table-reader.ts'

/** SEC's companyfacts file names: `CIK` + ten digits, `.json` or `.json.gz`. */
export const FILE_RE = /^CIK(\d{10})\.json(\.gz)?$/i

export interface FundamentalsRead {
  files: FundamentalsFile[]
  /** The input files, for the manifest's source list. */
  paths: string[]
}

/**
 * A directory of SEC XBRL companyfacts documents, one per company. Each is parsed and checked
 * (see checkCompanyFacts), then kept gzip-compressed as given; the model reads the facts later.
 * The directory is taken whole, whatever CIKs the stocks carry: its files are the user's own
 * selection (the bulk zip, which holds every filer, is filtered instead: companyfacts-zip.ts).
 */
export async function readFundamentals(
  dir: string,
  findings: QualityFinding[],
  progress: Progress,
): Promise<FundamentalsRead> {
  const names = await readdir(dir).catch((err: unknown) => {
    throw new InputError({ file: dir }, `cannot read fundamentals directory: ${errorText(err)}`)
  })
  const wanted = names.filter((n) => FILE_RE.test(n)).sort()
  const ignored = names.filter((n) => !FILE_RE.test(n))
  if (ignored.length > 0) {
    findings.push({
      kind: 'note',
      detail: `fundamentals: ${ignored.length} file(s) not named CIK##########.json[.gz] ignored: ${ignored.join(', ')}`,
    })
  }
  const byCik = new Map<number, string>()
  const files: FundamentalsFile[] = []
  progress.start('fundamentals', wanted.length)
  try {
    for (const [i, name] of wanted.entries()) {
      const path = join(dir, name)
      const stored = await readRawFile(path)
      const raw = gunzipIfNeeded(path, stored)
      const cik = checkCompanyFacts(path, raw, Number(FILE_RE.exec(name)?.[1]))
      const other = byCik.get(cik)
      if (other !== undefined) throw new InputError({ file: path }, `CIK ${cik} given twice (also ${other})`)
      byCik.set(cik, name)
      // Keep the user's gzip bytes when the file was already compressed: identical content, no re-compression.
      const gzipped = isGzip(stored) ? new Uint8Array(stored) : new Uint8Array(gzipSync(raw))
      files.push({ cik, gzipped })
      progress.update(i + 1)
    }
  } finally {
    progress.stop()
  }
  files.sort((a, b) => a.cik - b.cik)
  return { files, paths: wanted.map((n) => join(dir, n)) }
}

/**
 * Checks one companyfacts document (an object with a numeric `cik` matching its file name and
 * a `facts` object) and returns its CIK. `file` names it in errors (for a zip entry, the zip
 * and the entry).
 */
export function checkCompanyFacts(file: string, raw: Buffer, cikFromName: number): number {
  const doc = parseJson(file, raw.toString('utf8'))
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) {
    throw new InputError({ file, line: 1, column: 1 }, 'not a companyfacts document: expected a JSON object')
  }
  const { cik, facts } = doc as { cik?: unknown; facts?: unknown }
  if (typeof cik !== 'number' || !Number.isSafeInteger(cik)) {
    throw new InputError(
      { file, column: 'cik' },
      'not a companyfacts document: "cik" is missing or not a number',
    )
  }
  if (typeof facts !== 'object' || facts === null || Array.isArray(facts)) {
    throw new InputError(
      { file, column: 'facts' },
      'not a companyfacts document: "facts" is missing or not an object',
    )
  }
  if (cik !== cikFromName) {
    throw new InputError(
      { file, column: 'cik' },
      `file name says CIK ${cikFromName} but the document says ${cik}`,
    )
  }
  return cik
}

export function parseJson(path: string, text: string): unknown {
  try {
    return JSON.parse(text)
  } catch (err) {
    throw new InputError(
      { file: path, ...jsonPosition(text, errorText(err)) },
      `invalid JSON: ${errorText(err)}`,
    )
  }
}

/** Line and column of a JSON.parse error, from the "position N" its message carries. */
function jsonPosition(text: string, message: string): { line?: number; column?: number } {
  const m = /position (\d+)/.exec(message)
  if (!m) return {}
  const pos = Number(m[1])
  const before = text.slice(0, pos)
  const line = before.split('\n').length
  return { line, column: pos - before.lastIndexOf('\n') }
}
