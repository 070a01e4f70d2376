/**
 * The daily update's dataset append: the canonical dataset of the data directory written from the
 * previous one plus the new days, at a cost that scales with the days since the last complete row
 * group rather than with the history. It is the file-for-file, byte-for-byte result of a full
 * assemble (assemble.ts) of the same data directory, and is used only when the previous dataset
 * is provably that result's prefix: the same securities in the same order, the same price fields,
 * the calendar only extended, no bar file rewritten, no shares filing that changes an old day.
 * Anything else answers why not, and the caller assembles in full.
 *
 * Price panels keep the bytes of their complete row groups (PANEL_ROW_GROUP_DAYS days each) and
 * their recorded digests; the last groups and the footer are encoded anew. Fundamentals files the
 * data directory has not changed since are hard-linked; the small files are written again.
 */
import { readFile, stat } from 'node:fs/promises'
import { join } from 'node:path'
import { isoFromDay, parseIsoDay } from '../../platform/dates.ts'
import { nyseTradingDays } from '../data/calendar.ts'
import { readCalendar, readManifest } from '../data/dataset-reader.ts'
import { PANELS, writeDataset } from '../data/dataset-writer.ts'
import { MARKET_ETF } from '../data/etf-registry.ts'
import {
  DATASET_FORMAT_VERSION,
  type Dataset,
  type DatasetManifest,
  type FileDigest,
  type FundamentalsFile,
  type ImportReport,
  PANEL_ROW_GROUP_DAYS,
  PRICE_FIELDS,
  type QualityFinding,
  type SecurityRow,
} from '../data/format.ts'
import { seriesFindings } from '../data/import/quality.ts'
import { buildReport } from '../data/import/report.ts'
import { DATASET_FILES, fundamentalsFileName } from '../data/layout.ts'
import type { RowGroup } from '../parquet/encode.ts'
import { readKeptGroups, readParquetFile, writeParquetContinuation } from '../parquet/index.ts'
import type { DailyBar } from '../sources/types.ts'
import {
  type AssembleOptions,
  assembleDataset,
  factorRows,
  pricePanels,
  ratesTable,
  securityRows,
  sharesPanel,
  vendorSource,
} from './assemble.ts'
import { parseCsvTable } from './csv-table.ts'
import { DATA_DIR_FILES, readBars, readOptional } from './data-dir.ts'
import { factsCiks, readClassification } from './dir-files.ts'
import { readIdentity } from './identity.ts'

/** What the update holds of the bar files once it has appended (run.ts). */
export interface StoredBars {
  /** symbol → its stored bars: every one when in `complete`, else the file's last bars. */
  bars: ReadonlyMap<string, readonly DailyBar[]>
  complete: ReadonlySet<string>
  /** Symbols whose bar file this run rewrote (a restated history). */
  rewritten: ReadonlySet<string>
  /** The data directory's last day before this run appended. */
  storedThrough: string
}

const SERIES_KINDS = new Set<QualityFinding['kind']>(['gap', 'flat_run', 'large_move'])

/** The previous dataset, as far as an append needs it. */
interface Previous {
  dir: string
  manifest: DatasetManifest
  /** When its manifest was written: data-directory files older than that are in it as they are. */
  writtenMs: number
  calendar: Int32Array
  report: ImportReport
  /** symbol → cik of its stock rows (the shares panel's filer). */
  ciks: Map<string, number>
  /** symbol → its series findings (gaps, flat runs, large moves) in the previous report. */
  series: Map<string, QualityFinding[]>
}

/** Bytes per bar line assumed for the first read of a file's end (real lines are ~50). */
const LINE_BYTES = 64

/**
 * Which bars the update reads of each file: those from the first day of the previous dataset's
 * last row group on (a few days earlier when that group is just complete), with a first read of
 * about that many lines and a few more. Null when there is no readable previous dataset: the
 * update then reads every bar.
 */
