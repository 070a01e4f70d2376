/**
 * The data directory → the canonical dataset (docs/data-format.md). The calendar is the NYSE
 * sessions on which the market ETF has a bar; the price panels come from the bar files; shares
 * outstanding are point in time (known from their filing date); securities from the identity
 * registry with their classification; factors from the registry ETFs that have bars.
 */
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { isoFromDay, parseIsoDay } from '../../platform/dates.ts'
import { InputError } from '../../platform/errors.ts'
import { type Progress, silentProgress } from '../../platform/progress.ts'
import { nyseTradingDays } from '../data/calendar.ts'
import { writeDataset } from '../data/dataset-writer.ts'
import { etfName, MARKET_ETF, SECTOR_ETFS } from '../data/etf-registry.ts'
import type {
  Dataset,
  DatasetManifest,
  FundamentalsFile,
  ImportReport,
  QualityFinding,
  Rates,
  SecurityRow,
  SourceInfo,
} from '../data/format.ts'
import type { ClassificationMap } from '../data/import/classification-map.ts'
import { seriesFindings } from '../data/import/quality.ts'
import { buildFactors } from '../data/import/registry.ts'
import { buildReport } from '../data/import/report.ts'
import { INDUSTRIES } from '../data/synth/industries.ts'
import type { DailyBar } from '../sources/types.ts'
import { DATA_DIR_FILES, readBars, readFetchState } from './data-dir.ts'
import { type Classification, factsCiks, readClassification, readRates, readShares } from './dir-files.ts'
import { type IdentityRow, readIdentity } from './identity.ts'

/**
 * A shares-outstanding count older than this (days since the date it refers to) is no longer
 * used: a company that stopped filing gets no market cap rather than a stale one.
 */
export const MAX_SHARES_AGE_DAYS = 400

export interface AssembleOptions {
  /** Where to write the dataset (default `<dataDir>/dataset`). */
  out?: string
  /** Source names for the manifest (default: those of the fetch state's tasks). */
  sources?: string[]
  /** When the data was fetched (default: the fetch state's latest task). */
  fetchedAt?: string | null
  progress?: Progress
  /**
   * Bars already in memory, by symbol (an update's: what it read and appended); they are what
   * the files hold, so those symbols' files are not read again.
   */
  bars?: ReadonlyMap<string, readonly DailyBar[]>
}

/** The dataset of a data directory, in memory. */
export async function readDataDirDataset(dataDir: string, opts: AssembleOptions = {}): Promise<Dataset> {
  const progress = opts.progress ?? silentProgress
  const findings: QualityFinding[] = []
  const identity = await readIdentity(dataDir)
  const symbols = [...new Set(identity.map((r) => r.symbol))].sort()
  const bars = new Map<string, readonly DailyBar[]>()
  progress.start('read bars', symbols.length)
  for (const [i, s] of symbols.entries()) {
    const b = opts.bars?.get(s) ?? (await readBars(dataDir, s))
    if (b.length > 0) bars.set(s, b)
    progress.update(i + 1)
  }
  progress.stop()
  const unpriced = symbols.filter((s) => !bars.has(s))
  if (unpriced.length > 0)
    findings.push({ kind: 'note', detail: `${unpriced.length} securities have no bars and are left out` })
  const priced = symbols.filter((s) => bars.has(s))
  const market = identity.find((r) => r.ticker === MARKET_ETF && r.assetType === 'etf')?.symbol
  const marketBars = market === undefined ? undefined : bars.get(market)
  if (!marketBars)
    throw new InputError(
      { file: join(dataDir, DATA_DIR_FILES.bars(MARKET_ETF)) },
      `no bars of the market ETF ${MARKET_ETF}`,
    )
  const calendar = marketCalendar(marketBars)
  const prices = pricePanels(priced, bars, calendar, findings)
  const classes = await readClassification(dataDir)
  const securities = securityRows(identity, new Set(priced), classes, findings)
  prices.shares_out = await sharesPanel(dataDir, priced, securities, calendar, prices.adj_close)
  const factors = factorRows(securities, classes, new Set(priced), findings)
  priced.forEach((s, k) => {
    findings.push(...seriesFindings(s, calendar, prices.adj_close[k]))
  })
  const ds: Omit<Dataset, 'report'> = {
    source: await vendorSource(dataDir, opts),
    calendar,
    securities,
    factors,
    symbols: priced,
    prices,
    rates: await ratesTable(dataDir),
    series: null,
    fundamentals: await fundamentals(dataDir),
    truth: null,
  }
  return { ...ds, report: buildReport(ds, findings) }
}

