import { stat } from 'node:fs/promises'
import { sha256File } from '../../../platform/digest.ts'
import { InputError } from '../../../platform/errors.ts'
import { type Progress, silentProgress } from '../../../platform/progress.ts'
import type { Dataset, Prices, QualityFinding, SecurityRow, SourceInfo } from '../format.ts'
import { applyCikMap, readCikMap } from './cik-map.ts'
import { readClassificationMap } from './classification-map.ts'
import { readCompanyFactsZip, type WantedCiks } from './companyfacts-zip.ts'
import { type FundamentalsRead, readFundamentals } from './fundamentals.ts'
import { type CheckedOptions, checkOptions, type ImportOptions } from './options.ts'
import { alignPrices, CalendarLookup } from './prices-align.ts'
import { type PriceFileResult, readPriceFile } from './prices-file.ts'
import { seriesFindings } from './quality.ts'
import { readRates } from './rates.ts'
import { buildFactors, buildSecurities } from './registry.ts'
import { buildReport } from './report.ts'
import { type Constituent, readSecurities } from './securities.ts'
import { readSeries } from './series.ts'
import { errorText } from './table-reader.ts'
import { readVolume } from './volume.ts'

/** The in-memory dataset, without writing it (the writer is the only step that touches `out`). */
export async function buildImportedDataset(
  opts: ImportOptions,
  progress: Progress = silentProgress,
): Promise<Dataset> {
  const o = checkOptions(opts)
  const findings: QualityFinding[] = []
  const files: PriceFileResult[] = []
  for (const spec of o.priceSpecs) files.push(await readPriceFile(spec, findings, progress))
  const priceFiles = o.priceSpecs.map((s) => s.path)
  const { calendar, symbols, prices } = alignPrices(files, priceFiles, findings)
  const lookup = new CalendarLookup(calendar)

  const constituents = o.securities
    ? await readSecurities(o.securities, progress)
    : new Map<string, Constituent>()
  const securities = buildSecurities(symbols, calendar, prices.adj_close, constituents)
  if (o.cikMap && o.securities) {
    const files = { map: o.cikMap, securities: o.securities }
    applyCikMap(securities, await readCikMap(o.cikMap), files, findings)
  }
  noteUnpriced(constituents, new Set(symbols), findings)
  const priced = new Set(symbols)
  const map = o.classificationMap
    ? await readClassificationMap(o.classificationMap, priced, findings, progress)
    : null
  const factors = buildFactors({
    map,
    securities,
    constituents,
    securitiesFile: o.securities,
    priced,
    findings,
  })

  const rates = o.rateSpecs.length > 0 ? await readRates(o.rateSpecs, findings, progress) : null
  if (o.volume) {
    const vol = await readVolume(o.volume, symbols, calendar, lookup, findings, progress)
    mergeVolume(prices, vol, findings)
  }
  const series =
    o.seriesSpecs.length > 0 ? await readSeries(o.seriesSpecs, calendar, lookup, findings, progress) : null
  const fundamentals = o.fundamentals
    ? await readFundamentalsInput(o.fundamentals, wantedCiks(securities), findings, progress)
    : null

  symbols.forEach((s, k) => {
    findings.push(...seriesFindings(s, calendar, prices.adj_close[k]))
  })
  const source = await sourceInfo(o, fundamentals?.paths ?? [])
  const ds: Omit<Dataset, 'report'> = {
    source,
    calendar,
    securities,
    factors,
    symbols,
    prices,
    rates,
    series,
    fundamentals: fundamentals?.files ?? [],
    truth: null,
  }
  return { ...ds, report: buildReport(ds, findings) }
}

/** A directory of companyfacts files, or SEC's bulk zip (anything that is not a directory). */
async function readFundamentalsInput(
  path: string,
  wanted: WantedCiks,
  findings: QualityFinding[],
  progress: Progress,
): Promise<FundamentalsRead> {
  const st = await stat(path).catch((err: unknown) => {
    throw new InputError({ file: path }, `cannot read fundamentals: ${errorText(err)}`)
  })
  if (st.isDirectory()) return readFundamentals(path, findings, progress)
  return { files: await readCompanyFactsZip(path, wanted, findings, progress), paths: [path] }
}

/** The CIKs of the dataset's stocks (from the securities file or the CIK map), with their tickers. */
function wantedCiks(securities: readonly SecurityRow[]): Map<number, string[]> {
  const wanted = new Map<number, string[]>()
  for (const s of securities) {
    if (s.assetType !== 'stock' || s.cik === null) continue
    const tickers = wanted.get(s.cik)
    if (tickers) tickers.push(s.ticker)
    else wanted.set(s.cik, [s.ticker])
  }
  return wanted
}

function noteUnpriced(
  constituents: ReadonlyMap<string, Constituent>,
  priced: ReadonlySet<string>,
  findings: QualityFinding[],
): void {
  const missing = [...constituents.keys()].filter((t) => !priced.has(t))
  if (missing.length === 0) return
  findings.push({
    kind: 'note',
    detail: `${missing.length} of ${constituents.size} securities have no price series and are not included`,
  })
}

/** Volume from price files wins over the volume file where both have a value (price files are primary). */
function mergeVolume(prices: Prices, fromFile: Float64Array[], findings: QualityFinding[]): void {
  const existing = prices.volume
  if (existing === null) {
    prices.volume = fromFile
    return
  }
  let overlap = 0
  existing.forEach((col, k) => {
    const src = fromFile[k]
    for (let t = 0; t < col.length; t++) {
      if (Number.isNaN(src[t])) continue
      if (Number.isNaN(col[t])) col[t] = src[t]
      else overlap++
    }
  })
  if (overlap > 0) {
    findings.push({
      kind: 'note',
      detail: `volume: ${overlap} value(s) given by both a price file and the volume file; kept the price file's`,
    })
  }
}

async function sourceInfo(o: CheckedOptions, fundamentalsPaths: readonly string[]): Promise<SourceInfo> {
  const entries: { role: string; path: string }[] = [
    ...o.priceSpecs.map(({ path }) => ({ role: 'prices', path })),
    ...(o.securities ? [{ role: 'securities', path: o.securities }] : []),
    ...(o.classificationMap ? [{ role: 'classification_map', path: o.classificationMap }] : []),
    ...(o.cikMap ? [{ role: 'cik_map', path: o.cikMap }] : []),
    ...o.rateSpecs.map((r) => ({ role: 'rates', path: r.path })),
    ...(o.volume ? [{ role: 'volume', path: o.volume }] : []),
    ...o.seriesSpecs.map(({ path }) => ({ role: 'series', path })),
    ...fundamentalsPaths.map((path) => ({ role: 'fundamentals', path })),
  ]
  const inputs = await Promise.all(
    entries.map(async (e) => ({ ...e, sha256: (await sha256File(e.path)).sha256 })),
  )
  return { kind: 'import', inputs }
}