export async function tailStart(dataDir: string): Promise<{ from: string; bytes: number } | null> {
  const calendar = await readCalendar(join(dataDir, DATA_DIR_FILES.dataset)).catch(() => null)
  if (calendar === null || calendar.length < 2) return null
  const start = Math.floor(calendar.length / PANEL_ROW_GROUP_DAYS) * PANEL_ROW_GROUP_DAYS
  const from = Math.max(0, Math.min(start, calendar.length - 8))
  return { from: isoFromDay(calendar[from]), bytes: (calendar.length - from + 16) * LINE_BYTES }
}

async function readPrevious(dataDir: string): Promise<Previous | string> {
  const dir = join(dataDir, DATA_DIR_FILES.dataset)
  let manifest: DatasetManifest
  try {
    manifest = await readManifest(dir)
  } catch {
    return 'no previous dataset'
  }
  if (manifest.format_version !== DATASET_FORMAT_VERSION) return 'the previous dataset has an older format'
  if (manifest.has_truth || manifest.series.length > 0)
    return 'the previous dataset is not a data directory’s'
  if (manifest.price_fields.join() !== PRICE_FIELDS.join()) return 'the price fields changed'
  for (const f of PRICE_FIELDS)
    if (!manifest.files[DATASET_FILES.price(f)]?.parts)
      return `the previous ${f} panel has no row-group digests`
  const read = async (path: string) => (await readOptional(join(dir, path))) ?? ''
  let calendar: Int32Array
  try {
    calendar = await readCalendar(dir)
  } catch {
    return 'the previous calendar is unreadable'
  }
  if (calendar.length !== manifest.calendar.days) return 'the previous calendar does not match its manifest'
  const report = JSON.parse((await read(DATASET_FILES.report)) || '{"findings":[]}') as ImportReport
  const ciks = new Map<string, number>()
  const rows = parseCsvTable(await read(DATASET_FILES.securities), join(dir, DATASET_FILES.securities), [
    'symbol',
    'ticker',
  ])
  for (const r of rows)
    if (r.cells.asset_type === 'stock' && r.cells.cik !== '') ciks.set(r.cells.symbol, Number(r.cells.cik))
  const series = new Map<string, QualityFinding[]>()
  for (const f of report.findings)
    if (f.symbol !== undefined && SERIES_KINDS.has(f.kind))
      series.set(f.symbol, [...(series.get(f.symbol) ?? []), f])
  const writtenMs = (await stat(join(dir, DATASET_FILES.manifest))).mtimeMs
  return { dir, manifest, writtenMs, calendar, report, ciks, series }
}

/**
 * Writes `<dataDir>/dataset` (or opts.out) by appending to the previous dataset, or answers why
 * that is not possible (nothing written then).
 */
async function appendDataset(
  dataDir: string,
  stored: StoredBars,
  opts: AssembleOptions = {},
): Promise<{ manifest: DatasetManifest; report: ImportReport } | { fallback: string }> {
  const prev = await readPrevious(dataDir)
  if (typeof prev === 'string') return { fallback: prev }
  const plan = await planAppend(dataDir, stored, prev)
  if (typeof plan === 'string') return { fallback: plan }
  const ds = await appendedDataset(dataDir, plan, prev, opts)
  if (typeof ds === 'string') return { fallback: ds }
  const fundamentals = await linkedFundamentals(dataDir, prev)
  ds.fundamentals = fundamentals.files
  const manifest = await writeDataset(ds, opts.out ?? prev.dir, opts.progress, {
    link: fundamentals.link,
    panel: (field, file, metadata) => {
      const panel = ds.prices[field] ?? []
      const columns = [
        { name: 'date', type: 'DATE' as const, values: ds.calendar.slice(plan.from) },
        ...plan.symbols.map((name, k) => ({ name, type: 'DOUBLE' as const, values: panel[k] })),
      ]
      const kept = plan.kept[field]
      const parts = prev.manifest.files[DATASET_FILES.price(field)].parts ?? []
      const from = {
        path: join(prev.dir, DATASET_FILES.price(field)),
        ...kept,
        parts: parts.slice(0, 1 + plan.groups),
      }
      return writeParquetContinuation(file, from, { columns, metadata }, PANELS)
    },
  })
  return { manifest, report: ds.report ?? { findings: [], summary: {} } }
}

