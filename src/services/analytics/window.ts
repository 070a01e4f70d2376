import type { ModelStore } from '../../engine/model-store/reader.ts'
import { dayFromParts, isoFromDay, lastIndexAtOrBefore, parseIsoDay } from '../../platform/dates.ts'
import { AppError } from '../../platform/errors.ts'

/**
 * What a history request asks for: `years` back from the end, or `start`..`end` (ISO days,
 * inclusive). `start` wins over `years`; `end` defaults to the symbol's last priced day. A bare
 * number is `years`.
 */
export type HistorySpan =
  | number
  | { years?: number | undefined; start?: string | undefined; end?: string | undefined }

/** The span's own words for a file name: `5y`, `2021-01-04_2021-01-08`, `2021-01-04_latest`. */
export function spanLabel(span: HistorySpan, defaultYears = 1): string {
  const s = typeof span === 'number' ? { years: span } : span
  if (s.start) return `${s.start}_${s.end ?? 'latest'}`
  return `${s.years ?? defaultYears}y${s.end ? `_to_${s.end}` : ''}`
}

/** A `start`/`end` day of the request as a day number, refused with a clear 400 when unusable. */
function spanDay(store: ModelStore, name: 'start' | 'end', raw: string): number {
  const day = parseIsoDay(raw)
  if (day === null)
    throw new AppError('INVALID_REQUEST', `${name}: ${JSON.stringify(raw)} is not a date (YYYY-MM-DD)`, {
      fields: [{ field: `querystring.${name}`, message: 'not a YYYY-MM-DD date' }],
    })
  const cal = store.calendar
  const first = cal[0] ?? 0
  const last = cal[cal.length - 1] ?? 0
  if (day < first || day > last)
    throw new AppError(
      'INVALID_REQUEST',
      `${name}: ${raw} is outside the data (${isoFromDay(first)} to ${isoFromDay(last)})`,
      { fields: [{ field: `querystring.${name}`, message: 'outside the data' }] },
    )
  return day
}

/** The start and end days asked (null when not given), checked against the data and each other. */
function spanDays(
  store: ModelStore,
  s: Exclude<HistorySpan, number>,
): { start: number | null; end: number | null } {
  const start = s.start === undefined ? null : spanDay(store, 'start', s.start)
  const end = s.end === undefined ? null : spanDay(store, 'end', s.end)
  if (start !== null && end !== null && start > end)
    throw new AppError('INVALID_REQUEST', `start ${s.start} is after end ${s.end}`, {
      fields: [{ field: 'querystring.start', message: 'after end' }],
    })
  return { start, end }
}

/** Days [from, to) of one symbol's history that a `years` request covers, with its closes and returns. */
export interface HistoryWindow {
  from: number
  /** Exclusive; from === to when the symbol never traded. */
  to: number
  /** price_close and returns_gross over the whole calendar (NaN = null); slice with [from, to). */
  price: Float64Array
  returns: Float64Array
  /** Inclusive ISO bounds of the window, null when it is empty (`_metadata.range`). */
  range: [string, string] | null
}

/** The same month and day `years` earlier; 29 February becomes 28 February (never 1 March). */
function yearsBefore(day: number, years: number): number {
  const d = new Date(day * 86_400_000)
  const y = d.getUTCFullYear() - years
  const m = d.getUTCMonth() + 1
  const lastOfMonth = new Date(Date.UTC(y, m, 0)).getUTCDate()
  return dayFromParts(y, m, Math.min(d.getUTCDate(), lastOfMonth))
}

/**
 * The trading days of a `years` request: from (end − N calendar years, exclusive) to the end
 * inclusive, where the end is the symbol's last priced day (data_as_of while it is listed, its
 * last trade once delisted). Days before its first price (it listed inside the window) are
 * dropped, so a young stock's series starts at its first day; a day without a close inside the
 * listed life is served like any other (ModelStore.listedLife), even as the window's first day.
 */
export async function historyWindow(
  store: ModelStore,
  symbol: number,
  span: HistorySpan,
): Promise<HistoryWindow> {
  const s = typeof span === 'number' ? { years: span } : span
  const asked = spanDays(store, s)
  const h = await store.history(symbol, ['price_close', 'returns_gross'])
  const price = h.price_close as Float64Array
  const returns = h.returns_gross as Float64Array
  const life = await store.listedLife(symbol)
  const end =
    asked.end === null ? life.last : Math.min(life.last, lastIndexAtOrBefore(store.calendar, asked.end))
  if (end < 0 || end < life.first) return { from: 0, to: 0, price, returns, range: null }
  const cutoff = asked.start !== null ? asked.start - 1 : yearsBefore(store.calendar[end], s.years ?? 1)
  // First calendar index with a day after the cutoff (the calendar is sorted ascending).
  const lo = lastIndexAtOrBefore(store.calendar, cutoff) + 1
  const from = Math.max(lo, life.first)
  if (from > end) return { from: 0, to: 0, price, returns, range: null }
  return {
    from,
    to: end + 1,
    price,
    returns,
    range: [isoFromDay(store.calendar[from]), isoFromDay(store.calendar[end])],
  }
}

/**
 * The calendar days [from, to) a span covers for a ticker listed over the whole window ending at
 * `end` or the data's last day: the most rows a history request can return (an estimate's rows).
 * A bad `start`/`end` is the same 400 as the request's.
 */
export function calendarWindow(store: ModelStore, span: HistorySpan): { from: number; to: number } {
  const s = typeof span === 'number' ? { years: span } : span
  const asked = spanDays(store, s)
  const cal = store.calendar
  const end = asked.end === null ? cal.length - 1 : lastIndexAtOrBefore(cal, asked.end)
  if (end < 0) return { from: 0, to: 0 }
  const cutoff = asked.start !== null ? asked.start - 1 : yearsBefore(cal[end], s.years ?? 1)
  const from = lastIndexAtOrBefore(cal, cutoff) + 1
  return from > end ? { from: 0, to: 0 } : { from, to: end + 1 }
}
