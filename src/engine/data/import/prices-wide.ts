import { InputError } from '../../../platform/errors.ts'
import { canonicalTicker, isValidTicker } from '../aliases.ts'
import {
  type Cell,
  DATE_COLUMN_NAMES,
  DistinctDates,
  requireColumn,
  requireDate,
  requireNumber,
} from './cells.ts'
import { checkFieldValue, type RawSeries } from './raw-series.ts'
import type { TableSink } from './table-reader.ts'

/**
 * A wide price table: `date,<TICKER>,<TICKER>,…`, one row per date, each cell an adjusted close
 * (empty = no price that day). Every ticker column becomes one RawSeries.
 */
export class WidePriceSink implements TableSink {
  private dateIdx = -1
  private dateName = 'date'
  private readonly columns: { index: number; name: string; ticker: string; values: number[] }[] = []
  private readonly days: number[] = []
  private readonly lines: number[] = []
  private readonly seenDays: DistinctDates

  constructor(private readonly file: string) {
    this.seenDays = new DistinctDates(file)
  }

  header(names: string[]): void {
    this.dateIdx = requireColumn(this.file, names, DATE_COLUMN_NAMES)
    this.dateName = names[this.dateIdx]
    const byTicker = new Map<string, number>()
    names.forEach((name, index) => {
      if (index === this.dateIdx) return
      const ticker = canonicalTicker(name)
      if (!isValidTicker(ticker)) {
        throw new InputError(
          { file: this.file, line: 1, column: index + 1 },
          `"${name}" is not a valid ticker`,
        )
      }
      const first = byTicker.get(ticker)
      if (first !== undefined) {
        throw new InputError(
          { file: this.file, line: 1, column: index + 1 },
          `duplicate ticker column ${ticker} ("${name}"; also column ${first + 1} "${names[first]}")`,
        )
      }
      byTicker.set(ticker, index)
      this.columns.push({ index, name, ticker, values: [] })
    })
    if (this.columns.length === 0) {
      throw new InputError(
        { file: this.file, line: 1, column: 2 },
        'no ticker columns next to the date column',
      )
    }
  }

  row(cells: Cell[], line: number): void {
    const day = requireDate(this.file, cells[this.dateIdx], line, this.dateName)
    this.seenDays.add(day, line, this.dateName)
    this.days.push(day)
    this.lines.push(line)
    for (const col of this.columns) {
      const v = requireNumber(this.file, cells[col.index], line, col.name)
      checkFieldValue('adj_close', v, this.file, line, col.name)
      col.values.push(v)
    }
  }

  result(): RawSeries[] {
    const days = Int32Array.from(this.days)
    const lines = Int32Array.from(this.lines)
    return this.columns.map((col) => ({
      ticker: col.ticker,
      file: this.file,
      dateColumn: this.dateName,
      days,
      lines,
      fields: { adj_close: Float64Array.from(col.values) },
    }))
  }
}
