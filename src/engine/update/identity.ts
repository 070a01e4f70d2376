/**
 * The identity registry (`securities.csv` of the data directory): which permanent symbol key each
 * ticker belongs to, one row per ticker window. A symbol is the first ticker its security was
 * seen under and is never reused: a later, different company on the same ticker gets the key
 * `TICKER_YYYYMMDD` (its first listing day; the convention docs/data-format.md gives for ticker
 * reuse). A rename opens a new window of the same symbol, so its bars continue in one file.
 */
import { join } from 'node:path'
import { csvDocument } from '../../platform/csv.ts'
import { isoFromDay, parseIsoDay } from '../../platform/dates.ts'
import { InputError } from '../../platform/errors.ts'
import { canonicalTicker, isValidTicker } from '../data/aliases.ts'
import type { Listing, TickerChange } from '../sources/types.ts'
import { parseCsvTable } from './csv-table.ts'
import { DATA_DIR_FILES, readOptional, writeFileAtomically } from './data-dir.ts'

export interface IdentityRow {
  symbol: string
  ticker: string
  name: string
  assetType: 'stock' | 'etf'
  /** The listing exchange as the source names it ('' when unknown). */
  exchange: string
  cik: number | null
  permanentId: string | null
  /** Inclusive ISO dates; validTo null = still valid. */
  validFrom: string
  validTo: string | null
}

/** What reconciling the registry with a listing did, for the fetch summary and update findings. */
export interface IdentityEvent {
  kind: 'new' | 'rename' | 'reuse' | 'delisted'
  symbol: string
  ticker: string
  /** Renames: the previous ticker. */
  from?: string
  date: string
}

const IDENTITY_HEADER = [
  'symbol',
  'ticker',
  'name',
  'asset_type',
  'exchange',
  'cik',
  'permanent_id',
  'valid_from',
  'valid_to',
] as const

export function identityCsv(rows: readonly IdentityRow[]): string {
  const sorted = [...rows].sort(
    (a, b) => a.symbol.localeCompare(b.symbol) || a.validFrom.localeCompare(b.validFrom),
  )
  return csvDocument(
    IDENTITY_HEADER,
    sorted.map((r) => [
      r.symbol,
      r.ticker,
      r.name,
      r.assetType,
      r.exchange,
      r.cik,
      r.permanentId,
      r.validFrom,
      r.validTo,
    ]),
  )
}

export function parseIdentityCsv(text: string, file: string): IdentityRow[] {
  return parseCsvTable(text, file, IDENTITY_HEADER).map(({ cells: c, line }) => {
    const bad = (column: string, why: string) => new InputError({ file, line, column }, why)
    if (!isValidTicker(c.ticker) || canonicalTicker(c.ticker) !== c.ticker)
      throw bad('ticker', `"${c.ticker}" is not a canonical ticker`)
    if (c.symbol === '') throw bad('symbol', 'missing symbol')
    if (c.asset_type !== 'stock' && c.asset_type !== 'etf')
      throw bad('asset_type', `expected stock or etf, got "${c.asset_type}"`)
    const cik = c.cik === '' ? null : Number(c.cik)
    if (cik !== null && !(Number.isInteger(cik) && cik > 0)) throw bad('cik', `"${c.cik}" is not a CIK`)
    if (parseIsoDay(c.valid_from) === null) throw bad('valid_from', `"${c.valid_from}" is not a date`)
    if (c.valid_to !== '' && parseIsoDay(c.valid_to) === null)
      throw bad('valid_to', `"${c.valid_to}" is not a date`)
    return {
      symbol: c.symbol,
      ticker: c.ticker,
      name: c.name,
      assetType: c.asset_type,
      exchange: c.exchange,
      cik,
      permanentId: c.permanent_id === '' ? null : c.permanent_id,
      validFrom: c.valid_from,
      validTo: c.valid_to === '' ? null : c.valid_to,
    }
  })
}

export async function readIdentity(dataDir: string): Promise<IdentityRow[]> {
  const file = join(dataDir, DATA_DIR_FILES.securities)
  const text = await readOptional(file)
  return text === null ? [] : parseIdentityCsv(text, file)
}

