import { sha256File } from '../../platform/digest.ts'
import { type Progress, silentProgress } from '../../platform/progress.ts'
import type { Dataset, Prices, QualityFinding, SourceInfo } from '../format.ts'
import { readClassificationMap } from './classification-map.ts'
import { readFundamentals } from './fundamentals.ts'
import { type CheckedOptions, checkOptions, type ImportOptions } from './options.ts'
import { alignPrices, CalendarLookup } from './prices-align.ts'
import { type PriceFileResult, readPriceFile } from './prices-file.ts'
import { seriesFindings } from './quality.ts'
import { readRates } from './rates.ts'
import { buildFactors, buildSecurities } from './registry.ts'
import { buildReport } from './report.ts'
import { type Constituent, readSecurities } from './securities.ts'
import { readVolume } from './volume.ts'

/** The in-memory dataset, without writing it (the writer is the only step that touches `out`). */
export async function buildImportedDataset(
  opts: ImportOptions,
  progress: Progress = silentProgress,
): Promise<Dataset> {
  const o = checkOptions(opts)
  const findings: QualityFinding[] = []
  const files: PriceFileResult[] = []
  for (const file of o.prices) files.push(await readPriceFile(file, progress))
  const { calendar, symbols, prices } = alignPrices(files, o.prices, findings)

  const constituents = o.securities
    ? await readSecurities(o.securities, progress)
    : new Map<string, Constituent>()
  const securities = buildSecurities(symbols, calendar, prices.adj_close, constituents)
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
    const vol = await readVolume(
      o.volume,
      symbols,
      calendar,
      new CalendarLookup(calendar),
      findings,
      progress,
    )
    mergeVolume(prices, vol, findings)
  }
  const fundamentals = o.fundamentals ? await readFundamentals(o.fundamentals, findings, progress) : null

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
    series: null,
    fundamentals: fundamentals?.files ?? [],
    truth: null,
  }
  return { ...ds, report: buildReport(ds, findings) }
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
    ...o.prices.map((path) => ({ role: 'prices', path })),
    ...(o.securities ? [{ role: 'securities', path: o.securities }] : []),
    ...(o.classificationMap ? [{ role: 'classification_map', path: o.classificationMap }] : []),
    ...o.rateSpecs.map((r) => ({ role: 'rates', path: r.path })),
    ...(o.volume ? [{ role: 'volume', path: o.volume }] : []),
    ...fundamentalsPaths.map((path) => ({ role: 'fundamentals', path })),
  ]
  const inputs = await Promise.all(
    entries.map(async (e) => ({ ...e, sha256: (await sha256File(e.path)).sha256 })),
  )
  return { kind: 'import', inputs }
}
