import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { parse } from 'csv-parse/sync'
import { parseIsoDay } from '../platform/dates.ts'
import { sha256File } from '../platform/digest.ts'
import { AppError } from '../platform/errors.ts'
import { readParquetFile } from '../platform/parquet/index.ts'
import { contentDigest } from './dataset-writer.ts'
import {
  type AssetType,
  DATASET_FORMAT,
  DATASET_FORMAT_VERSION,
  type Dataset,
  type DatasetManifest,
  type FactorRole,
  type FactorRow,
  type FundamentalsFile,
  type ImportReport,
  type Panel,
  type PriceField,
  type Rates,
  type SecurityRow,
  type Series,
  TRUTH_FIELDS,
  type Truth,
  type TruthField,
} from './format.ts'
import { DATASET_FILES } from './layout.ts'

export interface ReadOptions {
  /** Check every file against the manifest digests (default true). */
  verify?: boolean
  /** Load the companyfacts documents into memory (default false: they are read on demand). */
  fundamentals?: boolean
  /** Load the synthetic generator's truth panels when present (default false). */
  truth?: boolean
}

function fail(dir: string, message: string): never {
  throw new AppError('INVALID_INPUT', `dataset ${dir}: ${message}`)
}

export async function readManifest(dir: string): Promise<DatasetManifest> {
  let raw: string
  try {
    raw = await readFile(join(dir, DATASET_FILES.manifest), 'utf8')
  } catch {
    fail(dir, 'no manifest.json (not a dataset directory, or an unfinished one)')
  }
  let m: DatasetManifest
  try {
    m = JSON.parse(raw) as DatasetManifest
  } catch {
    fail(dir, 'manifest.json is not valid JSON')
  }
  if (m.format !== DATASET_FORMAT)
    fail(dir, `manifest format is ${JSON.stringify(m.format)}, expected ${DATASET_FORMAT}`)
  if (m.format_version !== DATASET_FORMAT_VERSION) {
    fail(
      dir,
      `format_version ${m.format_version} is not supported (this erm3 reads version ${DATASET_FORMAT_VERSION})`,
    )
  }
  return m
}

/** Checks files against the manifest: all of them, or those `only` accepts (the ones being read). */
export async function verifyDataset(
  dir: string,
  manifest: DatasetManifest,
  only: (path: string) => boolean = () => true,
): Promise<void> {
  for (const [path, want] of Object.entries(manifest.files)) {
    if (!only(path)) continue
    let got: { sha256: string; bytes: number }
    try {
      got = await sha256File(join(dir, path))
    } catch {
      fail(dir, `${path} is listed in the manifest but missing`)
    }
    if (got.sha256 !== want.sha256 || got.bytes !== want.bytes)
      fail(dir, `${path} does not match its manifest digest`)
  }
  if (contentDigest(manifest.files) !== manifest.digest)
    fail(dir, 'manifest digest does not match its file list')
}

export async function readDataset(
  dir: string,
  opts: ReadOptions = {},
): Promise<{ dataset: Dataset; manifest: DatasetManifest }> {
  const manifest = await readManifest(dir)
  // Verify what this read loads: fundamentals and truth only when they are asked for.
  const loads = (path: string) =>
    (opts.fundamentals === true || !path.startsWith('fundamentals/')) &&
    (opts.truth === true || !path.startsWith('truth/'))
  if (opts.verify ?? true) await verifyDataset(dir, manifest, loads)
  const calendar = Int32Array.from(await readCsv(dir, DATASET_FILES.calendar), (r) => dayOrFail(dir, r.date))
  const adj = await readPanel(dir, DATASET_FILES.price('adj_close'), calendar)
  const symbols = adj.names
  const optional = async (field: PriceField): Promise<Panel | null> => {
    if (!manifest.price_fields.includes(field)) return null
    const p = await readPanel(dir, DATASET_FILES.price(field), calendar)
    if (p.names.join('\u0000') !== symbols.join('\u0000'))
      fail(dir, `${field} columns differ from adj_close columns`)
    return p.values
  }
  const dataset: Dataset = {
    source: manifest.source,
    calendar,
    securities: (await readCsv(dir, DATASET_FILES.securities)).map(securityRow),
    factors: (await readCsv(dir, DATASET_FILES.factors)).map(factorRow),
    symbols,
    prices: {
      adj_close: adj.values,
      close: await optional('close'),
      volume: await optional('volume'),
      shares_out: await optional('shares_out'),
    },
    rates: manifest.rate_tenors.length ? await readRates(dir) : null,
    series: manifest.series.length ? await readSeries(dir, calendar) : null,
    fundamentals: opts.fundamentals ? await readAllFundamentals(dir, manifest) : [],
    truth: opts.truth && manifest.has_truth ? await readTruth(dir, calendar) : null,
    report: manifest.files[DATASET_FILES.report]
      ? (JSON.parse(await readFile(join(dir, DATASET_FILES.report), 'utf8')) as ImportReport)
      : null,
  }
  return { dataset, manifest }
}

