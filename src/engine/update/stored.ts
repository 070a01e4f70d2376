/**
 * What an update extends: every security of the data directory's identity registry with its
 * stored bars, asked of vendors under the ticker of its latest window.
 */
import { join } from 'node:path'
import { InputError } from '../../platform/errors.ts'
import { MARKET_ETF } from '../data/etf-registry.ts'
import type { DailyBar } from '../sources/types.ts'
import { DATA_DIR_FILES, readBars, readBarsTail } from './data-dir.ts'
import { latestWindows, readIdentity } from './identity.ts'

export interface UpdateSecurity {
  symbol: string
  /** The ticker of its latest window: what vendors are asked for. */
  ticker: string
  isStock: boolean
  /** Last day of its latest window (null: still listed). */
  validTo: string | null
  /**
   * Its stored bars, oldest first: the whole file when `complete`, else the file's last bars
   * (every bar from the date readUniverse was given, and the one before). The gate, the plain
   * append and lastDay need only the last bar; what needs the whole history (the corporate-action
   * reconcile) loads it with `wholeHistory`.
   */
  bars: DailyBar[]
  complete: boolean
}

export function listedOn(s: UpdateSecurity, day: string): boolean {
  return s.validTo === null || s.validTo >= day
}

/**
 * The securities to update with their stored bars: every bar, or with `tail` only the bars from
 * its date on and the one before, reading about `bytes` of each file first (a read that scales
 * with the days since, not with the history).
 */
export async function readUniverse(
  dataDir: string,
  tail: { from: string; bytes: number } | null = null,
): Promise<UpdateSecurity[]> {
  const identity = await readIdentity(dataDir)
  if (identity.length === 0)
    throw new InputError(
      { file: join(dataDir, DATA_DIR_FILES.securities) },
      'no securities: this is not a data directory yet (run erm3 data fetch first)',
    )
  const out: UpdateSecurity[] = []
  for (const [symbol, r] of [...latestWindows(identity)].sort(([a], [b]) => a.localeCompare(b))) {
    const { bars, complete } =
      tail === null
        ? { bars: await readBars(dataDir, symbol), complete: true }
        : await readBarsTail(dataDir, symbol, tail.from, tail.bytes)
    out.push({
      symbol,
      ticker: r.ticker,
      isStock: r.assetType === 'stock',
      validTo: r.validTo,
      bars,
      complete,
    })
  }
  return out
}

/** The security's every stored bar: read from its file (once) when only its tail was. */
export async function wholeHistory(dataDir: string, s: UpdateSecurity): Promise<DailyBar[]> {
  if (!s.complete) {
    s.bars = await readBars(dataDir, s.symbol)
    s.complete = true
  }
  return s.bars
}

/** The symbol key of the market ETF, whose bars define the calendar. */
export function marketSymbol(universe: readonly UpdateSecurity[]): string {
  return universe.find((s) => s.ticker === MARKET_ETF && !s.isStock)?.symbol ?? MARKET_ETF
}

/** The data directory's last day: the market ETF's last bar. */
export function lastDay(universe: readonly UpdateSecurity[], dataDir: string): string {
  const symbol = marketSymbol(universe)
  const market = universe.find((s) => s.symbol === symbol)
  const last = market?.bars[market.bars.length - 1]?.date
  if (!last)
    throw new InputError(
      { file: join(dataDir, DATA_DIR_FILES.bars(symbol)) },
      `no bars of the market ETF ${MARKET_ETF}: backfill first (erm3 data fetch)`,
    )
  return last
}
