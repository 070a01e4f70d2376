/**
 * What an update extends: every security of the data directory's identity registry
 * (`securities.csv`, read by column name) with its stored bars.
 */
import { join } from 'node:path'
import { parse } from 'csv-parse/sync'
import { InputError } from '../../platform/errors.ts'
import { MARKET_ETF } from '../data/etf-registry.ts'
import type { DailyBar } from '../sources/types.ts'
import { DATA_DIR_FILES, readBars, readOptional } from './data-dir.ts'

export interface UpdateSecurity {
  symbol: string
  /** The ticker of its latest window: what vendors are asked for. */
  ticker: string
  isStock: boolean
  /** Last day of its latest window (null: still listed). */
  validTo: string | null
  bars: DailyBar[]
}

export function listedOn(s: UpdateSecurity, day: string): boolean {
  return s.validTo === null || s.validTo >= day
}

export async function readUniverse(dataDir: string): Promise<UpdateSecurity[]> {
  const file = join(dataDir, DATA_DIR_FILES.securities)
  const text = await readOptional(file)
  if (text === null)
    throw new InputError(
      { file },
      'no identity registry: this is not a data directory (run erm3 data fetch first)',
    )
  const rows = parse(text, { columns: true, skip_empty_lines: true }) as Record<string, string>[]
  const latest = new Map<string, Record<string, string>>()
  for (const [i, r] of rows.entries()) {
    if (!r.symbol || !r.ticker || !r.valid_from)
      throw new InputError({ file, line: i + 2 }, 'expected symbol, ticker and valid_from')
    const known = latest.get(r.symbol)
    if (!known || r.valid_from > known.valid_from) latest.set(r.symbol, r)
  }
  const out: UpdateSecurity[] = []
  for (const [symbol, r] of [...latest].sort(([a], [b]) => a.localeCompare(b))) {
    out.push({
      symbol,
      ticker: r.ticker,
      isStock: r.asset_type === 'stock',
      validTo: r.valid_to ? r.valid_to : null,
      bars: await readBars(dataDir, symbol),
    })
  }
  return out
}

/** The data directory's last day: the market ETF's last bar (the calendar is the days it traded). */
export function lastDay(universe: readonly UpdateSecurity[], dataDir: string): string {
  const market = universe.find((s) => s.symbol === MARKET_ETF)
  const last = market?.bars[market.bars.length - 1]?.date
  if (!last)
    throw new InputError(
      { file: join(dataDir, DATA_DIR_FILES.bars(MARKET_ETF)) },
      `no bars of the market ETF ${MARKET_ETF}: backfill first (erm3 data fetch)`,
    )
  return last
}
