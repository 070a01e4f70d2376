import type { ModelStore } from '../../engine/model-store/reader.ts'
import { dayFromParts, isoFromDay } from '../../platform/dates.ts'

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
  years: number,
): Promise<HistoryWindow> {
  const h = await store.history(symbol, ['price_close', 'returns_gross'])
  const price = h.price_close as Float64Array
  const returns = h.returns_gross as Float64Array
  const life = await store.listedLife(symbol)
  const end = life.last
  if (end < 0) return { from: 0, to: 0, price, returns, range: null }
  const cutoff = yearsBefore(store.calendar[end], years)
  let lo = 0
  let hi = end
  // First calendar index with a day after the cutoff (the calendar is sorted ascending).
  while (lo < hi) {
    const mid = (lo + hi) >> 1
    if (store.calendar[mid] > cutoff) hi = mid
    else lo = mid + 1
  }
  const from = Math.max(lo, life.first)
  return {
    from,
    to: end + 1,
    price,
    returns,
    range: [isoFromDay(store.calendar[from]), isoFromDay(store.calendar[end])],
  }
}
