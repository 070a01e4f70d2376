import { existsSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { buildImportedDataset } from '../../src/engine/data/import/index.ts'
import type { ImportOptions } from '../../src/engine/data/import/options.ts'

/** The real-data fixture beside the checkout (never copied into the repository). */
export const REAL = fileURLToPath(new URL('../../../shared/data/real/', import.meta.url))
export const realDataPresent = existsSync(REAL)

/**
 * The real prices and GICS classification imported as a canonical dataset (in memory); `extra`
 * adds import options (rates, fundamentals, a CIK map…) to those.
 */
export function importRealDataset(out: string, extra: Omit<Partial<ImportOptions>, 'out'> = {}) {
  return buildImportedDataset({
    prices: [`${REAL}fixture_adjclose_2019-01-02_2026-07-31.csv`],
    securities: `${REAL}classification/sp500_constituents_gics_2026-08-08.csv`,
    classificationMap: `${REAL}classification/gics_to_etf_map.csv`,
    ...extra,
    out,
  })
}
