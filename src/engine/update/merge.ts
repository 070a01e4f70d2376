/**
 * From fetched bars to the new stored histories: the gate day by day (each day's previous bar is
 * the one accepted the day before), then appending or reconciling each security.
 */
import type { CorporateAction, DailyBar, PriceCapability } from '../sources/types.ts'
import { previousSession } from './days.ts'
import { type GateSecurity, type GateSettings, gateDay, hasAction } from './gate.ts'
import type { FetchedDays } from './new-bars.ts'
import { appendByClose, reconcileSecurity } from './reconcile.ts'
import { listedOn, marketSymbol, type UpdateSecurity } from './stored.ts'
import type { UpdateFinding } from './types.ts'

export interface GatedDays {
  /** symbol → its accepted bars of the new days, oldest first. */
  accepted: Map<string, DailyBar[]>
  findings: UpdateFinding[]
  /** Why the run is held back (the first quarantined day's reason), or null. */
  quarantine: string | null
}

export function gateNewDays(
  universe: readonly UpdateSecurity[],
  days: readonly string[],
  fetched: FetchedDays,
  settings: GateSettings,
): GatedDays {
  const previous = new Map(universe.map((s) => [s.symbol, s.bars[s.bars.length - 1] ?? null]))
  const accepted = new Map<string, DailyBar[]>()
  const findings: UpdateFinding[] = []
  const market = marketSymbol(universe)
  for (const [i, day] of days.entries()) {
    const prevSession = previousSession(day)
    const securities: GateSecurity[] = universe
      .filter((s) => listedOn(s, day))
      .map((s) => {
        const prev = previous.get(s.symbol) ?? null
        return {
          symbol: s.symbol,
          ticker: s.ticker,
          isStock: s.isStock,
          previous: prev,
          expected: prev?.date === prevSession,
        }
      })
    const r = gateDay(
      {
        day,
        bars: fetched.bars.get(day) ?? new Map(),
        offCalendar: fetched.offCalendar.filter(
          (o) => (i === 0 || o.date > days[i - 1]) && (o.date < day || i === days.length - 1),
        ),
        actions: fetched.actions.get(day) ?? new Map(),
      },
      securities,
      market,
      settings,
    )
    findings.push(...r.findings)
    if (r.quarantine !== null) return { accepted: new Map(), findings, quarantine: `${day}: ${r.quarantine}` }
    for (const [symbol, bar] of r.accepted) {
      accepted.set(symbol, [...(accepted.get(symbol) ?? []), bar])
      previous.set(symbol, bar)
    }
  }
  return { accepted, findings, quarantine: null }
}

export interface MergedBars {
  /**
   * symbol → its new history (only securities that changed): the security's stored bars (its
   * `bars` once merged: whole after a reconcile, else maybe a tail) followed by the new ones, or
   * a restated whole history.
   */
  bars: Map<string, DailyBar[]>
  findings: UpdateFinding[]
  calls: number
}

export async function mergeNewBars(
  universe: readonly UpdateSecurity[],
  accepted: ReadonlyMap<string, readonly DailyBar[]>,
  actionsByDay: ReadonlyMap<string, ReadonlyMap<string, readonly CorporateAction[]>>,
  prices: PriceCapability,
  settings: { restateTolerance: number },
  /** A security's whole stored history (the universe may hold only the last bars). */
  whole: (s: UpdateSecurity) => Promise<readonly DailyBar[]>,
  signal?: AbortSignal,
): Promise<MergedBars> {
  const out: MergedBars = { bars: new Map(), findings: [], calls: 0 }
  for (const s of universe) {
    const fresh = accepted.get(s.symbol)
    if (!fresh || fresh.length === 0) continue
    const actions = fresh.flatMap((b) => actionsByDay.get(b.date)?.get(s.symbol) ?? [])
    if (actions.length > 0 || fresh.some((b) => hasAction(b, undefined))) {
      out.calls++
      const r = await reconcileSecurity(
        s,
        await whole(s),
        fresh,
        actions,
        prices,
        settings.restateTolerance,
        {
          signal,
        },
      )
      out.bars.set(s.symbol, r.bars)
      out.findings.push(...r.findings)
      continue
    }
    const bars = [...s.bars]
    for (const bar of fresh) {
      const last = bars[bars.length - 1]
      bars.push(last ? appendByClose(last, bar) : bar)
    }
    out.bars.set(s.symbol, bars)
  }
  return out
}
