/**
 * Readers and writers of the data directory's small tables besides bars and the identity
 * registry (data-dir.ts lists the layout): classification, shares outstanding and rates.
 */
import { readdir } from 'node:fs/promises'
import { join } from 'node:path'
import { csvDocument } from '../../platform/csv.ts'
import { parseIsoDay } from '../../platform/dates.ts'
import { InputError } from '../../platform/errors.ts'
import type { RatePoint, SharesPoint } from '../sources/types.ts'
import { parseCsvTable } from './csv-table.ts'
import { DATA_DIR_FILES, readOptional, writeFileAtomically } from './data-dir.ts'

/**
 * A stock's classification: sector (a key of the Select Sector SPDR table), industry code, where
 * it came from, and optionally the industry's subsector ETF (an empty cell: look the industry up
 * in the built-in GICS table, see assemble.ts).
 */
export interface Classification {
  symbol: string
  sector: string
  industry: string | null
  /** Where the sector came from (`override`, `holdings:XLK`, `sic:3674`). */
  source: string
  /** Where the industry came from (null or absent: no industry, or not recorded). */
  industrySource?: string | null
  industryEtf: string | null
}

const CLASS_HEADER = ['symbol', 'sector', 'industry', 'source'] as const

function classificationCsv(rows: readonly Classification[]): string {
  return csvDocument(
    [...CLASS_HEADER, 'industry_etf', 'industry_source'],
    [...rows]
      .sort((a, b) => a.symbol.localeCompare(b.symbol))
      .map((r) => [r.symbol, r.sector, r.industry, r.source, r.industryEtf, r.industrySource ?? null]),
  )
}

export async function readClassification(dataDir: string): Promise<Map<string, Classification>> {
  const file = join(dataDir, DATA_DIR_FILES.classification)
  const text = await readOptional(file)
  const out = new Map<string, Classification>()
  if (text === null) return out
  for (const { cells: c, line } of parseCsvTable(text, file, CLASS_HEADER)) {
    if (c.symbol === '') throw new InputError({ file, line, column: 'symbol' }, 'missing symbol')
    if (out.has(c.symbol)) throw new InputError({ file, line, column: 'symbol' }, `${c.symbol} listed twice`)
    if (c.sector === '') continue
    out.set(c.symbol, {
      symbol: c.symbol,
      sector: c.sector,
      industry: c.industry === '' ? null : c.industry,
      source: c.source,
      industryEtf: (c.industry_etf ?? '') === '' ? null : c.industry_etf,
      industrySource: (c.industry_source ?? '') === '' ? null : c.industry_source,
    })
  }
  return out
}

export async function writeClassification(dataDir: string, rows: readonly Classification[]): Promise<void> {
  await writeFileAtomically(join(dataDir, DATA_DIR_FILES.classification), classificationCsv(rows))
}

const SHARES_HEADER = ['end', 'filed', 'shares'] as const

export async function writeShares(
  dataDir: string,
  cik: number,
  points: readonly SharesPoint[],
): Promise<void> {
  const sorted = [...points].sort((a, b) => a.filed.localeCompare(b.filed) || a.end.localeCompare(b.end))
  await writeFileAtomically(
    join(dataDir, DATA_DIR_FILES.shares(cik)),
    csvDocument(
      SHARES_HEADER,
      sorted.map((p) => [p.end, p.filed, p.shares]),
    ),
  )
}

export async function readShares(dataDir: string, cik: number): Promise<SharesPoint[]> {
  const file = join(dataDir, DATA_DIR_FILES.shares(cik))
  const text = await readOptional(file)
  if (text === null) return []
  return parseCsvTable(text, file, SHARES_HEADER).map(({ cells: c, line }) => {
    const shares = Number(c.shares)
    if (parseIsoDay(c.end) === null || parseIsoDay(c.filed) === null || !(shares > 0))
      throw new InputError({ file, line }, `unreadable shares point: ${c.end},${c.filed},${c.shares}`)
    return { cik, end: c.end, filed: c.filed, shares }
  })
}

const RATES_HEADER = ['date', 'tbill_3m'] as const

export async function writeRates(dataDir: string, points: readonly RatePoint[]): Promise<void> {
  const sorted = [...points].sort((a, b) => a.date.localeCompare(b.date))
  await writeFileAtomically(
    join(dataDir, DATA_DIR_FILES.rates),
    csvDocument(
      RATES_HEADER,
      sorted.map((p) => [p.date, p.value]),
    ),
  )
}

export async function readRates(dataDir: string): Promise<RatePoint[]> {
  const file = join(dataDir, DATA_DIR_FILES.rates)
  const text = await readOptional(file)
  if (text === null) return []
  return parseCsvTable(text, file, RATES_HEADER).map(({ cells: c, line }) => {
    const value = Number(c.tbill_3m)
    if (parseIsoDay(c.date) === null || c.tbill_3m === '' || !Number.isFinite(value))
      throw new InputError({ file, line }, `unreadable rate: ${c.date},${c.tbill_3m}`)
    return { date: c.date, value }
  })
}

/** The CIKs that have a company-facts file in `facts/`. */
export async function factsCiks(dataDir: string): Promise<number[]> {
  const names = await readdir(join(dataDir, 'facts')).catch((e: NodeJS.ErrnoException) => {
    if (e.code === 'ENOENT') return [] as string[]
    throw e
  })
  return names
    .map((n) => /^CIK(\d{10})\.json\.gz$/.exec(n))
    .flatMap((m) => (m ? [Number(m[1])] : []))
    .sort((a, b) => a - b)
}