/** `readDataDirDataset`, written atomically (a failure leaves the previous dataset in place). */
export async function assembleDataset(
  dataDir: string,
  opts: AssembleOptions = {},
): Promise<{ manifest: DatasetManifest; report: ImportReport }> {
  const ds = await readDataDirDataset(dataDir, opts)
  const manifest = await writeDataset(ds, opts.out ?? join(dataDir, DATA_DIR_FILES.dataset), opts.progress)
  return { manifest, report: ds.report ?? { findings: [], summary: {} } }
}

/** NYSE sessions on which the market ETF has a bar (a bar on a closed day is not a session). */
function marketCalendar(bars: readonly DailyBar[]): Int32Array {
  const days = bars.map((b) => parseIsoDay(b.date) ?? 0)
  const sessions = new Set(nyseTradingDays(days[0], days[days.length - 1]))
  return Int32Array.from(new Set(days.filter((d) => sessions.has(d)))).sort()
}

export function pricePanels(
  symbols: readonly string[],
  bars: ReadonlyMap<string, readonly DailyBar[]>,
  calendar: Int32Array,
  findings: QualityFinding[],
): Dataset['prices'] {
  // By the date's text: parsing 20 years × thousands of bar dates was most of this function.
  // A date parseIsoDay rejects has no ISO spelling of a session, so it is off the calendar.
  const index = new Map<string, number>()
  calendar.forEach((d, t) => {
    index.set(isoFromDay(d), t)
  })
  const blank = () => symbols.map(() => new Float64Array(calendar.length).fill(Number.NaN))
  const [adj, close, volume] = [blank(), blank(), blank()]
  symbols.forEach((s, k) => {
    const off: string[] = []
    for (const b of bars.get(s) ?? []) {
      const t = index.get(b.date)
      if (t === undefined) {
        off.push(b.date)
        continue
      }
      adj[k][t] = b.adjClose
      close[k][t] = b.close
      volume[k][t] = b.volume ?? Number.NaN
    }
    if (off.length > 0) {
      findings.push({
        kind: 'dropped_rows',
        symbol: s,
        from: off[0],
        to: off[off.length - 1],
        detail: `${off.length} bar(s) on days that are not sessions of the calendar`,
      })
    }
  })
  return { adj_close: adj, close, volume, shares_out: null }
}

/** One security row per registry window of a priced symbol, with the stock's classification. */
export function securityRows(
  identity: readonly IdentityRow[],
  priced: ReadonlySet<string>,
  classes: ReadonlyMap<string, Classification>,
  findings: QualityFinding[],
): SecurityRow[] {
  const rows = identity
    .filter((r) => priced.has(r.symbol))
    .sort((a, b) => a.symbol.localeCompare(b.symbol) || a.validFrom.localeCompare(b.validFrom))
  const unclassified = new Set<string>()
  const out = rows.map((r): SecurityRow => {
    const c = r.assetType === 'stock' ? classes.get(r.symbol) : undefined
    if (r.assetType === 'stock' && !c) unclassified.add(r.symbol)
    return {
      symbol: r.symbol,
      ticker: r.ticker,
      name: r.name !== '' ? r.name : r.assetType === 'etf' ? etfName(r.ticker) : r.ticker,
      assetType: r.assetType,
      sector: c?.sector ?? null,
      industry: c?.industry ?? null,
      cik: r.cik,
      validFrom: r.validFrom,
      validTo: r.validTo,
    }
  })
  if (unclassified.size > 0) {
    const list = [...unclassified]
    findings.push({
      kind: 'note',
      detail: `${list.length} stock(s) without a sector (not in classification.csv; no L2/L3 model): ${list.slice(0, 20).join(', ')}${list.length > 20 ? ', …' : ''}`,
    })
  }
  return out
}

/**
 * The factor registry: sectors are the Select Sector SPDRs that have bars; an industry's
 * subsector ETF is classification.csv's `industry_etf`, else the built-in GICS table's, and
 * none (sector fallback) when that ETF has no bars. A stock whose sector has no priced ETF loses
 * its sector (and industry), with a note.
 */