/** What the append keeps and what it encodes. */
interface Plan {
  symbols: string[]
  calendar: Int32Array
  /** Complete row groups kept, and the first day (calendar index) encoded anew. */
  groups: number
  from: number
  /** Each symbol's bars from (at least) calendar[from], and whether they are all its bars. */
  bars: Map<string, readonly DailyBar[]>
  complete: Set<string>
  kept: Record<(typeof PRICE_FIELDS)[number], { bytes: number; groups: RowGroup[] }>
}

async function planAppend(dataDir: string, stored: StoredBars, prev: Previous): Promise<Plan | string> {
  const old = prev.calendar
  const oldLast = isoFromDay(old[old.length - 1])
  if (oldLast !== stored.storedThrough)
    return `the previous dataset ends on ${oldLast}, the bar files did on ${stored.storedThrough}`
  const rewritten = [...stored.rewritten]
  if (rewritten.length > 0) return `restated bar history: ${rewritten.slice(0, 5).join(', ')}`
  const identity = await readIdentity(dataDir)
  const symbols = [...new Set(identity.map((r) => r.symbol))].sort()
  if (symbols.some((s) => !stored.bars.has(s))) return 'a security without its stored bars'
  const priced = symbols.filter((s) => (stored.bars.get(s)?.length ?? 0) > 0)
  const market = identity.find((r) => r.ticker === MARKET_ETF && r.assetType === 'etf')?.symbol
  const marketBars = market === undefined ? [] : (stored.bars.get(market) ?? [])
  const newDays = marketBars.map((b) => b.date).filter((d) => d > oldLast)
  const sessions = new Set(
    newDays.length === 0
      ? []
      : nyseTradingDays(old[old.length - 1] + 1, parseIsoDay(newDays[newDays.length - 1]) ?? 0),
  )
  const added = [...new Set(newDays.map((d) => parseIsoDay(d) ?? 0).filter((d) => sessions.has(d)))]
  const calendar = Int32Array.from([...old, ...added])
  const n = calendar.length
  const groups = Math.min(
    Math.floor(old.length / PANEL_ROW_GROUP_DAYS),
    Math.floor((n - 1) / PANEL_ROW_GROUP_DAYS),
  )
  const from = groups * PANEL_ROW_GROUP_DAYS
  const addedIso = new Set(added.map(isoFromDay))
  const bars = new Map<string, readonly DailyBar[]>()
  const complete = new Set<string>()
  for (const s of priced) {
    let b = stored.bars.get(s) ?? []
    let whole = stored.complete.has(s)
    if (!whole && !(b[0].date < isoFromDay(calendar[from]))) {
      b = await readBars(dataDir, s)
      whole = true
    }
    if (b.some((x) => x.date > oldLast && !addedIso.has(x.date))) return `${s} has a new bar off the calendar`
    bars.set(s, b)
    if (whole) complete.add(s)
  }
  const types = [
    { name: 'date', type: 'DATE' as const },
    ...priced.map((name) => ({ name, type: 'DOUBLE' as const })),
  ]
  const kept = {} as Plan['kept']
  for (const f of PRICE_FIELDS) {
    try {
      const k = await readKeptGroups(join(prev.dir, DATASET_FILES.price(f)), groups, types)
      if (k.rows !== from)
        return `the previous ${f} panel's row groups are not of ${PANEL_ROW_GROUP_DAYS} days`
      kept[f] = { bytes: k.bytes, groups: k.groups }
    } catch (e) {
      return `the previous ${f} panel cannot be continued: ${(e as Error).message}`
    }
  }
  return { symbols: priced, calendar, groups, from, bars, complete, kept }
}

