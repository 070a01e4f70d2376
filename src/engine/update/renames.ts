/**
 * Ticker changes found by the daily update. A listed security with no bar on a new session is
 * either missing (the quality gate reports it) or renamed: the sources' ticker changes (Polygon's
 * ticker events) or, lacking those, their listings (a new ticker of the same permanent id or CIK;
 * the SEC's list gives CIKs) decide. A rename opens a new ticker window of the same symbol
 * (identity.ts) and the new ticker's bar continues the symbol's history.
 */
import type { DailyBar, Listing, Source, TickerChange } from '../sources/types.ts'
import { type IdentityRow, latestWindows, readIdentity, reconcileIdentity } from './identity.ts'
import type { FetchedDays } from './new-bars.ts'
import { listedOn, type UpdateSecurity } from './stored.ts'
import type { UpdateFinding } from './types.ts'

export interface Renames {
  /** The registry to write once the day passes the gate (null: no rename). */
  rows: IdentityRow[] | null
  findings: UpdateFinding[]
  calls: number
}

/** Securities listed on the first new day that have no bar on any of the new days. */
function missingOn(universe: readonly UpdateSecurity[], days: readonly string[], f: FetchedDays) {
  return universe.filter(
    (s) => listedOn(s, days[0]) && days.every((d) => !(f.bars.get(d)?.has(s.symbol) ?? false)),
  )
}

/** The listings that could continue one of the missing securities (same permanent id or CIK). */
function candidates(
  listings: readonly Listing[],
  missing: readonly IdentityRow[],
  known: ReadonlySet<string>,
) {
  const ids = new Set(missing.map((r) => r.permanentId).filter((x) => x !== null))
  const ciks = new Set(missing.map((r) => r.cik).filter((x) => x !== null))
  return listings.filter(
    (l) =>
      l.active &&
      !known.has(l.ticker) &&
      ((l.permanentId !== null && ids.has(l.permanentId)) || (l.cik !== null && ciks.has(l.cik))),
  )
}

/**
 * Looks for renames among the securities the new days left without a bar, and moves the new
 * tickers' bars onto their symbols in `fetched` (bulk bars already fetched, else one history call
 * per renamed security). `universe` entries of renamed symbols take the new ticker.
 */
export async function findRenames(
  dataDir: string,
  universe: UpdateSecurity[],
  days: readonly string[],
  fetched: FetchedDays,
  sources: readonly Source[],
  signal?: AbortSignal,
): Promise<Renames> {
  const out: Renames = { rows: null, findings: [], calls: 0 }
  const missing = missingOn(universe, days, fetched)
  if (missing.length === 0) return out
  const rows = await readIdentity(dataDir)
  const latest = latestWindows(rows)
  const missingRows = missing.map((s) => latest.get(s.symbol)).filter((r) => r !== undefined)
  const first = days[0]
  const last = days[days.length - 1]
  const changes: TickerChange[] = []
  let listings: Listing[] = []
  const withChanges = sources.find((s) => s.securities?.changes)
  if (withChanges?.securities?.changes) {
    const ids = missingRows.map((r) => r.permanentId ?? r.ticker)
    out.calls += ids.length
    changes.push(...(await withChanges.securities.changes(first, last, { candidates: ids, signal })))
  } else {
    const lister = sources.find((s) => s.securities)
    if (lister?.securities) {
      out.calls++
      const known = new Set(universe.map((s) => s.ticker))
      listings = candidates(await lister.securities.list({ signal }), missingRows, known)
      listings = listings.map((l) => ({
        ...l,
        firstDate: l.firstDate && l.firstDate >= first ? l.firstDate : first,
      }))
    }
  }
  if (changes.length === 0 && listings.length === 0) return out
  const { rows: next, events } = reconcileIdentity(rows, listings, changes, last)
  const renamed = events.filter((e) => e.kind === 'rename' && e.date >= first && e.date <= last)
  if (renamed.length === 0) return out
  out.rows = next
  const prices = sources.find((s) => s.prices)?.prices
  for (const e of renamed) {
    const s = universe.find((u) => u.symbol === e.symbol)
    if (!s) continue
    s.ticker = e.ticker
    s.validTo = null
    const bars: DailyBar[] = []
    for (const d of days) {
      const bar = fetched.unmatched.get(d)?.get(e.ticker)
      if (bar) bars.push(bar)
    }
    if (bars.length === 0 && prices && !fetched.unmatched.size) {
      out.calls++
      bars.push(...(await prices.history(e.ticker, first, last, { signal })))
    }
    for (const bar of bars) {
      const day = fetched.bars.get(bar.date)
      if (day) day.set(e.symbol, [...(day.get(e.symbol) ?? []), bar])
    }
    out.findings.push({
      kind: 'rename',
      symbol: e.symbol,
      ticker: e.ticker,
      date: e.date,
      detail: `${e.from} is now ${e.ticker} (since ${e.date}); its history continues under the symbol ${e.symbol}`,
      action: 'info',
    })
  }
  return out
}
