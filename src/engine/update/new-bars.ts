/**
 * Fetching the new days' bars: one bulk call per day when the price source has one, else one
 * history call per listed security (from the day after its last stored bar), a few in flight.
 */
import type { ActionCapability, CorporateAction, DailyBar, PriceCapability } from '../sources/types.ts'
import { runBounded } from '../zarr/pool.ts'
import { isSession } from './days.ts'
import { listedOn, type UpdateSecurity } from './stored.ts'

export interface FetchedDays {
  /** day → symbol → the bars dated that day (two or more: the vendor repeated the date). */
  bars: Map<string, Map<string, DailyBar[]>>
  /** Bars dated on days the exchange was closed. */
  offCalendar: { symbol: string; date: string }[]
  /** day → symbol → corporate actions from the actions source. */
  actions: Map<string, Map<string, CorporateAction[]>>
  /** Bulk bars of tickers the universe does not know (a renamed security's new ticker among them). */
  unmatched: Map<string, Map<string, DailyBar>>
  /** Vendor calls made. */
  calls: number
}

const HISTORY_CONCURRENCY = 8

function dayAfter(iso: string): string {
  return new Date(Date.parse(`${iso}T00:00:00Z`) + 86_400_000).toISOString().slice(0, 10)
}

export async function fetchNewDays(
  universe: readonly UpdateSecurity[],
  days: readonly string[],
  prices: PriceCapability,
  actions: ActionCapability | undefined,
  signal?: AbortSignal,
): Promise<FetchedDays> {
  const out: FetchedDays = {
    bars: new Map(days.map((d) => [d, new Map()])),
    offCalendar: [],
    actions: new Map(),
    unmatched: new Map(),
    calls: 0,
  }
  const listed = universe.filter((s) => listedOn(s, days[0]))
  const symbolOf = new Map(listed.map((s) => [s.ticker, s.symbol]))
  const add = (symbol: string, bar: DailyBar) => {
    const day = out.bars.get(bar.date)
    if (day) day.set(symbol, [...(day.get(symbol) ?? []), bar])
    else if (!isSession(bar.date)) out.offCalendar.push({ symbol, date: bar.date })
  }
  const first = days[0]
  const last = days[days.length - 1]
  if (prices.day) {
    for (const d of days) {
      out.calls++
      const m = await prices.day(d, { signal })
      const unmatched = new Map<string, DailyBar>()
      for (const [ticker, bar] of m) {
        const symbol = symbolOf.get(ticker)
        if (symbol) add(symbol, bar)
        else unmatched.set(ticker, bar)
      }
      out.unmatched.set(d, unmatched)
    }
  } else {
    await runBounded(
      listed.length,
      HISTORY_CONCURRENCY,
      () => null,
      async (_, i) => {
        const s = listed[i]
        const stored = s.bars[s.bars.length - 1]?.date
        const from = stored && stored >= first ? dayAfter(stored) : first
        out.calls++
        for (const bar of await prices.history(s.ticker, from, last, { signal })) add(s.symbol, bar)
      },
    )
  }
  if (actions) {
    out.calls++
    for (const a of await actions.between(first, last, { signal })) {
      const symbol = symbolOf.get(a.ticker)
      if (!symbol) continue
      const day = out.actions.get(a.date) ?? new Map<string, CorporateAction[]>()
      day.set(symbol, [...(day.get(symbol) ?? []), a])
      out.actions.set(a.date, day)
    }
  }
  return out
}