export async function writeIdentity(dataDir: string, rows: readonly IdentityRow[]): Promise<void> {
  await writeFileAtomically(join(dataDir, DATA_DIR_FILES.securities), identityCsv(rows))
}

const dayBefore = (iso: string) => isoFromDay((parseIsoDay(iso) ?? 0) - 1)
const dayAfter = (iso: string) => isoFromDay((parseIsoDay(iso) ?? 0) + 1)
const daysBetween = (a: string, b: string) => (parseIsoDay(b) ?? 0) - (parseIsoDay(a) ?? 0)

/** A CIK-only rename needs the new ticker to start within this many days of the old one's end. */
const RENAME_GAP_DAYS = 31

/** The most recent window of each symbol. */
export function latestWindows(rows: readonly IdentityRow[]): Map<string, IdentityRow> {
  const out = new Map<string, IdentityRow>()
  for (const r of rows) {
    const known = out.get(r.symbol)
    if (!known || r.validFrom > known.validFrom) out.set(r.symbol, r)
  }
  return out
}

/** The symbol a ticker means on `date` (the latest holder that started by then), or null. */
export function symbolOfTicker(rows: readonly IdentityRow[], ticker: string, date: string): string | null {
  const held = rows
    .filter((r) => r.ticker === ticker && r.validFrom <= date)
    .sort((a, b) => a.validFrom.localeCompare(b.validFrom))
  return held.length > 0 ? held[held.length - 1].symbol : null
}

/** Two records are one security unless a permanent id (or, lacking one, a CIK) tells them apart. */
function sameSecurity(r: IdentityRow, l: Listing): boolean {
  if (r.permanentId !== null && l.permanentId !== null) return r.permanentId === l.permanentId
  if (r.cik !== null && l.cik !== null) return r.cik === l.cik
  return true
}

class Registry {
  readonly rows: IdentityRow[]
  readonly events: IdentityEvent[] = []
  constructor(
    rows: readonly IdentityRow[],
    private readonly today: string,
  ) {
    this.rows = rows.map((r) => ({ ...r }))
  }

  latestOfTicker(ticker: string): IdentityRow | undefined {
    let best: IdentityRow | undefined
    for (const r of this.rows) if (r.ticker === ticker && (!best || r.validFrom > best.validFrom)) best = r
    return best
  }

  /**
   * Ends `old` the day before the new window (unless it ended already) and opens `ticker` on the
   * same symbol. A vendor that files the whole history under the new ticker gives a first date
   * before the old window's start: the new window then starts after the old one's end (or today).
   */
  rename(old: IdentityRow, ticker: string, firstDate: string, patch: Partial<IdentityRow>): void {
    let from = firstDate
    if (from <= old.validFrom) from = old.validTo === null ? this.today : dayAfter(old.validTo)
    if (old.validTo === null || old.validTo >= from) old.validTo = dayBefore(from)
    this.rows.push({ ...old, ...patch, ticker, validFrom: from, validTo: null })
    this.events.push({ kind: 'rename', symbol: old.symbol, ticker, from: old.ticker, date: from })
  }

  change(c: TickerChange): void {
    const from = canonicalTicker(c.from)
    const to = canonicalTicker(c.to)
    const old = this.latestOfTicker(from)
    if (!old) return
    const latest = latestWindows(this.rows).get(old.symbol)
    if (latest !== old) return // already carried on (a re-run sees the same change again)
    const holder = this.latestOfTicker(to)
    if (holder && holder.validTo === null && holder.symbol !== old.symbol) return
    this.rename(old, to, c.date, {})
  }