/** The dataset to write: whole small tables, price panels of the days from plan.from on. */
async function appendedDataset(
  dataDir: string,
  plan: Plan,
  prev: Previous,
  opts: AssembleOptions,
): Promise<Dataset | string> {
  const findings: QualityFinding[] = []
  const identity = await readIdentity(dataDir)
  const symbols = [...new Set(identity.map((r) => r.symbol))]
  const unpriced = symbols.length - plan.symbols.length
  if (unpriced > 0)
    findings.push({ kind: 'note', detail: `${unpriced} securities have no bars and are left out` })
  findings.push(...prev.report.findings.filter((f) => f.kind === 'dropped_rows'))
  const window = plan.calendar.subarray(plan.from)
  const first = isoFromDay(window[0])
  const windowBars = new Map([...plan.bars].map(([s, b]) => [s, b.filter((x) => x.date >= first)]))
  const prices = pricePanels(plan.symbols, windowBars, window, [])
  const classes = await readClassification(dataDir)
  const priced = new Set(plan.symbols)
  const securities = securityRows(identity, priced, classes, findings)
  const ciks = new Map<string, number>()
  for (const s of securities) if (s.assetType === 'stock' && s.cik !== null) ciks.set(s.symbol, s.cik)
  if (ciks.size !== prev.ciks.size || [...ciks].some(([s, c]) => prev.ciks.get(s) !== c))
    return 'the filer (CIK) of a stock changed'
  prices.shares_out = await sharesPanel(dataDir, plan.symbols, securities, window, prices.adj_close)
  const shares = await sharesRestated(dataDir, plan, prev, securities)
  if (shares !== null) return shares
  const factors = factorRows(securities, classes, priced, findings)
  const index = new Map<string, number>()
  plan.calendar.forEach((d, t) => {
    index.set(isoFromDay(d), t)
  })
  for (const s of plan.symbols) findings.push(...(await symbolFindings(dataDir, s, plan, prev, index)))
  const ds: Omit<Dataset, 'report'> = {
    source: await vendorSource(dataDir, opts),
    calendar: plan.calendar,
    securities,
    factors,
    symbols: plan.symbols,
    prices,
    rates: await ratesTable(dataDir),
    series: null,
    fundamentals: [],
    truth: null,
  }
  return { ...ds, report: buildReport(ds, findings, volumeSeries(plan, prices.volume ?? [])) }
}

/** Price series with a volume: in a kept row group (fewer nulls than rows) or in the new days. */
function volumeSeries(plan: Plan, volume: readonly Float64Array[]): number {
  let count = 0
  plan.symbols.forEach((_, k) => {
    const kept = plan.kept.volume.groups.some((g) => g.chunks[k + 1].nulls < g.rows)
    if (kept || volume[k].some((x) => !Number.isNaN(x))) count++
  })
  return count
}

/**
 * Why the shares of a kept day would change, or null: stocks whose shares file changed since the
 * previous dataset was written get their whole column computed again from the previous dataset's
 * prices and compared with the one it holds over the kept days.
 */
async function sharesRestated(
  dataDir: string,
  plan: Plan,
  prev: Previous,
  securities: readonly SecurityRow[],
): Promise<string | null> {
  if (plan.from === 0) return null
  const changed: string[] = []
  const cikOf = new Map<string, number>()
  for (const s of securities) if (s.assetType === 'stock' && s.cik !== null) cikOf.set(s.symbol, s.cik)
  for (const s of plan.symbols) {
    const cik = cikOf.get(s)
    if (cik === undefined) continue
    const file = join(dataDir, DATA_DIR_FILES.shares(cik))
    const t = await stat(file).then(
      (x) => x.mtimeMs,
      () => 0,
    )
    if (t >= prev.writtenMs) changed.push(s)
  }
  if (changed.length === 0) return null
  const column = async (f: (typeof PRICE_FIELDS)[number]) =>
    (await readParquetFile(join(prev.dir, DATASET_FILES.price(f)), { columns: changed })).columns.map(
      (c) => c.values as Float64Array,
    )
  const adj = await column('adj_close')
  const held = await column('shares_out')
  const now = await sharesPanel(dataDir, changed, securities, prev.calendar, adj)
  for (const [k, s] of changed.entries())
    for (let t = 0; t < plan.from; t++)
      if (!Object.is(now[k][t], held[k][t]))
        return `a shares filing of ${s} changes ${isoFromDay(prev.calendar[t])}, a kept day`
  return null
}

