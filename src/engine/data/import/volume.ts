import { basename } from 'node:path'
import { isoFromDay } from '../../../platform/dates.ts'
import type { Progress } from '../../../platform/progress.ts'
import type { QualityFinding } from '../format.ts'
import { type Cell, DATE_COLUMN_NAMES, requireColumn, requireDate, requireNumber } from './cells.ts'
import type { CalendarLookup } from './prices-align.ts'
import { TICKER_COLUMN_NAMES, TickerCache } from './prices-long.ts'
import { checkFieldValue, checkNoDuplicates, type RawSeries, RawSeriesBuilder } from './raw-series.ts'
import { readTable, type TableSink } from './table-reader.ts'

/** A long OHLCV table (`ticker,date,open,high,low,close,volume`); only `volume` is used. */
class VolumeSink implements TableSink {
  private cols = { ticker: -1, date: -1, volume: -1 }
  private names: string[] = []
  readonly builders = new Map<string, RawSeriesBuilder>()
  private readonly tickers: TickerCache
  private readonly one = [0]

  constructor(private readonly file: string) {
    this.tickers = new TickerCache(file)
  }

  header(names: string[]): void {
    this.names = names
    this.cols = {
      ticker: requireColumn(this.file, names, TICKER_COLUMN_NAMES),
      date: requireColumn(this.file, names, DATE_COLUMN_NAMES),
      volume: requireColumn(this.file, names, ['volume']),
    }
  }

  row(cells: Cell[], line: number): void {
    const { ticker: ti, date: di, volume: vi } = this.cols
    const ticker = this.tickers.resolve(cells[ti], line, this.names[ti])
    const day = requireDate(this.file, cells[di], line, this.names[di])
    const v = requireNumber(this.file, cells[vi], line, this.names[vi])
    checkFieldValue('volume', v, this.file, line, this.names[vi])
    if (Number.isNaN(v)) return
    let b = this.builders.get(ticker)
    if (b === undefined) {
      b = new RawSeriesBuilder(ticker, this.file, this.names[di], ['volume'])
      this.builders.set(ticker, b)
    }
    this.one[0] = v
    b.push(day, line, this.one)
  }
}

/** Share volume aligned to the calendar, one array per symbol (NaN = none). */
export async function readVolume(
  file: string,
  symbols: readonly string[],
  calendar: Int32Array,
  lookup: CalendarLookup,
  findings: QualityFinding[],
  progress: Progress,
): Promise<Float64Array[]> {
  const sink = new VolumeSink(file)
  await readTable(file, sink, progress, `volume ${basename(file)}`)
  const series = [...sink.builders.values()].map((b) => b.build())
  for (const s of series) checkNoDuplicates([s])
  const name = basename(file)
  findings.push({
    kind: 'note',
    detail: `volume ${name}: only the volume column is used (an OHLCV file's close is usually adjusted, not the raw close)`,
  })
  const partial = partialTrailingDays(series)
  for (const p of partial) findings.push(partialFinding(`volume ${name}`, p))
  return alignVolume(series, symbols, calendar, lookup, new Set(partial.map((p) => p.day)), name, findings)
}

export interface PartialDay {
  day: number
  rows: number
  low: number
  tested: number
}

const PARTIAL_LOOKBACK = 20
const PARTIAL_MIN_HISTORY = 5
const PARTIAL_RATIO = 0.5
/** Files pulled over several sessions can end in more than one partial day; never strip more. */
const PARTIAL_MAX_DAYS = 5

/**
 * Data pulled during a trading session carries a last day with only part of the day's volume.
 * The last date is taken as such a partial day when, for most tickers that have it, its volume
 * is below half of the ticker's median over its previous 20 rows. A partial day is dropped and
 * the test repeats on the new last date: the real benda931 file ends with 2026-04-01 pulled
 * intraday for 61 of 69 tickers, and 2026-04-02 pulled intraday for 4 others.
 */
