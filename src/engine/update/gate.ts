/**
 * The quality gate: checks one new trading day's bars before anything is written
 * (docs/data-sources.md §"Quality gate"). The rule, one line: a problem of the whole market
 * (no bars at all on a session, the market ETF missing, the stock universe shrinking past the
 * bound) always quarantines the day; a problem of one security (missing, stale, non-positive,
 * a large move without a corporate action, a duplicate or off-calendar bar) drops that security's
 * bar for the day under policy `drop` (the default) and quarantines the whole day under policy
 * `quarantine`. Every problem is a finding: nothing is dropped silently.
 */
import type { CorporateAction, DailyBar } from '../sources/types.ts'
import type { QualityPolicy, UpdateFinding } from './types.ts'

export interface GateSettings {
  policy: QualityPolicy
  /** Largest |log return| accepted without a split or dividend that day. */
  maxLogMove: number
  /** Largest fraction of the stock universe that may go unpriced from one session to the next. */
  maxShrink: number
}

export const DEFAULT_GATE: GateSettings = { policy: 'drop', maxLogMove: 0.5, maxShrink: 0.05 }

/** A security the data directory holds, as the gate sees it on one day. */
export interface GateSecurity {
  symbol: string
  ticker: string
  isStock: boolean
  /** Its last bar before the day (stored, or accepted on an earlier new day). */
  previous: DailyBar | null
  /** It had a bar on the previous session and is still listed: a missing bar is a finding. */
  expected: boolean
}

export interface GateDay {
  day: string
  /** Bars the vendor sent dated `day`, by symbol (two or more: a duplicate date). */
  bars: ReadonlyMap<string, readonly DailyBar[]>
  /** Bars the vendor sent for days the exchange was closed. */
  offCalendar: readonly { symbol: string; date: string }[]
  /** Corporate actions with ex-date `day`, by symbol (from an actions source). */
  actions: ReadonlyMap<string, readonly CorporateAction[]>
}

export interface GateResult {
  /** The bars that pass, by symbol (empty when the day is quarantined). */
  accepted: Map<string, DailyBar>
  findings: UpdateFinding[]
  /** Why the day is held back, or null. */
  quarantine: string | null
}

/** A split or dividend on the bar itself or from the actions source. */
export function hasAction(bar: DailyBar, actions: readonly CorporateAction[] | undefined): boolean {
  return bar.splitFactor !== 1 || bar.dividend !== 0 || (actions?.length ?? 0) > 0
}

/** The problem with one security's bar, or null when it passes. */
function barProblem(
  s: GateSecurity,
  bar: DailyBar,
  actions: readonly CorporateAction[] | undefined,
  maxLogMove: number,
): Pick<UpdateFinding, 'kind' | 'detail'> | null {
  if (
    !(bar.close > 0) ||
    !(bar.adjClose > 0) ||
    !Number.isFinite(bar.close) ||
    !Number.isFinite(bar.adjClose)
  )
    return { kind: 'nonpositive', detail: `close ${bar.close}, adjusted close ${bar.adjClose}` }
  const prev = s.previous
  if (!prev) return null
  if (bar.close === prev.close && bar.volume !== null && bar.volume === prev.volume)
    return { kind: 'stale', detail: `close ${bar.close} and volume ${bar.volume} repeat ${prev.date}` }
  if (hasAction(bar, actions)) return null
  const r = Math.log(bar.close / prev.close)
  if (Math.abs(r) > maxLogMove)
    return {
      kind: 'large_move',
      detail: `log return ${r.toFixed(4)} since ${prev.date} (bound ${maxLogMove}) with no split or dividend`,
    }
  return null
}

/** Gates one day. Pure: the caller fetched the bars and writes what is accepted. */
export function gateDay(
  input: GateDay,
  securities: readonly GateSecurity[],
  marketSymbol: string,
  settings: GateSettings,
): GateResult {
  const { day } = input
  if (input.bars.size === 0) {
    const detail = `no bars at all for ${day}, a session`
    return {
      accepted: new Map(),
      findings: [{ kind: 'calendar', date: day, detail, action: 'quarantined' }],
      quarantine: detail,
    }
  }
  const findings: UpdateFinding[] = []
  const perStock = (s: GateSecurity, kind: UpdateFinding['kind'], detail: string) =>
    findings.push({ kind, ticker: s.ticker, symbol: s.symbol, date: day, detail, action: 'dropped' })
  const accepted = new Map<string, DailyBar>()
  const bySymbol = new Map(securities.map((s) => [s.symbol, s]))
  for (const off of input.offCalendar) {
    const s = bySymbol.get(off.symbol)
    if (s) perStock(s, 'calendar', `a bar dated ${off.date}, when the exchange was closed`)
  }
  for (const s of securities) {
    const bars = input.bars.get(s.symbol) ?? []
    if (bars.length === 0) {
      if (s.expected) perStock(s, 'missing', `no bar for ${day} (last bar ${s.previous?.date ?? 'none'})`)
      continue
    }
    if (bars.length > 1) {
      const same = bars.every((b) => JSON.stringify(b) === JSON.stringify(bars[0]))
      const detail = `${bars.length} bars dated ${day}${same ? ', identical: one kept' : ', different'}`
      if (!same) {
        perStock(s, 'duplicate_date', detail)
        continue
      }
      findings.push({
        kind: 'duplicate_date',
        ticker: s.ticker,
        symbol: s.symbol,
        date: day,
        detail,
        action: 'kept',
      })
    }
    const problem = barProblem(s, bars[0], input.actions.get(s.symbol), settings.maxLogMove)
    if (problem) perStock(s, problem.kind, problem.detail)
    else accepted.set(s.symbol, bars[0])
  }
  const quarantine = universeProblem(input, securities, accepted, marketSymbol, settings, findings)
  const held = quarantine ?? perStockQuarantine(findings, settings.policy)
  if (held === null) return { accepted, findings, quarantine: null }
  for (const f of findings) if (f.action === 'dropped') f.action = 'quarantined'
  return { accepted: new Map(), findings, quarantine: held }
}

/** Problems of the whole day: each adds a finding and quarantines. */
function universeProblem(
  input: GateDay,
  securities: readonly GateSecurity[],
  accepted: ReadonlyMap<string, DailyBar>,
  marketSymbol: string,
  settings: GateSettings,
  findings: UpdateFinding[],
): string | null {
  const { day } = input
  const add = (kind: UpdateFinding['kind'], detail: string, symbol?: string) => {
    findings.push({
      kind,
      ...(symbol ? { symbol, ticker: symbol } : {}),
      date: day,
      detail,
      action: 'quarantined',
    })
    return detail
  }
  if (!accepted.has(marketSymbol))
    return add('missing', `the market ETF ${marketSymbol} has no usable bar for ${day}`, marketSymbol)
  let before = 0
  let now = 0
  for (const s of securities) {
    if (!s.isStock || !s.expected) continue
    before++
    if (accepted.has(s.symbol)) now++
  }
  if (before > 0 && (before - now) / before > settings.maxShrink)
    return add(
      'universe_shrank',
      `${now} of the ${before} stocks priced on the previous session have a usable bar for ${day} ` +
        `(more than ${settings.maxShrink * 100} % missing)`,
    )
  return null
}

function perStockQuarantine(findings: readonly UpdateFinding[], policy: QualityPolicy): string | null {
  if (policy !== 'quarantine') return null
  const n = findings.filter((f) => f.action === 'dropped').length
  return n === 0 ? null : `policy quarantine: ${n} security bar(s) failed the checks`
}
