import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { parse } from 'csv-parse/sync'
import { parseIsoDay } from '../../platform/dates.ts'
import { sha256File, sha256Hex } from '../../platform/digest.ts'
import { AppError } from '../../platform/errors.ts'
import { decodeSource, readMeta, readParquetFile, withFileSource } from '../parquet/index.ts'

import { contentDigest } from './dataset-writer.ts'
import {
  type AssetType,
  DATASET_FORMAT,
  type Dataset,
  type DatasetManifest,
  type FactorRole,
  type FactorRow,
  type FileDigest,
  type FundamentalsFile,
  type ImportReport,
  type Panel,
  type PriceField,
  type Rates,
  READABLE_FORMAT_VERSIONS,
  type SecurityRow,
  type Series,
  TRUTH_FIELDS,
  type Truth,
  type TruthField,
} from './format.ts'
import { DATASET_FILES } from './layout.ts'
import { ByteArena, verifiedParts } from './verified-parts.ts'

export interface ReadOptions {
  /** Check every file against the manifest digests (default true). */
  verify?: boolean
  /** Load the companyfacts documents into memory (default false: they are read on demand). */
  fundamentals?: boolean
  /** Load the synthetic generator's truth panels when present (default false). */
  truth?: boolean
  /**
   * Decode the price and series panels only from the row group holding this calendar index on
   * (a tail read: `Dataset.panelsFrom` says where they start; earlier days are unspecified). Only the
   * parts read are verified. Version 1 datasets, which have no parts, are read whole.
   */
  fromDay?: number
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
  if (!READABLE_FORMAT_VERSIONS.includes(m.format_version)) {
    fail(
      dir,
      `format_version ${m.format_version} is not supported (this erm3 reads versions ${READABLE_FORMAT_VERSIONS.join(', ')})`,
    )
  }
  return m
}

/** Checks files against the manifest: all of them, or those `only` accepts (the ones being read). */
async function verifyDataset(
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
  const verify = opts.verify ?? true
  const tail = tailRead(manifest, opts.fromDay ?? 0)
  // The panels of a version 2 dataset are read part by part into one arena and, when verifying,
  // checked as they are decoded (verifiedParts): a tail read checks only what it reads, a whole
  // read reads each file once (not once to hash and again to decode).
  const partsRead = manifest.format_version >= 2
  const byParts = (path: string) => partsRead && (path.startsWith('prices/') || path === DATASET_FILES.series)
  // Verify what this read loads: fundamentals and truth only when they are asked for.
  const loads = (path: string) =>
    (opts.fundamentals === true || !path.startsWith('fundamentals/')) &&
    (opts.truth === true || !path.startsWith('truth/')) &&
    !byParts(path)
  if (verify) await verifyDataset(dir, manifest, loads)
  const calendar = await readCalendar(dir)
  // Panels are read one after another: they share the arena of their parts.
  const arena = new ByteArena()
  const panel = (path: string) => {
    if (!byParts(path)) return readPanel(dir, path, calendar)
    const parts = manifest.files[path]?.parts
    if (!parts) fail(dir, `${path} has no part digests in the manifest`)
    // A whole file's parts at once: one buffer the size of the largest, reused file after file.
    if (tail === null) arena.reserve(manifest.files[path].bytes)
    return readPanel(dir, path, calendar, { fromDay: tail ?? 0, parts, verify, arena })
  }
  const adj = await panel(DATASET_FILES.price('adj_close'))
  const symbols = adj.names
  const optional = async (field: PriceField): Promise<Panel | null> => {
    if (!manifest.price_fields.includes(field)) return null
    const p = await panel(DATASET_FILES.price(field))
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
    series: manifest.series.length ? await readSeries(panel) : null,
    fundamentals: opts.fundamentals ? await readAllFundamentals(dir, manifest) : [],
    truth: opts.truth && manifest.has_truth ? await readTruth(dir, calendar) : null,
    report: manifest.files[DATASET_FILES.report]
      ? (JSON.parse(await readFile(join(dir, DATASET_FILES.report), 'utf8')) as ImportReport)
      : null,
  }
  if (tail !== null) dataset.panelsFrom = adj.firstRow
  return { dataset, manifest }
}

/** The day a tail read starts from, or null for a whole read (none asked, or a version 1 dataset). */
function tailRead(manifest: DatasetManifest, fromDay: number): number | null {
  if (!Number.isSafeInteger(fromDay) || fromDay < 0)
    throw new RangeError(`fromDay must be a non-negative integer, got ${fromDay}`)
  return fromDay > 0 && manifest.format_version >= 2 ? fromDay : null
}

type CsvRow = Record<string, string>

/** A dataset's calendar.csv as day numbers; a line that is not a date fails, naming the file. */
export async function readCalendar(dir: string): Promise<Int32Array> {
  return Int32Array.from(await readCsv(dir, DATASET_FILES.calendar), (r) => dayOrFail(dir, r.date))
}

async function readCsv(dir: string, path: string): Promise<CsvRow[]> {
  const text = await readFile(join(dir, path), 'utf8')
  return plainCsv(text) ?? (parse(text, { columns: true, skip_empty_lines: true }) as CsvRow[])
}

/**
 * The rows of a CSV as the dataset writer writes it (csvLine: RFC 4180, one line end throughout,
 * quotes only around a whole cell), read in one pass: several times faster than the general
 * parser, which an incremental build would otherwise spend a noticeable part of its time in.
 * null for anything else (a stray quote or CR, a row of another width): the general parser reads
 * it, or reports it.
 */
