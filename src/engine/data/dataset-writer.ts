import { link, mkdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { writeDirAtomically } from '../../platform/atomic-dir.ts'
import { csvDocument } from '../../platform/csv.ts'
import { isoFromDay } from '../../platform/dates.ts'
import { sha256Hex } from '../../platform/digest.ts'
import { type Progress, silentProgress } from '../../platform/progress.ts'
import { type ParquetColumn, writeParquetFile } from '../parquet/index.ts'
import {
  DATASET_FORMAT,
  DATASET_FORMAT_VERSION,
  type Dataset,
  type DatasetManifest,
  type FileDigest,
  PANEL_ROW_GROUP_DAYS,
  type Panel,
  PRICE_FIELDS,
  type PriceField,
  TRUTH_FIELDS,
} from './format.ts'
import { DATASET_FILES, fundamentalsFileName } from './layout.ts'

/**
 * Writes a dataset directory atomically: everything goes to a temporary sibling that is renamed
 * into place only after every file and the manifest are written, so a failed or interrupted
 * write never leaves a dataset a reader would accept (and never damages an existing one).
 */
export async function writeDataset(
  ds: Dataset,
  outDir: string,
  progress: Progress = silentProgress,
  reuse: DatasetReuse = {},
): Promise<DatasetManifest> {
  validateShape(ds, reuse.panel !== undefined)
  return writeDirAtomically(outDir, async (dir) => {
    // Every digest is hashed from the bytes as they are written, never read back afterwards.
    const written = new Map<string, FileDigest>()
    const writeParquet = async (path: string, table: Parameters<typeof writeParquetFile>[1]) =>
      written.set(path, await writeParquetFile(join(dir, path), table, PANELS))
    const put = async (path: string, data: string | Uint8Array) => {
      const linked = reuse.link?.get(path)
      if (linked) {
        await link(linked.from, join(dir, path))
        written.set(path, linked.digest)
        return
      }
      const bytes = typeof data === 'string' ? Buffer.from(data) : data
      await writeFile(join(dir, path), bytes)
      written.set(path, { sha256: sha256Hex(bytes), bytes: bytes.length })
    }
    await mkdir(join(dir, 'prices'))
    const meta = PANEL_METADATA
    await put(
      DATASET_FILES.calendar,
      csvDocument(
        ['date'],
        Array.from(ds.calendar, (d) => [isoFromDay(d)]),
      ),
    )
    await put(DATASET_FILES.securities, securitiesCsv(ds))
    await put(
      DATASET_FILES.factors,
      csvDocument(
        ['role', 'code', 'ticker', 'kind'],
        ds.factors.map((f) => [f.role, f.code, f.ticker, f.kind]),
      ),
    )
    const fields = PRICE_FIELDS.filter((f) => ds.prices[f] !== null)
    progress.start('dataset: write price panels', fields.length)
    for (const [i, field] of fields.entries()) {
      const panel = ds.prices[field] as Panel
      const path = DATASET_FILES.price(field)
      if (reuse.panel) written.set(path, await reuse.panel(field, join(dir, path), PANEL_METADATA))
      else await writeParquet(path, { columns: panelColumns(ds, panel), metadata: meta })
      progress.update(i + 1)
    }
    progress.stop()
    if (ds.rates) await put(DATASET_FILES.rates, ratesCsv(ds))
    if (ds.series) {
      const cols = ds.series.names.map(
        (name, i): ParquetColumn => ({
          name,
          type: 'DOUBLE',
          values: ds.series?.values[i] ?? new Float64Array(),
        }),
      )
      await writeParquet(DATASET_FILES.series, { columns: [dateColumn(ds), ...cols], metadata: meta })
    }
    if (ds.fundamentals.length > 0) {
      await mkdir(join(dir, 'fundamentals'))
      await writeFundamentals(ds, progress, put)
    }
    if (ds.truth) {
      await mkdir(join(dir, 'truth'))
      progress.start('dataset: write truth panels', TRUTH_FIELDS.length)
      for (const [i, field] of TRUTH_FIELDS.entries()) {
        const cols = ds.truth.fields[field].map(
          (v, i): ParquetColumn => ({ name: ds.symbols[i], type: 'FLOAT', values: v }),
        )
        await writeParquet(DATASET_FILES.truth(field), { columns: [dateColumn(ds), ...cols], metadata: meta })
        progress.update(i + 1)
      }
      progress.stop()
      await put(DATASET_FILES.truthParams, `${JSON.stringify(ds.truth.params, null, 2)}\n`)
    }
    if (ds.report) await put(DATASET_FILES.report, `${JSON.stringify(ds.report, null, 2)}\n`)
    const manifest = buildManifest(ds, fields, written)
    await writeFile(join(dir, DATASET_FILES.manifest), `${JSON.stringify(manifest, null, 2)}\n`)
    return manifest
  })
}

/**
 * What a dataset written from a previous one (the daily update's append, engine/update) takes
 * from it instead of encoding: `panel` writes each price panel (ds.prices then need not span the
 * calendar) and returns its digest; files named in `link` are hard-linked from another dataset
 * with their recorded digest instead of written from `ds`.
 */
export interface DatasetReuse {
  panel?: (field: PriceField, file: string, metadata: Record<string, string>) => Promise<FileDigest>
  link?: ReadonlyMap<string, { from: string; digest: FileDigest }>
}

/** Panels are split into row groups of fixed day ranges, so a build can read just the last days. */
export const PANELS = { rowGroupRows: PANEL_ROW_GROUP_DAYS }

const PANEL_METADATA = { format: DATASET_FORMAT, format_version: String(DATASET_FORMAT_VERSION) }

function validateShape(ds: Dataset, panelsWritten: boolean): void {
  const n = ds.symbols.length
  const t = ds.calendar.length
  if (new Set(ds.symbols).size !== n) throw new Error('dataset: duplicate symbol keys')
  for (const field of PRICE_FIELDS) {
    const panel = ds.prices[field]
    if (!panel) continue
    if (panel.length !== n) throw new Error(`dataset: ${field} has ${panel.length} series for ${n} symbols`)
    if (panelsWritten) continue
    for (const [i, s] of panel.entries()) {
      if (s.length !== t)
        throw new Error(`dataset: ${field}[${ds.symbols[i]}] has ${s.length} days, calendar has ${t}`)
    }
  }
  for (let i = 1; i < t; i++) {
    if (ds.calendar[i] <= ds.calendar[i - 1]) throw new Error('dataset: calendar is not strictly ascending')
  }
}

function dateColumn(ds: Dataset): ParquetColumn {
  return { name: 'date', type: 'DATE', values: ds.calendar }
}

function panelColumns(ds: Dataset, panel: Panel): ParquetColumn[] {
  return [
    dateColumn(ds),
    ...panel.map((values, i): ParquetColumn => ({ name: ds.symbols[i], type: 'DOUBLE', values })),
  ]
}

function securitiesCsv(ds: Dataset): string {
  return csvDocument(
    ['symbol', 'ticker', 'name', 'asset_type', 'sector', 'industry', 'cik', 'valid_from', 'valid_to'],
    ds.securities.map((s) => [
      s.symbol,
      s.ticker,
      s.name,
      s.assetType,
      s.sector,
      s.industry,
      s.cik,
      s.validFrom,
      s.validTo,
    ]),
  )
}

function ratesCsv(ds: Dataset): string {
  const r = ds.rates
  if (!r) return ''
  const rows: (string | number)[][] = []
  for (let i = 0; i < r.days.length; i++) rows.push([isoFromDay(r.days[i]), ...r.values.map((v) => v[i])])
  return csvDocument(['date', ...r.tenors], rows)
}

async function writeFundamentals(
  ds: Dataset,
  progress: Progress,
  put: (path: string, data: Uint8Array) => Promise<void>,
): Promise<void> {
  progress.start('dataset: write filings (companies)', ds.fundamentals.length)
  let done = 0
  // Bounded parallelism: thousands of small files, the disk is faster with a few writes in flight.
  const queue = [...ds.fundamentals]
  const worker = async () => {
    for (let f = queue.shift(); f; f = queue.shift()) {
      await put(`fundamentals/${fundamentalsFileName(f.cik)}`, f.gzipped)
      progress.update(++done)
    }
  }
  await Promise.all([worker(), worker(), worker(), worker()])
  progress.stop()
}

function buildManifest(ds: Dataset, fields: PriceField[], written: Map<string, FileDigest>): DatasetManifest {
  const files: Record<string, FileDigest> = {}
  const paths: string[] = [DATASET_FILES.calendar, DATASET_FILES.securities, DATASET_FILES.factors]
  for (const f of fields) paths.push(DATASET_FILES.price(f))
  if (ds.rates) paths.push(DATASET_FILES.rates)
  if (ds.series) paths.push(DATASET_FILES.series)
  for (const f of ds.fundamentals) paths.push(`fundamentals/${fundamentalsFileName(f.cik)}`)
  if (ds.truth) {
    for (const f of TRUTH_FIELDS) paths.push(DATASET_FILES.truth(f))
    paths.push(DATASET_FILES.truthParams)
  }
  if (ds.report) paths.push(DATASET_FILES.report)
  paths.sort()
  for (const p of paths) {
    const digest = written.get(p)
    if (!digest) throw new Error(`dataset: ${p} was not written`)
    files[p] = digest
  }
  const stocks = new Set(ds.securities.filter((s) => s.assetType === 'stock').map((s) => s.symbol)).size
  return {
    format: DATASET_FORMAT,
    format_version: DATASET_FORMAT_VERSION,
    source: ds.source,
    calendar: {
      first: ds.calendar.length ? isoFromDay(ds.calendar[0]) : '',
      last: ds.calendar.length ? isoFromDay(ds.calendar[ds.calendar.length - 1]) : '',
      days: ds.calendar.length,
    },
    counts: {
      symbols: ds.symbols.length,
      stocks,
      etfs: ds.symbols.length - stocks,
      security_rows: ds.securities.length,
      fundamentals: ds.fundamentals.length,
    },
    price_fields: fields,
    rate_tenors: ds.rates?.tenors ?? [],
    series: ds.series?.names ?? [],
    has_truth: ds.truth !== null,
    files,
    digest: contentDigest(files),
  }
}

/** The dataset's identity: a hash over the sorted `path sha256` lines (manifest excluded). */
export function contentDigest(files: Record<string, { sha256: string }>): string {
  const lines = Object.keys(files)
    .sort()
    .map((p) => `${p} ${files[p].sha256}\n`)
  return sha256Hex(lines.join(''))
}