type CsvRow = Record<string, string>

async function readCsv(dir: string, path: string): Promise<CsvRow[]> {
  const text = await readFile(join(dir, path), 'utf8')
  return parse(text, { columns: true, skip_empty_lines: true }) as CsvRow[]
}

function dayOrFail(dir: string, s: string | undefined): number {
  const d = s === undefined ? null : parseIsoDay(s)
  if (d === null) fail(dir, `bad date ${JSON.stringify(s)}`)
  return d
}

const nullable = (s: string | undefined): string | null => (s === undefined || s === '' ? null : s)

function securityRow(r: CsvRow): SecurityRow {
  return {
    symbol: r.symbol,
    ticker: r.ticker,
    name: r.name,
    assetType: r.asset_type as AssetType,
    sector: nullable(r.sector),
    industry: nullable(r.industry),
    cik: r.cik ? Number(r.cik) : null,
    validFrom: r.valid_from,
    validTo: nullable(r.valid_to),
  }
}

function factorRow(r: CsvRow): FactorRow {
  return {
    role: r.role as FactorRole,
    code: r.code,
    ticker: nullable(r.ticker),
    kind: r.kind === 'index' ? 'index' : 'etf',
  }
}

async function readPanel(
  dir: string,
  path: string,
  calendar: Int32Array,
): Promise<{ names: string[]; values: Panel }> {
  const table = await readParquetFile(join(dir, path))
  const [date, ...rest] = table.columns
  if (date?.name !== 'date' || date.type !== 'DATE')
    fail(dir, `${path}: first column must be the DATE column "date"`)
  if (date.values.length !== calendar.length || date.values.some((d, i) => d !== calendar[i])) {
    fail(dir, `${path}: dates differ from calendar.csv`)
  }
  const values: Panel = []
  for (const c of rest) {
    if (c.type === 'DOUBLE') values.push(c.values)
    else if (c.type === 'FLOAT') values.push(Float64Array.from(c.values))
    else fail(dir, `${path}: column ${c.name} is ${c.type}, expected a floating-point column`)
  }
  return { names: rest.map((c) => c.name), values }
}

async function readRates(dir: string): Promise<Rates> {
  const rows = await readCsv(dir, DATASET_FILES.rates)
  const tenors = rows.length ? Object.keys(rows[0]).filter((k) => k !== 'date') : []
  return {
    tenors,
    days: Int32Array.from(rows, (r) => dayOrFail(dir, r.date)),
    values: tenors.map((t) => Float64Array.from(rows, (r) => (r[t] === '' ? Number.NaN : Number(r[t])))),
  }
}

async function readSeries(dir: string, calendar: Int32Array): Promise<Series> {
  const p = await readPanel(dir, DATASET_FILES.series, calendar)
  return { names: p.names, values: p.values }
}

async function readTruth(dir: string, calendar: Int32Array): Promise<Truth> {
  const fields = {} as Record<TruthField, Panel>
  for (const f of TRUTH_FIELDS) fields[f] = (await readPanel(dir, DATASET_FILES.truth(f), calendar)).values
  const params = JSON.parse(await readFile(join(dir, DATASET_FILES.truthParams), 'utf8')) as Record<
    string,
    unknown
  >
  return { fields, params }
}

async function readAllFundamentals(dir: string, manifest: DatasetManifest): Promise<FundamentalsFile[]> {
  const out: FundamentalsFile[] = []
  for (const path of Object.keys(manifest.files)) {
    const m = /^fundamentals\/CIK(\d{10})\.json\.gz$/.exec(path)
    if (m) out.push({ cik: Number(m[1]), gzipped: new Uint8Array(await readFile(join(dir, path))) })
  }
  return out
}
