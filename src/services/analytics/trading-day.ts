import type { ModelStore } from '../../engine/model-store/reader.ts'
import { parseIsoDay } from '../../platform/dates.ts'
import { AppError } from '../../platform/errors.ts'

/**
 * The trading day a cross-sectional request asks for (`teo`) and what a day's answer shares:
 * the note when the date asked was not a trading day, the confidence, the ticker a symbol
 * traded under that day.
 */

/** A day of the store asked as `teo`, and what it resolved to. */
export interface Teo {
  t: number
  teo: string
  /** The date as asked when it was not a trading day (resolved to the previous one), else null. */
  requested: string | null
}

/**
 * `teo` → calendar index: absent = data_as_of; a day inside the store's range that is not a
 * trading day resolves to the previous trading day; outside the range → 404 DATE_NOT_AVAILABLE
 * naming the range.
 */
export function resolveTeo(store: ModelStore, teo?: string, name = 'teo'): Teo {
  const last = store.calendar.length - 1
  if (teo === undefined) return { t: last, teo: store.date(last), requested: null }
  const day = parseIsoDay(teo)
  const range = `${store.date(0)} to ${store.date(last)}`
  if (day === null)
    throw new AppError('INVALID_INPUT', `${name} ${JSON.stringify(teo)} is not a YYYY-MM-DD date`)
  if (day < store.calendar[0] || day > store.calendar[last]) {
    throw new AppError(
      'DATE_NOT_AVAILABLE',
      `${name} ${teo} is outside the model store: trading days run ${range}`,
    )
  }
  // Last calendar index whose day is ≤ the date asked.
  let lo = 0
  let hi = last
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1
    if (store.calendar[mid] <= day) lo = mid
    else hi = mid - 1
  }
  const resolved = store.date(lo)
  return { t: lo, teo: resolved, requested: resolved === teo ? null : teo }
}

const tickerWindows = new WeakMap<ModelStore, { ticker: string; from: number; to: number }[][]>()

/** Each symbol's ticker windows as day numbers, parsed once per store. */
function windowsOf(store: ModelStore): { ticker: string; from: number; to: number }[][] {
  let w = tickerWindows.get(store)
  if (!w) {
    w = store.symbols.map((s) =>
      s.tickers.map((x) => ({
        ticker: x.ticker,
        from: parseIsoDay(x.from) ?? Number.NEGATIVE_INFINITY,
        to: x.to === null ? Number.POSITIVE_INFINITY : (parseIsoDay(x.to) ?? Number.POSITIVE_INFINITY),
      })),
    )
    tickerWindows.set(store, w)
  }
  return w
}

/** The ticker a symbol traded under on `day` (its latest one when none covers the day). */
export function tickerAt(store: ModelStore, i: number, day: number): string {
  const windows = windowsOf(store)[i]
  for (const w of windows) if (day >= w.from && day <= w.to) return w.ticker
  return windows[windows.length - 1]?.ticker ?? store.symbols[i].symbol
}

/** `teo_requested` and `teo_note` when the date asked was not a trading day. */
export const teoNote = (x: Teo) =>
  x.requested === null
    ? {}
    : { teo_requested: x.requested, teo_note: `${x.requested} is not a trading day; served ${x.teo}` }

/** `_agent.confidence` of a one-day cross-section: coverage, and freshness 0.9 before data_as_of. */
export const dayConfidence = (store: ModelStore, x: Teo, coverage: number) => ({
  overall: Math.min(coverage, 1) * (x.teo === store.dataAsOf ? 1 : 0.9),
  factors: { coverage: Math.min(coverage, 1), freshness: x.teo === store.dataAsOf ? 1 : 0.9 },
})