  listing(l: Listing, live: ReadonlyMap<number, Listing[]>, active: ReadonlySet<string>): void {
    const from = l.firstDate ?? this.today
    const cur = this.latestOfTicker(l.ticker)
    if (cur && sameSecurity(cur, l)) {
      this.refresh(cur, l)
      return
    }
    const assetType = l.assetType === 'etf' ? 'etf' : 'stock'
    const fields = {
      name: l.name,
      assetType,
      exchange: l.exchange,
      cik: l.cik,
      permanentId: l.permanentId,
    } as const
    if (cur) {
      if (cur.validTo === null || cur.validTo >= from) cur.validTo = dayBefore(from)
      const symbol = this.freeSymbol(`${l.ticker}_${from.replaceAll('-', '')}`)
      this.rows.push({
        symbol,
        ticker: l.ticker,
        ...fields,
        validFrom: from,
        validTo: l.active ? null : l.lastDate,
      })
      this.events.push({ kind: 'reuse', symbol, ticker: l.ticker, date: from })
      return
    }
    const old = this.renameSource(l, live, active)
    if (old) {
      this.rename(old, l.ticker, from, { ...fields, validTo: null })
      return
    }
    const symbol = this.freeSymbol(l.ticker)
    this.rows.push({
      symbol,
      ticker: l.ticker,
      ...fields,
      validFrom: from,
      validTo: l.active ? null : l.lastDate,
    })
    this.events.push({ kind: 'new', symbol, ticker: l.ticker, date: from })
  }

  /** Fills what the registry lacks and records a delisting. */
  private refresh(cur: IdentityRow, l: Listing): void {
    cur.cik ??= l.cik
    cur.permanentId ??= l.permanentId
    if (cur.exchange === '') cur.exchange = l.exchange
    if (!l.active && l.lastDate !== null && cur.validTo === null) {
      cur.validTo = l.lastDate
      this.events.push({ kind: 'delisted', symbol: cur.symbol, ticker: cur.ticker, date: l.lastDate })
    }
  }

  /**
   * The security a new ticker continues: the one with the same permanent id, or else the one
   * ticker of the same CIK that stopped trading, when no other live ticker of that CIK exists
   * (GOOG and GOOGL share a CIK: a second class is a new security, not a rename).
   */
  private renameSource(l: Listing, live: ReadonlyMap<number, Listing[]>, active: ReadonlySet<string>) {
    const latest = [...latestWindows(this.rows).values()].filter((r) => !active.has(r.ticker))
    if (l.permanentId !== null) {
      const hit = latest.find((r) => r.permanentId === l.permanentId)
      if (hit) return hit
    }
    if (l.cik === null) return undefined
    if ((live.get(l.cik) ?? []).some((o) => o.ticker !== l.ticker)) return undefined
    const from = l.firstDate ?? this.today
    const stopped = latest.filter(
      (r) =>
        r.cik === l.cik &&
        (l.permanentId === null || r.permanentId === null) &&
        (r.validTo === null || (r.validTo < from && daysBetween(r.validTo, from) <= RENAME_GAP_DAYS)),
    )
    return stopped.length === 1 ? stopped[0] : undefined
  }

  private freeSymbol(wanted: string): string {
    const used = new Set(this.rows.map((r) => r.symbol))
    let s = wanted
    for (let n = 2; used.has(s); n++) s = `${wanted}_${n}`
    return s
  }
}

/**
 * The registry brought up to date with a listing and the source's ticker changes: explicit
 * changes first (oldest first), then each listed security (oldest first) is matched to its
 * symbol, renamed onto one, or given a new one. Pure: returns new rows and what happened.
 */
export function reconcileIdentity(
  rows: readonly IdentityRow[],
  listings: readonly Listing[],
  changes: readonly TickerChange[],
  today: string,
): { rows: IdentityRow[]; events: IdentityEvent[] } {
  const reg = new Registry(rows, today)
  for (const c of [...changes].sort((a, b) => a.date.localeCompare(b.date))) reg.change(c)
  const norm = listings.map((l) => ({ ...l, ticker: canonicalTicker(l.ticker) }))
  const activeTickers = new Set(norm.filter((l) => l.active).map((l) => l.ticker))
  const live = new Map<number, Listing[]>()
  for (const l of norm) if (l.active && l.cik !== null) live.set(l.cik, [...(live.get(l.cik) ?? []), l])
  const order = [...norm].sort(
    (a, b) => (a.firstDate ?? today).localeCompare(b.firstDate ?? today) || a.ticker.localeCompare(b.ticker),
  )
  for (const l of order) reg.listing(l, live, activeTickers)
  return { rows: reg.rows, events: reg.events }
}
