import { InputError } from '../../../platform/errors.ts'
import { canonicalTicker, isValidTicker } from '../aliases.ts'
import type { PriceField } from '../format.ts'
import {
  type Cell,
  cellText,
  DATE_COLUMN_NAMES,
  findColumn,
  requireColumn,
  requireDate,
  requireNumber,
} from './cells.ts'
import type { PriceColumn } from './price-spec.ts'
import { checkFieldValue, type RawSeries, RawSeriesBuilder } from './raw-series.ts'
import type { TableSink } from './table-reader.ts'

export const TICKER_COLUMN_NAMES = ['ticker', 'symbol']

/** Accepted header spellings per price field (compared case- and separator-insensitively). */
const FIELD_COLUMN_NAMES: Record<PriceField, string[]> = {
  adj_close: ['adj_close', 'adjclose', 'adj close', 'adjusted_close'],
  close: ['close'],
  volume: ['volume'],
  shares_out: ['shares_out', 'shares_outstanding', 'sharesout'],
}

/** True when a header names a ticker column, i.e. the table is long rather than wide. */
export function isLongHeader(names: readonly string[]): boolean {
  return findColumn(names, TICKER_COLUMN_NAMES) >= 0
}

/**
 * Resolves a ticker cell to its canonical spelling, memoised per raw spelling because a long
 * table repeats each ticker thousands of times.
 */
export class TickerCache {
  private readonly cache = new Map<string, string>()
  constructor(private readonly file: string) {}

  resolve(c: Cell, line: number, column: string): string {
    const raw = typeof c === 'string' ? c : cellText(c)
    let t = this.cache.get(raw)
    if (t === undefined) {
      t = canonicalTicker(raw)
      if (!isValidTicker(t)) {
        throw new InputError({ file: this.file, line, column }, `"${raw}" is not a valid ticker`)
      }
      this.cache.set(raw, t)
    }
    return t
  }
}

/**
 * A long price table: one row per (ticker, date) with `adj_close` and optionally `close`,
 * `volume`, `shares_out`, in any column order. With `column` 'close' (an OHLCV file, see
 * price-spec.ts) the `close` column is read as the adjusted close, and `volume` only so that
 * the caller can detect intraday partial days; the other columns are ignored.
 */
export class LongPriceSink implements TableSink {
  private tickerIdx = -1
  private dateIdx = -1
  private names: string[] = []
  private fieldCols: { field: PriceField; index: number }[] = []
  private readonly builders = new Map<string, RawSeriesBuilder>()
  private readonly tickers: TickerCache
  private readonly vals: number[] = []

  constructor(
    private readonly file: string,
    private readonly column: PriceColumn = 'adj_close',
  ) {
    this.tickers = new TickerCache(file)
  }

  header(names: string[]): void {
    this.names = names
    this.tickerIdx = requireColumn(this.file, names, TICKER_COLUMN_NAMES)
    this.dateIdx = requireColumn(this.file, names, DATE_COLUMN_NAMES)
    const price = requireColumn(this.file, names, FIELD_COLUMN_NAMES[this.column])
    if (this.column === 'close') {
      this.fieldCols.push({ field: 'adj_close', index: price })
      const volume = findColumn(names, FIELD_COLUMN_NAMES.volume)
      if (volume >= 0) this.fieldCols.push({ field: 'volume', index: volume })
      return
    }
    for (const [field, aliases] of Object.entries(FIELD_COLUMN_NAMES) as [PriceField, string[]][]) {
      const index = findColumn(names, aliases)
      if (index >= 0) this.fieldCols.push({ field, index })
    }
  }

  /** The price fields this file provides. */
  fields(): PriceField[] {
    return this.fieldCols.map((c) => c.field)
  }

  row(cells: Cell[], line: number): void {
    const ticker = this.tickers.resolve(cells[this.tickerIdx], line, this.names[this.tickerIdx])
    const day = requireDate(this.file, cells[this.dateIdx], line, this.names[this.dateIdx])
    let any = false
    for (let k = 0; k < this.fieldCols.length; k++) {
      const { field, index } = this.fieldCols[k]
      const v = requireNumber(this.file, cells[index], line, this.names[index])
      checkFieldValue(field, v, this.file, line, this.names[index])
      this.vals[k] = v
      if (!Number.isNaN(v)) any = true
    }
    if (!any) return
    let b = this.builders.get(ticker)
    if (b === undefined) {
      b = new RawSeriesBuilder(ticker, this.file, this.names[this.dateIdx], this.fields())
      this.builders.set(ticker, b)
    }
    b.push(day, line, this.vals)
  }

  result(): RawSeries[] {
    return [...this.builders.values()].map((b) => b.build())
  }
}