export function factorRows(
  securities: SecurityRow[],
  classes: ReadonlyMap<string, Classification>,
  priced: ReadonlySet<string>,
  findings: QualityFinding[],
): Dataset['factors'] {
  const map: ClassificationMap = { sectors: new Map(), industries: new Map() }
  for (const [sector, etf] of Object.entries(SECTOR_ETFS)) if (priced.has(etf)) map.sectors.set(sector, etf)
  const builtIn = new Map(INDUSTRIES.map((d) => [d.industry, d.etf]))
  const dropped = new Set<string>()
  for (const s of securities) {
    if (s.sector === null) continue
    if (!map.sectors.has(s.sector)) {
      dropped.add(`${s.symbol} (${s.sector})`)
      s.sector = null
      s.industry = null
      continue
    }
    if (s.industry === null || map.industries.has(s.industry)) continue
    const etf = classes.get(s.symbol)?.industryEtf ?? builtIn.get(s.industry) ?? null
    map.industries.set(s.industry, { sector: s.sector, etf: etf !== null && priced.has(etf) ? etf : null })
  }
  if (dropped.size > 0)
    findings.push({
      kind: 'note',
      detail: `warning: ${dropped.size} stock(s) in a sector without a priced sector ETF are left unclassified: ${[...dropped].slice(0, 20).join(', ')}`,
    })
  return buildFactors({
    map,
    securities,
    constituents: new Map(),
    securitiesFile: undefined,
    priced,
    findings,
  })
}

/**
 * Shares outstanding per stock-day: of the points filed by that day, the one with the latest
 * `end` (a later filing of the same period wins), while no older than MAX_SHARES_AGE_DAYS. Days
 * without a price stay empty. Every class of a multi-class CIK gets the filer's count.
 */
export async function sharesPanel(
  dataDir: string,
  symbols: readonly string[],
  securities: readonly SecurityRow[],
  calendar: Int32Array,
  adj: readonly Float64Array[],
): Promise<Float64Array[]> {
  const cikOf = new Map<string, number>()
  for (const s of securities) if (s.assetType === 'stock' && s.cik !== null) cikOf.set(s.symbol, s.cik)
  const cache = new Map<number, DayPoint[]>()
  const out: Float64Array[] = []
  for (const [k, symbol] of symbols.entries()) {
    const col = new Float64Array(calendar.length).fill(Number.NaN)
    out.push(col)
    const cik = cikOf.get(symbol)
    if (cik === undefined) continue
    let points = cache.get(cik)
    if (!points) {
      points = (await readShares(dataDir, cik))
        .sort((a, b) => a.filed.localeCompare(b.filed))
        .map((p) => ({ filed: parseIsoDay(p.filed) ?? 0, end: parseIsoDay(p.end) ?? 0, shares: p.shares }))
      cache.set(cik, points)
    }
    fillShares(col, points, calendar, adj[k])
  }
  return out
}

/** A shares point with its days parsed once per filer, not once per class and session. */
interface DayPoint {
  filed: number
  end: number
  shares: number
}

function fillShares(
  col: Float64Array,
  points: readonly DayPoint[],
  calendar: Int32Array,
  adj: Float64Array,
): void {
  let next = 0
  let best: DayPoint | null = null
  for (let t = 0; t < calendar.length; t++) {
    while (next < points.length && points[next].filed <= calendar[t]) {
      const p = points[next++]
      if (best === null || p.end >= best.end) best = p
    }
    if (best !== null && !Number.isNaN(adj[t]) && calendar[t] - best.end <= MAX_SHARES_AGE_DAYS)
      col[t] = best.shares
  }
}

export async function ratesTable(dataDir: string): Promise<Rates | null> {
  const points = await readRates(dataDir)
  if (points.length === 0) return null
  return {
    tenors: ['3m'],
    days: Int32Array.from(points, (p) => parseIsoDay(p.date) ?? 0),
    values: [Float64Array.from(points, (p) => p.value)],
  }
}

async function fundamentals(dataDir: string): Promise<FundamentalsFile[]> {
  const out: FundamentalsFile[] = []
  for (const cik of await factsCiks(dataDir))
    out.push({ cik, gzipped: new Uint8Array(await readFile(join(dataDir, DATA_DIR_FILES.facts(cik)))) })
  return out
}

export async function vendorSource(dataDir: string, opts: AssembleOptions): Promise<SourceInfo> {
  const state = await readFetchState(dataDir)
  const tasks = Object.entries(state.tasks)
  const sources = opts.sources ?? [...new Set(tasks.map(([key]) => key.split(':')[0]))].sort()
  const latest = tasks.reduce<string | null>(
    (m, [, v]) => (m === null || v.done_at > m ? v.done_at : m),
    null,
  )
  return { kind: 'vendor', sources, fetched_at: opts.fetchedAt === undefined ? latest : opts.fetchedAt }
}