function plainCsv(text: string): CsvRow[] | null {
  const nl = text.indexOf('\n')
  const eol = nl > 0 && text.charCodeAt(nl - 1) === 13 ? '\r\n' : '\n'
  const records: string[][] = []
  let i = 0
  while (i < text.length) {
    if (text.startsWith(eol, i)) {
      i += eol.length // an empty line
      continue
    }
    const rec: string[] = []
    i = csvRecord(text, i, eol, rec)
    if (i < 0) return null
    records.push(rec)
  }
  const header = records[0] ?? []
  const rows: CsvRow[] = []
  for (let k = 1; k < records.length; k++) {
    const cells = records[k]
    if (cells.length !== header.length) return null
    const row: CsvRow = {}
    for (let j = 0; j < header.length; j++) row[header[j]] = cells[j]
    rows.push(row)
  }
  return rows
}

/** Reads one record from `i` into `rec`; the index after its line end, or −1 if it is not plain. */
function csvRecord(text: string, i: number, eol: string, rec: string[]): number {
  const n = text.length
  for (;;) {
    if (text.charCodeAt(i) === 34) {
      let cell = ''
      let j = i + 1
      for (;;) {
        const q = text.indexOf('"', j)
        if (q < 0) return -1
        cell += text.slice(j, q)
        if (text.charCodeAt(q + 1) !== 34) {
          i = q + 1
          break
        }
        cell += '"'
        j = q + 2
      }
      rec.push(cell)
    } else {
      let j = i
      for (let c = text.charCodeAt(j); j < n && c !== 44 && c !== 10 && c !== 13 && c !== 34; )
        c = text.charCodeAt(++j)
      if (text.charCodeAt(j) === 34) return -1
      rec.push(text.slice(i, j))
      i = j
    }
    if (i >= n) return n
    if (text.charCodeAt(i) === 44) i++
    else if (text.startsWith(eol, i)) return i + eol.length
    else return -1
  }
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

/**
 * A panel: with `tail` (a version 2 dataset), part by part from the row group holding
 * tail.fromDay on (0: whole); without, the whole file in one read.
 */
async function readPanel(
  dir: string,
  path: string,
  calendar: Int32Array,
  tail?: { fromDay: number; parts: NonNullable<FileDigest['parts']>; verify: boolean; arena: ByteArena },
): Promise<{ names: string[]; values: Panel; firstRow: number }> {
  const file = join(dir, path)
  const table = tail
    ? await withFileSource(file, async (raw) => {
        const src = verifiedParts(raw, tail.parts, (m) => fail(dir, `${path}: ${m}`), tail.arena, tail.verify)
        const fromRow = tail.fromDay
        try {
          return await decodeSource(src, await readMeta(src, { fromRow }), {
            fromRow,
            skippedRows: 'untouched',
          })
        } finally {
          // The decoded columns are copies: the next panel may reuse the parts' memory.
          tail.arena.reset()
        }
      })
    : await readParquetFile(file)
  const [date, ...rest] = table.columns
  if (date?.name !== 'date' || date.type !== 'DATE')
    fail(dir, `${path}: first column must be the DATE column "date"`)
  const dates = date.values
  let same = dates.length === calendar.length
  for (let i = table.firstRow; same && i < dates.length; i++) same = dates[i] === calendar[i]
  if (!same) fail(dir, `${path}: dates differ from calendar.csv`)
  const values: Panel = []
  for (const c of rest) {
    if (c.type === 'DOUBLE') values.push(c.values)
    else if (c.type === 'FLOAT') values.push(Float64Array.from(c.values))
    else fail(dir, `${path}: column ${c.name} is ${c.type}, expected a floating-point column`)
  }
  return { names: rest.map((c) => c.name), values, firstRow: table.firstRow }
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

async function readSeries(
  panel: (path: string) => Promise<{ names: string[]; values: Panel }>,
): Promise<Series> {
  const p = await panel(DATASET_FILES.series)
  return { names: p.names, values: p.values }
}

async function readTruth(dir: string, calendar: Int32Array): Promise<Truth> {
  const fields = {} as Record<TruthField, Float32Array[]>
  for (const f of TRUTH_FIELDS) {
    // The files hold FLOAT columns, so single precision loses nothing.
    fields[f] = (await readPanel(dir, DATASET_FILES.truth(f), calendar)).values.map((v) =>
      Float32Array.from(v),
    )
  }
  const params = JSON.parse(await readFile(join(dir, DATASET_FILES.truthParams), 'utf8')) as Record<
    string,
    unknown
  >
  return { fields, params }
}

async function readAllFundamentals(dir: string, manifest: DatasetManifest): Promise<FundamentalsFile[]> {
  const out: FundamentalsFile[] = []
  for (const { cik, path } of fundamentalsFiles(manifest))
    out.push({ cik, gzipped: new Uint8Array(await readFile(join(dir, path))) })
  return out
}

/** The dataset's companyfacts documents (CIK and path), in manifest order. */
export function fundamentalsFiles(manifest: DatasetManifest): { cik: number; path: string }[] {
  const out: { cik: number; path: string }[] = []
  for (const path of Object.keys(manifest.files)) {
    const m = /^fundamentals\/CIK(\d{10})\.json\.gz$/.exec(path)
    if (m) out.push({ cik: Number(m[1]), path })
  }
  return out
}

/** One companyfacts document of the dataset, checked against its manifest digest (unless `verify` is false). */
export async function readFundamentalsFile(
  dir: string,
  manifest: DatasetManifest,
  path: string,
  verify = true,
): Promise<Uint8Array> {
  const bytes = new Uint8Array(await readFile(join(dir, path)))
  if (!verify) return bytes
  const want = manifest.files[path]
  if (!want || sha256Hex(bytes) !== want.sha256 || bytes.length !== want.bytes)
    fail(dir, `${path} does not match its manifest digest`)
  return bytes
}