/**
 * The symbol's series findings (gaps, flat runs, large moves) over the whole new calendar, as
 * assemble computes them from the whole adjusted close: the previous report's findings that end
 * before a day `a` on which the price differs from the day before's (so no run spans it), then
 * those of the series from `a` on. With all of the symbol's bars, simply those of its series.
 */
async function symbolFindings(
  dataDir: string,
  symbol: string,
  plan: Plan,
  prev: Previous,
  index: ReadonlyMap<string, number>,
): Promise<QualityFinding[]> {
  const cal = plan.calendar
  const seriesFrom = (bars: readonly DailyBar[], lo: number) => {
    const px = new Float64Array(cal.length - lo).fill(Number.NaN)
    for (const b of bars) {
      const t = index.get(b.date)
      if (t !== undefined && t >= lo) px[t - lo] = b.adjClose
    }
    return px
  }
  let bars = plan.bars.get(symbol) ?? []
  if (!plan.complete.has(symbol)) {
    const firstDay = parseIsoDay(bars[0].date) ?? 0
    let lo = 0
    while (lo < cal.length && cal[lo] < firstDay) lo++
    const px = seriesFrom(bars, lo)
    for (let a = prev.calendar.length - 1; a > lo; a--) {
      const v = px[a - lo]
      if (Number.isNaN(v) || v === px[a - lo - 1]) continue
      const cut = isoFromDay(cal[a])
      // A large move ending on `a` is between a-1 and a: the previous report has it.
      const kept = (prev.series.get(symbol) ?? []).filter((f) =>
        f.kind === 'large_move' ? (f.to ?? '') <= cut : (f.to ?? '') < cut,
      )
      const fresh = seriesFindings(symbol, cal.subarray(a), px.subarray(a - lo))
      return [...SERIES_KINDS].flatMap((kind) => [...kept, ...fresh].filter((f) => f.kind === kind))
    }
    bars = await readBars(dataDir, symbol)
  }
  return seriesFindings(symbol, cal, seriesFrom(bars, 0))
}

/**
 * The fundamentals files: those whose facts file is older than the previous dataset and of the
 * size it recorded are hard-linked from it; the others are read.
 */
async function linkedFundamentals(
  dataDir: string,
  prev: Previous,
): Promise<{ files: FundamentalsFile[]; link: Map<string, { from: string; digest: FileDigest }> }> {
  const files: FundamentalsFile[] = []
  const link = new Map<string, { from: string; digest: FileDigest }>()
  for (const cik of await factsCiks(dataDir)) {
    const path = `fundamentals/${fundamentalsFileName(cik)}`
    const facts = join(dataDir, DATA_DIR_FILES.facts(cik))
    const digest = prev.manifest.files[path]
    const st = await stat(facts)
    if (digest && st.mtimeMs < prev.writtenMs && st.size === digest.bytes) {
      link.set(path, { from: join(prev.dir, path), digest: { sha256: digest.sha256, bytes: digest.bytes } })
      files.push({ cik, gzipped: new Uint8Array() })
    } else {
      files.push({ cik, gzipped: new Uint8Array(await readFile(facts)) })
    }
  }
  return { files, link }
}

/**
 * The update's assemble: an append to the previous dataset when that is provably the same
 * dataset, else a full assemble from the bars held (the whole ones) and the files, with why.
 */
export async function updateDataset(dataDir: string, stored: StoredBars): Promise<{ note: string | null }> {
  let why: string
  try {
    const r = await appendDataset(dataDir, stored)
    if (!('fallback' in r)) return { note: null }
    why = r.fallback
  } catch (e) {
    why = `the append failed: ${(e as Error).message}`
  }
  const bars = new Map([...stored.bars].filter(([s]) => stored.complete.has(s)))
  await assembleDataset(dataDir, { bars })
  return { note: `assembled in full: ${why}` }
}
