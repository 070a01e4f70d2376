import { isoFromDay } from '../../../platform/dates.ts'
import { InputError } from '../../../platform/errors.ts'
import type { PriceField } from '../format.ts'

/**
 * One ticker's observations from one input file, in file order, before alignment to the
 * calendar. `lines` keeps each observation's line so later checks (duplicates across files) can
 * point at it. A field absent from the file is absent from `fields`; NaN = empty cell.
 */
export interface RawSeries {
  ticker: string
  file: string
  /** The file's date column name, for error locations. */
  dateColumn: string
  days: Int32Array
  lines: Int32Array
  fields: Partial<Record<PriceField, Float64Array>>
}

/** Value rules per field: prices must be positive; volume may be zero. */
export function checkFieldValue(
  field: PriceField,
  v: number,
  file: string,
  line: number,
  column: string,
): void {
  if (Number.isNaN(v)) return
  const ok = field === 'volume' ? v >= 0 : v > 0
  if (!ok) {
    const what =
      field === 'volume'
        ? 'negative volume'
        : `non-positive ${field === 'shares_out' ? 'shares outstanding' : 'price'}`
    throw new InputError({ file, line, column }, `${what} ${v}`)
  }
}

/** Growable per-ticker columns for long tables (rows arrive in any order). */
export class RawSeriesBuilder {
  private readonly days: number[] = []
  private readonly lines: number[] = []
  private readonly values: Partial<Record<PriceField, number[]>> = {}

  constructor(
    readonly ticker: string,
    readonly file: string,
    readonly dateColumn: string,
    readonly fieldNames: readonly PriceField[],
  ) {
    for (const f of fieldNames) this.values[f] = []
  }

  push(day: number, line: number, vals: readonly number[]): void {
    this.days.push(day)
    this.lines.push(line)
    for (let k = 0; k < this.fieldNames.length; k++) this.values[this.fieldNames[k]]?.push(vals[k])
  }

  build(): RawSeries {
    const fields: Partial<Record<PriceField, Float64Array>> = {}
    for (const f of this.fieldNames) fields[f] = Float64Array.from(this.values[f] ?? [])
    return {
      ticker: this.ticker,
      file: this.file,
      dateColumn: this.dateColumn,
      days: Int32Array.from(this.days),
      lines: Int32Array.from(this.lines),
      fields,
    }
  }
}

/** True when observation `i` carries at least one value (an all-empty row is no observation). */
export function hasAnyValue(fields: readonly Float64Array[], i: number): boolean {
  for (const arr of fields) if (!Number.isNaN(arr[i])) return true
  return false
}

/**
 * Rejects a (ticker, date) given twice, within one file or across files. Works over a dense
 * day-range table instead of a hash set: O(n), and cheap even for millions of rows. The error
 * points at the later occurrence (later file on the command line, later line in a file).
 */
export function checkNoDuplicates(series: readonly RawSeries[]): void {
  let lo = Number.POSITIVE_INFINITY
  let hi = Number.NEGATIVE_INFINITY
  for (const s of series) {
    for (const d of s.days) {
      if (d < lo) lo = d
      if (d > hi) hi = d
    }
  }
  if (lo > hi) return
  const seenSeries = new Int32Array(hi - lo + 1).fill(-1)
  const seenPos = new Int32Array(hi - lo + 1)
  series.forEach((s, si) => {
    const fields = Object.values(s.fields)
    for (let i = 0; i < s.days.length; i++) {
      if (!hasAnyValue(fields, i)) continue
      const k = s.days[i] - lo
      const prev = seenSeries[k]
      if (prev >= 0) {
        const first = series[prev]
        throw new InputError(
          { file: s.file, line: s.lines[i], column: s.dateColumn },
          `duplicate ${s.ticker} on ${isoFromDay(s.days[i])} (first given at ${first.file}:${first.lines[seenPos[k]]})`,
        )
      }
      seenSeries[k] = si
      seenPos[k] = i
    }
  })
}
