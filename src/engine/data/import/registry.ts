import { basename } from 'node:path'
import { isoFromDay } from '../../../platform/dates.ts'
import { InputError } from '../../../platform/errors.ts'
import { etfName, MACRO_FACTORS, MARKET_ETF, SECTOR_ETFS, STYLE_FACTORS } from '../etf-registry.ts'
import type { FactorRow, QualityFinding, SecurityRow } from '../format.ts'
import type { ClassificationMap } from './classification-map.ts'
import type { Constituent } from './securities.ts'

/**
 * Security rows, one per price series: a ticker listed in the securities file is a stock, any
 * other price series an ETF. One snapshot of classification applies to every date, so each
 * symbol has one window from its first priced day on.
 */
export function buildSecurities(
  symbols: readonly string[],
  calendar: Int32Array,
  adjClose: readonly Float64Array[],
  constituents: ReadonlyMap<string, Constituent>,
): SecurityRow[] {
  return symbols.map((symbol, k) => {
    const first = adjClose[k].findIndex((v) => !Number.isNaN(v))
    const validFrom = isoFromDay(calendar[Math.max(first, 0)])
    const c = constituents.get(symbol)
    if (c) {
      return {
        symbol,
        ticker: symbol,
        name: c.name,
        assetType: 'stock',
        sector: c.sector,
        industry: c.industry,
        cik: c.cik,
        validFrom,
        validTo: null,
      }
    }
    return {
      symbol,
      ticker: symbol,
      name: etfName(symbol),
      assetType: 'etf',
      sector: null,
      industry: null,
      cik: null,
      validFrom,
      validTo: null,
    }
  })
}

export interface RegistryInput {
  map: ClassificationMap | null
  securities: readonly SecurityRow[]
  constituents: ReadonlyMap<string, Constituent>
  securitiesFile: string | undefined
  priced: ReadonlySet<string>
  findings: QualityFinding[]
}

/**
 * The factor registry: the market ETF, one row per sector and per industry of the map (or, with
 * no map, the built-in Select Sector SPDRs and no subsector ETFs), then the macro and style
 * factors whose ETF has a price series.
 */
export function buildFactors(input: RegistryInput): FactorRow[] {
  const map = input.map ?? builtInMap(input)
  checkStockSectors(map, input)
  const rows: FactorRow[] = [{ role: 'market', code: 'MARKET', ticker: MARKET_ETF, kind: 'etf' }]
  for (const [code, ticker] of map.sectors) rows.push({ role: 'sector', code, ticker, kind: 'etf' })
  for (const [code, { etf }] of map.industries)
    rows.push({ role: 'subsector', code, ticker: etf, kind: 'etf' })
  for (const code of unmappedIndustries(map, input))
    rows.push({ role: 'subsector', code, ticker: null, kind: 'etf' })
  for (const [code, { ticker, kind }] of Object.entries(MACRO_FACTORS)) {
    if (kind === 'etf' && input.priced.has(ticker)) rows.push({ role: 'macro', code, ticker, kind })
  }
  for (const [code, ticker] of Object.entries(STYLE_FACTORS)) {
    if (input.priced.has(ticker)) rows.push({ role: 'style', code, ticker, kind: 'etf' })
  }
  return rows
}

function builtInMap(input: RegistryInput): ClassificationMap {
  const sectors = new Map<string, string>()
  for (const [sector, etf] of Object.entries(SECTOR_ETFS)) if (input.priced.has(etf)) sectors.set(sector, etf)
  input.findings.push({
    kind: 'note',
    detail:
      'no classification map given: sector ETFs are the built-in Select Sector SPDRs that have prices; no subsector ETFs',
  })
  return { sectors, industries: new Map() }
}

/** A priced stock's sector must have a sector ETF, or the model could not place it. */
function checkStockSectors(map: ClassificationMap, input: RegistryInput): void {
  for (const s of input.securities) {
    if (s.assetType !== 'stock' || s.sector === null || map.sectors.has(s.sector)) continue
    const c = input.constituents.get(s.symbol)
    throw new InputError(
      { file: input.securitiesFile ?? 'securities', line: c?.line, column: c?.sectorColumn ?? 'sector' },
      `sector "${s.sector}" of ${s.symbol} has no sector ETF in the classification map`,
    )
  }
}

/** Industries of priced stocks that the map does not list: they get a subsector row without ETF. */
function unmappedIndustries(map: ClassificationMap, input: RegistryInput): string[] {
  const missing = new Set<string>()
  for (const s of input.securities) {
    if (s.assetType === 'stock' && s.industry !== null && !map.industries.has(s.industry))
      missing.add(s.industry)
  }
  const list = [...missing]
  if (list.length > 0 && input.map !== null) {
    const file = input.securitiesFile ? basename(input.securitiesFile) : 'the securities file'
    input.findings.push({
      kind: 'note',
      detail: `${list.length} sub-industr${list.length === 1 ? 'y' : 'ies'} in ${file} not in the classification map (subsector falls back to the sector ETF): ${list.join('; ')}`,
    })
  }
  return list
}