export function partialTrailingDays(series: readonly RawSeries[]): PartialDay[] {
  const sorted = series.map(sortedVolumes)
  const found: PartialDay[] = []
  const ends = sorted.map((s) => s.days.length)
  while (found.length < PARTIAL_MAX_DAYS) {
    let last = Number.NEGATIVE_INFINITY
    sorted.forEach((s, k) => {
      if (ends[k] > 0) last = Math.max(last, s.days[ends[k] - 1])
    })
    const p = testDay(sorted, ends, last)
    if (p === null) break
    found.push(p)
    sorted.forEach((s, k) => {
      if (ends[k] > 0 && s.days[ends[k] - 1] === last) ends[k]--
    })
  }
  return found
}

function sortedVolumes(s: RawSeries): { days: number[]; vol: number[] } {
  const vol = s.fields.volume ?? new Float64Array(s.days.length)
  const order = Array.from(s.days.keys()).sort((a, b) => s.days[a] - s.days[b])
  return { days: order.map((i) => s.days[i]), vol: order.map((i) => vol[i]) }
}

function testDay(
  sorted: { days: number[]; vol: number[] }[],
  ends: number[],
  day: number,
): PartialDay | null {
  let rows = 0
  let tested = 0
  let low = 0
  sorted.forEach((s, k) => {
    const at = ends[k] - 1
    if (at < 0 || s.days[at] !== day) return
    rows++
    if (at < PARTIAL_MIN_HISTORY) return
    tested++
    if (s.vol[at] < PARTIAL_RATIO * median(s.vol.slice(Math.max(0, at - PARTIAL_LOOKBACK), at))) low++
  })
  return tested > 0 && low * 2 > tested ? { day, rows, low, tested } : null
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b)
  const m = s.length >> 1
  return s.length % 2 === 1 ? s[m] : (s[m - 1] + s[m]) / 2
}

/** `label` names the reading, e.g. `volume ohlcv.csv.gz`. */
export function partialFinding(label: string, p: PartialDay): QualityFinding {
  const day = isoFromDay(p.day)
  return {
    kind: 'dropped_rows',
    from: day,
    to: day,
    detail: `${label}: ${day} looks like an intraday partial day (volume below half the ${PARTIAL_LOOKBACK}-row median for ${p.low} of ${p.tested} tickers); its ${p.rows} row(s) were dropped`,
  }
}

function alignVolume(
  series: readonly RawSeries[],
  symbols: readonly string[],
  calendar: Int32Array,
  lookup: CalendarLookup,
  skipDays: ReadonlySet<number>,
  file: string,
  findings: QualityFinding[],
): Float64Array[] {
  const bySymbol = new Map(symbols.map((s, k) => [s, k]))
  const out = symbols.map(() => new Float64Array(calendar.length).fill(Number.NaN))
  const unknown: string[] = []
  const dropped = { rows: 0, first: Number.POSITIVE_INFINITY, last: Number.NEGATIVE_INFINITY }
  for (const s of series) {
    const k = bySymbol.get(s.ticker)
    const vol = s.fields.volume
    if (k === undefined || !vol) {
      unknown.push(s.ticker)
      continue
    }
    for (let i = 0; i < s.days.length; i++) {
      const d = s.days[i]
      if (skipDays.has(d)) continue
      const idx = lookup.indexOf(d)
      if (idx >= 0) out[k][idx] = vol[i]
      else {
        dropped.rows++
        dropped.first = Math.min(dropped.first, d)
        dropped.last = Math.max(dropped.last, d)
      }
    }
  }
  if (dropped.rows > 0) {
    findings.push({
      kind: 'dropped_rows',
      from: isoFromDay(dropped.first),
      to: isoFromDay(dropped.last),
      detail: `volume ${file}: ${dropped.rows} row(s) on days outside the calendar were dropped`,
    })
  }
  if (unknown.length > 0) {
    findings.push({
      kind: 'note',
      detail: `volume ${file}: ${unknown.length} ticker(s) without a price series ignored: ${unknown.join(', ')}`,
    })
  }
  return out
}
