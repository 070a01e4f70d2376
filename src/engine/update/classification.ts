/**
 * The classification step of `erm3 data fetch`: once every task has finished, each stock's sector
 * and industry are computed from the files on disk — the ETF holdings (`holdings/<ETF>.csv`), the
 * SIC codes of the filers' submissions headers (`submissions/CIK##########.json`) and the user's
 * overrides — by `classify()` (engine/sources/classify.ts), and written to classification.csv
 * with where each came from. Reading the files rather than the tasks' answers makes a resumed
 * fetch classify exactly as an uninterrupted one.
 */
import { join } from 'node:path'
import { csvDocument } from '../../platform/csv.ts'
import { parseIsoDay } from '../../platform/dates.ts'
import { InputError } from '../../platform/errors.ts'
import { builtInClassificationMap, classify } from '../sources/classify.ts'
import type { EtfHolding, FilerProfile } from '../sources/types.ts'
import { parseCsvTable } from './csv-table.ts'
import { DATA_DIR_FILES, readOptional, writeFileAtomically } from './data-dir.ts'
import { type Classification, writeClassification } from './dir-files.ts'
import { type IdentityRow, latestWindows } from './identity.ts'

export type Overrides = ReadonlyMap<string, { sector: string; industry: string | null }>

/** Every ETF of the built-in classification map: the sector SPDRs, then the subsector ETFs. */
export function classificationEtfs(): string[] {
  const map = builtInClassificationMap()
  const etfs = [...map.sectors.values(), ...[...map.industries.values()].map((i) => i.etf)]
  return [...new Set(etfs.filter((e): e is string => e !== null))]
}

const HOLDINGS_HEADER = ['ticker', 'weight', 'as_of'] as const

export async function writeHoldings(
  dataDir: string,
  etf: string,
  holdings: readonly EtfHolding[],
): Promise<void> {
  const rows = holdings.filter((h) => h.etf === etf).map((h) => [h.ticker, h.weight, h.asOf])
  await writeFileAtomically(join(dataDir, DATA_DIR_FILES.holdings(etf)), csvDocument(HOLDINGS_HEADER, rows))
}

async function readHoldings(dataDir: string, etf: string): Promise<EtfHolding[]> {
  const file = join(dataDir, DATA_DIR_FILES.holdings(etf))
  const text = await readOptional(file)
  if (text === null) return []
  return parseCsvTable(text, file, HOLDINGS_HEADER).map(({ cells: c, line }) => {
    const weight = c.weight === '' ? null : Number(c.weight)
    if (c.ticker === '' || (weight !== null && !Number.isFinite(weight)) || parseIsoDay(c.as_of) === null)
      throw new InputError({ file, line }, `unreadable holding: ${c.ticker},${c.weight},${c.as_of}`)
    return { etf, ticker: c.ticker, weight, asOf: c.as_of }
  })
}

/** What the data directory keeps of a submissions header: what classification and identity use. */
type StoredProfile = Pick<FilerProfile, 'cik' | 'name' | 'sic' | 'sicDescription' | 'formerNames'>

export async function writeSubmissions(dataDir: string, p: FilerProfile): Promise<void> {
  const kept: StoredProfile = {
    cik: p.cik,
    name: p.name,
    sic: p.sic,
    sicDescription: p.sicDescription,
    formerNames: p.formerNames,
  }
  await writeFileAtomically(
    join(dataDir, DATA_DIR_FILES.submissions(p.cik)),
    `${JSON.stringify(kept, null, 1)}\n`,
  )
}

async function readSic(dataDir: string, cik: number): Promise<number | null> {
  const file = join(dataDir, DATA_DIR_FILES.submissions(cik))
  const text = await readOptional(file)
  if (text === null) return null
  let doc: StoredProfile
  try {
    doc = JSON.parse(text) as StoredProfile
  } catch (e) {
    throw new InputError({ file }, `not readable JSON: ${(e as Error).message}`)
  }
  if (doc.sic !== null && !Number.isInteger(doc.sic))
    throw new InputError({ file }, '"sic" is not an integer')
  return doc.sic
}

export interface ClassifiedDir {
  rows: Classification[]
  /** Stocks (symbols) no rule placed in a sector. */
  unclassified: string[]
}

/**
 * classification.csv from the files on disk. The `source` column is where the sector came from
 * (`override`, `holdings:XLK`, `sic:3674`), `industry_source` where the industry did.
 */
export async function classifyDataDir(
  dataDir: string,
  identity: readonly IdentityRow[],
  overrides?: Overrides,
): Promise<ClassifiedDir> {
  const stocks = [...latestWindows(identity).values()].filter((w) => w.assetType === 'stock')
  const holdings: EtfHolding[] = []
  for (const etf of classificationEtfs()) holdings.push(...(await readHoldings(dataDir, etf)))
  const sic = new Map<string, number | null>()
  for (const w of stocks) sic.set(w.ticker, w.cik === null ? null : await readSic(dataDir, w.cik))
  const result = classify({ tickers: stocks.map((w) => w.ticker), holdings, sic, overrides })
  const rows: Classification[] = []
  const unclassified: string[] = []
  for (const [k, c] of result.entries()) {
    const symbol = stocks[k].symbol
    if (c.sector === null || c.sectorFrom === null) {
      unclassified.push(symbol)
      continue
    }
    rows.push({
      symbol,
      sector: c.sector,
      industry: c.industry,
      source: c.sectorFrom,
      industrySource: c.industryFrom,
      industryEtf: null,
    })
  }
  await writeClassification(dataDir, rows)
  return { rows, unclassified: unclassified.sort() }
}
