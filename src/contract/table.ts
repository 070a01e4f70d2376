/**
 * A flat table: the tabular form of a time-series response (`format=parquet|csv` or the Accept
 * header), encoded as Parquet or CSV by the export layer. Column types are the Parquet types the
 * interface allows.
 * Nulls: `null` in `values` (or NaN in a Float64Array).
 */
export type TableColumn =
  | { name: string; type: 'UTF8'; values: (string | null)[] }
  | { name: string; type: 'DOUBLE'; values: Float64Array | (number | null)[] }
  | { name: string; type: 'INT64'; values: Float64Array | (number | null)[] }
  | { name: string; type: 'BOOLEAN'; values: (boolean | null)[] }
  /** Dates as epoch milliseconds at 00:00 UTC; CSV writes them as YYYY-MM-DD. */
  | { name: string; type: 'TIMESTAMP_MILLIS'; values: Float64Array | (number | null)[] }

export interface FlatTable {
  columns: TableColumn[]
}

export type TabularFormat = 'json' | 'parquet' | 'csv'

export const TABULAR_MEDIA_TYPES = {
  parquet: 'application/vnd.apache.parquet',
  csv: 'text/csv; charset=utf-8',
} as const

/** Epoch ms of a YYYY-MM-DD date at 00:00 UTC. */
export function dateMillis(iso: string): number {
  return Date.parse(`${iso}T00:00:00Z`)
}
