import type { PriceField, TruthField } from './format.ts'

/** File names inside a dataset directory (docs/data-format.md describes each). */
export const DATASET_FILES = {
  manifest: 'manifest.json',
  calendar: 'calendar.csv',
  securities: 'securities.csv',
  factors: 'factors.csv',
  rates: 'rates.csv',
  series: 'series.parquet',
  report: 'import-report.json',
  truthParams: 'truth/params.json',
  price: (field: PriceField) => `prices/${field}.parquet`,
  truth: (field: TruthField) => `truth/${field}.parquet`,
} as const

/** SEC's own naming: `CIK` and the ten-digit zero-padded number. */
export function fundamentalsFileName(cik: number): string {
  return `CIK${String(cik).padStart(10, '0')}.json.gz`
}
