/**
 * Cross-sectional inputs of an incremental build computed over the tail of the history only.
 * Each kernel runs on views that start late enough to skip the old history and early enough that
 * every day from `start` on comes out bit-identical to a run over the whole history; the results
 * are then placed at their calendar index in full-length columns. Days before `start` are left
 * unspecified: the incremental writers take them from the previous build, and nothing reads them.
 */

import { type Ctor, columnsOf } from '../model/columns.ts'
import {
  computeUniverses,
  DOLLAR_VOLUME_DAYS,
  maskDates,
  monthEnds,
  REVERSION_DEFAULTS,
  residualReversion,
  type Universes,
} from '../model/cross/index.ts'
import type { Panel } from '../model/panel.ts'
import type { BuildInputs } from './inputs.ts'

/** Full-length columns holding `tail` (days [from, days)) at their calendar index (columnsOf's firstDay). */
function embed<C extends Float64Array | Int16Array | Uint8Array>(
  ctor: Ctor<C>,
  tail: C[],
  from: number,
  days: number,
): C[] {
  const out = columnsOf(ctor, tail.length, days, false, from)
  for (const [j, c] of tail.entries()) out[j].set(c, from)
  return out
}

/**
 * Universes valid from day `start` on. A day's mask comes from the last month-end before it,
 * ranked on data of that day (and DOLLAR_VOLUME_DAYS before it for dollar volume), so the run
 * starts that far before the last month-end preceding `start`.
 */
export function universesFrom(x: BuildInputs, start: number): Universes {
  const input = {
    calendar: x.calendar,
    isStock: x.isStock,
    close: x.close,
    returns: x.returns,
    marketCap: x.marketCap,
    volume: x.volume,
  }
  const ends = monthEnds(x.calendar)
  let before = -1
  for (const e of ends) if (e < start) before = e
  const from = before < 0 ? 0 : Math.max(0, before - (DOLLAR_VOLUME_DAYS - 1))
  if (from === 0) return computeUniverses(input)
  const cut = (p: Panel) => p.map((c) => c.subarray(from))
  const u = computeUniverses({
    ...input,
    calendar: x.calendar.subarray(from),
    close: cut(x.close),
    returns: cut(x.returns),
    marketCap: cut(x.marketCap),
    volume: x.volume ? cut(x.volume) : null,
  })
  const T = x.calendar.length
  return {
    mcRank: embed(Int16Array, u.mcRank, from, T),
    dvRank: embed(Int16Array, u.dvRank, from, T),
    valid: embed(Uint8Array, u.valid, from, T),
    maskAsOf: maskDates(x.calendar, ends),
  }
}

/**
 * Residual reversion z valid from day `start` on. The kernel rebuilds its window state exactly
 * on every day t % longDays == 0, so a run that starts on such a day is exact from its next
 * scheduled day on: the run starts one window before the last scheduled day at or before start.
 */
export function reversionFrom(l3Rr: Panel, start: number): Panel {
  const L = REVERSION_DEFAULTS.longDays
  const from = Math.floor(start / L) * L - L
  if (from <= 0) return residualReversion(l3Rr)
  const T = l3Rr[0]?.length ?? 0
  return embed(Float64Array, residualReversion(l3Rr.map((c) => c.subarray(from))), from, T)
}
