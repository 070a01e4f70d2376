/**
 * Appending new days to a security's stored bars, and the corporate-action reconciliation
 * (docs/data-sources.md §"Corporate actions").
 *
 * The stored adjusted close keeps its own scale for ever: a new day is appended as
 * `stored_last × ratio`, where the ratio is the day's total return. Vendors rescale their whole
 * adjusted history at every split or dividend (their latest adjusted close equals the close);
 * copying that rescaling would change every stored price of the stock, and with ~3,000 stocks a
 * dividend goes ex somewhere every trading day, so the dataset's history would change daily and
 * the build would fall back to a full rebuild every day. Only a real restatement (the vendor's
 * history differs from the stored one by more than a constant factor) replaces the history.
 */
import type { CallOptions, CorporateAction, DailyBar, PriceCapability } from '../sources/types.ts'
import type { UpdateFinding } from './types.ts'

/** Default relative tolerance of "the same history up to a constant factor". */
export const DEFAULT_RESTATE_TOLERANCE = 1e-6

/**
 * A day with no corporate action (a bulk bar carries adjClose = close): its total return is the
 * close-to-close return, appended onto the stored scale.
 */
export function appendByClose(last: DailyBar, bar: DailyBar): DailyBar {
  return { ...bar, adjClose: (last.adjClose * bar.close) / last.close }
}

/**
 * Null when `vendor` equals `stored` times one constant over their overlap (relative tolerance
 * `tol`), else why not. The overlap is the stored days: the vendor must have each of them.
 */
export function scaleMismatch(
  stored: readonly DailyBar[],
  vendor: readonly DailyBar[],
  tol: number,
): string | null {
  if (stored.length === 0) return null
  const byDate = new Map(vendor.map((b) => [b.date, b.adjClose]))
  const k = (byDate.get(stored[0].date) ?? Number.NaN) / stored[0].adjClose
  if (!(k > 0)) return `the vendor's history has no bar for ${stored[0].date}`
  for (const s of stored) {
    const v = byDate.get(s.date)
    if (v === undefined) return `the vendor's history has no bar for ${s.date}`
    const rel = Math.abs(v / (k * s.adjClose) - 1)
    if (!(rel <= tol))
      return `adjusted close of ${s.date} is ${v}, ${rel.toExponential(2)} away from the stored value × ${k.toPrecision(8)}`
  }
  const lastStored = stored[stored.length - 1].date
  const extra = vendor.find((b) => b.date <= lastStored && !stored.some((s) => s.date === b.date))
  return extra ? `the vendor's history has a bar for ${extra.date} the stored one lacks` : null
}

export interface Reconciled {
  /** The security's whole new bar history. */
  bars: DailyBar[]
  findings: UpdateFinding[]
}

/**
 * A security with a split or dividend on one of the new days: its adjusted history is downloaded
 * again. Kept (new days appended with the vendor's adjusted returns) when it is the stored one up
 * to a constant; replaced by the vendor's (a `restated` finding) when not. `accepted` are the
 * gate's bars for the new days, oldest first; a day the vendor's history lacks is dropped.
 */
export async function reconcileSecurity(
  sec: { symbol: string; ticker: string },
  stored: readonly DailyBar[],
  accepted: readonly DailyBar[],
  actions: readonly CorporateAction[],
  prices: PriceCapability,
  tol: number,
  o: CallOptions = {},
): Promise<Reconciled> {
  const last = accepted[accepted.length - 1].date
  const from = stored.length > 0 ? stored[0].date : accepted[0].date
  const vendor = await prices.history(sec.ticker, from, last, o)
  const vendorBy = new Map(vendor.map((b) => [b.date, b]))
  const note = (kind: UpdateFinding['kind'], date: string, detail: string, action: UpdateFinding['action']) =>
    ({ kind, ticker: sec.ticker, symbol: sec.symbol, date, detail, action }) satisfies UpdateFinding
  const findings: UpdateFinding[] = accepted
    .filter((b) => b.splitFactor !== 1 || b.dividend !== 0)
    .map((b) => note('corporate_action', b.date, actionText(b), 'info'))
  for (const a of actions)
    if (!findings.some((f) => f.date === a.date))
      findings.push(
        note('corporate_action', a.date, `${a.kind} ${a.value}: adjusted history downloaded again`, 'info'),
      )
  const mismatch = scaleMismatch(stored, vendor, tol)
  if (mismatch !== null) {
    const keep = new Set(accepted.map((b) => b.date))
    const lastStored = stored.length > 0 ? stored[stored.length - 1].date : ''
    const bars = vendor.filter((b) => b.date <= lastStored || keep.has(b.date))
    findings.push(note('restated', last, `history replaced by the vendor's: ${mismatch}`, 'kept'))
    return { bars, findings }
  }
  const bars = [...stored]
  for (const bar of accepted) {
    const v = vendorBy.get(bar.date)
    const prev = bars[bars.length - 1]
    const vPrev = prev ? vendorBy.get(prev.date) : undefined
    if (!v || !prev || !vPrev) {
      if (!prev) bars.push(v ?? bar)
      else
        findings.push(
          note('missing', bar.date, "the vendor's adjusted history has no bar for the day", 'dropped'),
        )
      continue
    }
    bars.push({ ...bar, adjClose: (prev.adjClose * v.adjClose) / vPrev.adjClose })
  }
  return { bars, findings }
}

function actionText(b: DailyBar): string {
  const parts: string[] = []
  if (b.splitFactor !== 1) parts.push(`split ${b.splitFactor}:1`)
  if (b.dividend !== 0) parts.push(`dividend ${b.dividend}`)
  return `${parts.join(', ')}: adjusted history downloaded again`
}
