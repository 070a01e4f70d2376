import type { Operation } from '../../contract/operation.ts'
import {
  L3_DECOMPOSITION_FIELDS,
  LSTAR_FIELDS,
  RETURNS_DECOMPOSITION_FIELDS,
} from '../../contract/ops/analytics.ts'
import { TICKER_RETURNS_FIELDS } from '../../contract/ops/history.ts'
import type { ModelStore } from '../../engine/model-store/reader.ts'
import { AppError } from '../../platform/errors.ts'
import { parseFields } from '../analytics/fields.ts'
import { monthEnds } from '../analytics/l3-decomposition.ts'
import { calendarWindow } from '../analytics/window.ts'

/**
 * The size of a history operation's answer, for POST /estimate: `estimated_rows`, the rows (days;
 * month ends for /l3-decomposition) of the window asked, for a ticker listed over all of it (an
 * upper bound: a younger or delisted ticker has fewer), and `estimated_bytes`, those rows as JSON
 * at about BYTES_PER_DATE for the date and BYTES_PER_VALUE per column. Computable only with the
 * data's calendar (a node without a live build omits both).
 */

/** The columns of one row besides its date: the selectable `fields`, or the fixed ones. */
const HISTORY_COLUMNS: Readonly<Record<string, readonly string[]>> = {
  getTickerReturns: TICKER_RETURNS_FIELDS,
  getReturns: ['returns_gross'],
  getEtfReturns: ['returns_gross'],
  getLstar: LSTAR_FIELDS,
  getReturnsDecomposition: RETURNS_DECOMPOSITION_FIELDS,
  getL3Decomposition: L3_DECOMPOSITION_FIELDS,
}
/** `"2021-12-31",` in a dates array. */
const BYTES_PER_DATE = 13
/** A double as JSON (`0.012345678901234567,`), about; nulls are shorter. */
const BYTES_PER_VALUE = 20
/** Operations whose rows are objects (`{"date":…,"returns_gross":…}`): each value also carries its name. */
const OBJECT_ROWS = new Set(['getTickerReturns'])

interface SchemaProps {
  properties?: Record<string, { default?: unknown }>
}

function yearsOf(op: Operation, raw: unknown): number {
  const def = (op.querystring as SchemaProps | undefined)?.properties?.years?.default
  const years = raw === undefined ? Number(def ?? 1) : Number(raw)
  if (!Number.isInteger(years) || years < 1 || years > 15)
    throw new AppError(
      'INVALID_REQUEST',
      `params.years: ${JSON.stringify(raw)} is not a whole number of years 1–15`,
      {
        fields: [{ field: 'body.params.years', message: 'a whole number 1–15' }],
      },
    )
  return years
}

const text = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined)

/** Rows and bytes of the answer, or null when the operation is no history operation. */
export function historySize(
  store: ModelStore,
  op: Operation,
  params: Record<string, unknown>,
): { estimated_rows: number; estimated_bytes: number } | null {
  const columns = HISTORY_COLUMNS[op.id]
  if (!columns) return null
  const w = calendarWindow(store, {
    years: yearsOf(op, params.years),
    start: text(params.start),
    end: text(params.end),
  })
  const rows = op.id === 'getL3Decomposition' ? monthEnds(store.calendar, w.from, w.to).length : w.to - w.from
  const fields = params.fields as string | string[] | undefined
  const selected = [...(parseFields(fields, columns, 'body') ?? columns)]
  // `{"date":` and `"name":` per value in object rows.
  const named = OBJECT_ROWS.has(op.id) ? 10 + selected.reduce((a, f) => a + f.length + 3, 0) : 0
  const perRow = BYTES_PER_DATE + selected.length * BYTES_PER_VALUE + named
  return { estimated_rows: rows, estimated_bytes: rows * perRow }
}
