import { dateMillis, type FlatTable, type TableColumn } from '../../contract/table.ts'
import type { ModelStore } from '../../engine/model-store/reader.ts'
import type { Column } from '../../engine/zarr/types.ts'

/** Helpers shared by the per-ticker time-series services (lstar, decompositions, batch). */

export type Num = number | null
export type LevelName = 'L1' | 'L2' | 'L3' | null

/** Stored floats use NaN for null; the wire uses null. */
export const num = (v: number | undefined): Num => (v === undefined || Number.isNaN(v) ? null : v)

/** Level codes (1..3, anything else null) → the wire's "L1" | "L2" | "L3" | null. */
export function levelName(code: number | undefined): LevelName {
  return code === 1 ? 'L1' : code === 2 ? 'L2' : code === 3 ? 'L3' : null
}

/** ETF code (index into `store.etfs`, -1 none) → ticker. */
export function etfOf(store: ModelStore, code: number | undefined): string | null {
  return code === undefined || code < 0 ? null : (store.etfs[code] ?? null)
}

/** Values `[from, to)` of a stored column (read with offset `base`) as nullable numbers. */
export function nullable(col: Column, from: number, to: number, base = 0): Num[] {
  const out: Num[] = new Array(to - from)
  for (let t = from; t < to; t++) out[t - from] = num(col[t - base])
  return out
}

/**
 * `_agent.confidence` of a served series: the share of days (or positions) whose model state is
 * populated, and freshness (1 when the series reaches the store's data_as_of); overall = min.
 */
export function seriesConfidence(
  populated: number,
  total: number,
  fresh: boolean,
): { overall: number; factors: Record<string, number> } {
  const factors = { model_coverage: total === 0 ? 0 : populated / total, freshness: fresh ? 1 : 0.5 }
  return { overall: Math.min(...Object.values(factors)), factors }
}

/** Table columns: a date column as TIMESTAMP_MILLIS, numbers as DOUBLE, strings as UTF8. */
export const dateColumn = (name: string, dates: readonly string[]): TableColumn => ({
  name,
  type: 'TIMESTAMP_MILLIS',
  values: dates.map(dateMillis),
})
export const doubleColumn = (name: string, values: Num[]): TableColumn => ({ name, type: 'DOUBLE', values })
export const textColumn = (name: string, values: (string | null)[]): TableColumn => ({
  name,
  type: 'UTF8',
  values,
})

/** How a row field becomes a table column (see rowsTable). */
export type ColumnKind = 'date' | 'text' | 'double' | 'int' | 'bool'

function kindColumn(name: string, kind: ColumnKind, values: unknown[]): TableColumn {
  switch (kind) {
    case 'date':
      return dateColumn(name, values as string[])
    case 'text':
      return textColumn(name, values as (string | null)[])
    case 'double':
      return doubleColumn(name, values as Num[])
    case 'int':
      return { name, type: 'INT64', values: values as (number | null)[] }
    case 'bool':
      return { name, type: 'BOOLEAN', values: values as (boolean | null)[] }
  }
}

/**
 * The tabular form of a list of rows (the cross-sectional endpoints): one column per field named
 * in `spec`, in its order; with `teo`, a leading constant `teo` date column.
 */
export function rowsTable<R extends object>(
  rows: readonly R[],
  spec: Partial<Record<keyof R & string, ColumnKind>>,
  teo?: string,
): FlatTable {
  const columns: TableColumn[] =
    teo === undefined
      ? []
      : [
          dateColumn(
            'teo',
            rows.map(() => teo),
          ),
        ]
  for (const [name, kind] of Object.entries(spec) as [keyof R & string, ColumnKind][]) {
    columns.push(
      kindColumn(
        name,
        kind,
        rows.map((r) => r[name] as unknown),
      ),
    )
  }
  return { columns }
}
