import { isoFromDay } from '../../../platform/dates.ts'
import { InputError } from '../../../platform/errors.ts'
import { MARKET_ETF } from '../etf-registry.ts'
import { type Panel, PRICE_FIELDS, type PriceField, type Prices, type QualityFinding } from '../format.ts'
import type { PriceFileResult } from './prices-file.ts'
import { checkNoDuplicates, hasAnyValue, type RawSeries } from './raw-series.ts'

export interface AlignedPrices {
  calendar: Int32Array
  /** Symbol keys (canonical tickers) in order of first appearance in the price files. */
  symbols: string[]
  prices: Prices
}

/**
 * Merges the price files into calendar-aligned panels. The calendar is the set of days on which
 * the market ETF has an adjusted close (docs/methodology.md §2); observations of other tickers on other
 * days are dropped and reported, never shifted to a neighbouring day.
 */
export function alignPrices(
  files: readonly PriceFileResult[],
  priceFiles: readonly string[],
  findings: QualityFinding[],
): AlignedPrices {
  const groups = groupByTicker(files)
  for (const group of groups.values()) checkNoDuplicates(group)
  const calendar = marketCalendar(groups.get(MARKET_ETF), priceFiles)
  const lookup = new CalendarLookup(calendar)
  const fields = new Set<PriceField>(files.flatMap((f) => f.fields))

  const symbols: string[] = []
  const panels: Record<PriceField, Panel> = { adj_close: [], close: [], volume: [], shares_out: [] }
  for (const [ticker, group] of groups) {
    const aligned = alignGroup(group, lookup, fields, calendar.length)
    if (aligned.dropped > 0) findings.push(droppedFinding(ticker, aligned))
    else if (!aligned.anyInCalendar)
      findings.push({
        kind: 'note',
        symbol: ticker,
        detail: `${ticker} has no adjusted close at all and is left out`,
      })
    if (!aligned.anyInCalendar) continue
    symbols.push(ticker)
    for (const f of PRICE_FIELDS) {
      const arr = aligned.panels[f]
      if (arr) panels[f].push(arr)
    }
  }
  const prices: Prices = {
    adj_close: panels.adj_close,
    close: fields.has('close') ? panels.close : null,
    volume: fields.has('volume') ? panels.volume : null,
    shares_out: fields.has('shares_out') ? panels.shares_out : null,
  }
  return { calendar, symbols, prices }
}

function groupByTicker(files: readonly PriceFileResult[]): Map<string, RawSeries[]> {
  const groups = new Map<string, RawSeries[]>()
  for (const f of files) {
    for (const s of f.series) {
      const g = groups.get(s.ticker)
      if (g) g.push(s)
      else groups.set(s.ticker, [s])
    }
  }
  return groups
}

function marketCalendar(group: RawSeries[] | undefined, priceFiles: readonly string[]): Int32Array {
  const days: number[] = []
  for (const s of group ?? []) {
    const px = s.fields.adj_close
    if (!px) continue
    for (let i = 0; i < s.days.length; i++) if (!Number.isNaN(px[i])) days.push(s.days[i])
  }
  if (days.length === 0) {
    throw new InputError(
      { file: priceFiles.join(', ') },
      `no adjusted close for the market ETF ${MARKET_ETF}: the calendar is the set of days on which ${MARKET_ETF} has a price`,
    )
  }
  return Int32Array.from(days).sort()
}

/** Day number → calendar index through a dense table (calendars span at most a few 10k days). */
export class CalendarLookup {
  private readonly first: number
  private readonly table: Int32Array
  constructor(calendar: Int32Array) {
    this.first = calendar.length > 0 ? calendar[0] : 0
    const span = calendar.length > 0 ? calendar[calendar.length - 1] - this.first + 1 : 0
    this.table = new Int32Array(span).fill(-1)
    calendar.forEach((d, i) => {
      this.table[d - this.first] = i
    })
  }

  /** Calendar index of a day, or -1 when the day is not a trading day. */
  indexOf(day: number): number {
    const k = day - this.first
    return k >= 0 && k < this.table.length ? this.table[k] : -1
  }
}

interface AlignedGroup {
  panels: Partial<Record<PriceField, Float64Array>>
  anyInCalendar: boolean
  dropped: number
  droppedFirst: number
  droppedLast: number
}

function alignGroup(
  group: RawSeries[],
  lookup: CalendarLookup,
  fields: Set<PriceField>,
  n: number,
): AlignedGroup {
  const out: AlignedGroup = {
    panels: {},
    anyInCalendar: false,
    dropped: 0,
    droppedFirst: Number.POSITIVE_INFINITY,
    droppedLast: Number.NEGATIVE_INFINITY,
  }
  for (const f of fields) out.panels[f] = new Float64Array(n).fill(Number.NaN)
  for (const s of group) {
    const entries = Object.entries(s.fields) as [PriceField, Float64Array][]
    const arrays = entries.map(([, a]) => a)
    for (let i = 0; i < s.days.length; i++) {
      const idx = lookup.indexOf(s.days[i])
      if (idx < 0) {
        if (hasAnyValue(arrays, i)) noteDropped(out, s.days[i])
        continue
      }
      for (const [f, src] of entries) {
        const dst = out.panels[f]
        // No (ticker, day) occurs twice (checked), so a plain write never overwrites a value.
        if (dst && !Number.isNaN(src[i])) dst[idx] = src[i]
      }
    }
  }
  const px = out.panels.adj_close
  out.anyInCalendar = px?.some((v) => !Number.isNaN(v)) ?? false
  return out
}

function noteDropped(g: AlignedGroup, day: number): void {
  g.dropped++
  if (day < g.droppedFirst) g.droppedFirst = day
  if (day > g.droppedLast) g.droppedLast = day
}

function droppedFinding(ticker: string, g: AlignedGroup): QualityFinding {
  const tail = g.anyInCalendar ? '' : `; ${ticker} has no price on any calendar day and is left out`
  return {
    kind: 'dropped_rows',
    symbol: ticker,
    from: isoFromDay(g.droppedFirst),
    to: isoFromDay(g.droppedLast),
    detail: `${g.dropped} row(s) on days when ${MARKET_ETF} has no price (not in the calendar) were dropped${tail}`,
  }
}
