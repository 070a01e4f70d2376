/**
 * The total-return adjusted close of a vendor that gives unadjusted closes and its corporate
 * actions apart (Polygon). Backward adjustment, the convention of CRSP and of Tiingo's own
 * `adjClose`: the latest day keeps its close and every earlier day is scaled by the product of
 * the factors of the actions that go ex after it,
 *
 *   adjClose[i] = close[i] · Π_{actions a with exDate(a) > date[i]} f(a)
 *   f(split of ratio r)            = 1 / r
 *   f(cash dividend D on day k)    = 1 − D / close[k − 1]   (close[k − 1]: the last close before the ex-date)
 *
 * so adjClose[k] / adjClose[k − 1] = close[k] / (close[k − 1] − D) across a dividend and
 * r · close[k] / close[k − 1] across a split. An action dated before the first bar, or on it
 * (no earlier close), changes nothing in the window. Actions whose ex-date is not a trading day
 * apply from the next bar on; that bar also carries them in `splitFactor` and `dividend`.
 */
import type { CorporateAction, DailyBar } from './types.ts'

/** `bars` oldest first, with `close` unadjusted; returns new bars with adjClose, splitFactor, dividend set. */
export function totalReturnAdjust(
  bars: readonly DailyBar[],
  actions: readonly CorporateAction[],
): DailyBar[] {
  const out = bars.map((b) => ({ ...b, adjClose: b.close, splitFactor: 1, dividend: 0 }))
  /** factor[k]: the product of the factors of the actions applying from bar k on. */
  const factor = new Float64Array(out.length).fill(1)
  for (const a of actions) {
    const k = out.findIndex((b) => b.date >= a.date)
    if (k < 0) continue
    const bar = out[k] as DailyBar
    if (a.kind === 'split') bar.splitFactor *= a.value
    else bar.dividend += a.value
    if (k === 0) continue
    const before = (out[k - 1] as DailyBar).close
    factor[k] *= a.kind === 'split' ? 1 / a.value : 1 - a.value / before
  }
  let cumulative = 1
  for (let i = out.length - 1; i >= 0; i--) {
    const bar = out[i] as DailyBar
    bar.adjClose = bar.close * cumulative
    cumulative *= factor[i] as number
  }
  return out
}
