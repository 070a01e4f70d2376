import {
  DEFAULT_ERP_GRID,
  MAX_FUNDAMENTAL_PERIODS,
  MAX_GRID_VALUES,
  RF_TENORS,
} from '../../contract/ops/fundamentals.ts'
import {
  type BetaSource,
  type FundamentalsRow,
  fundamentalsRows,
  NUMERIC_ROW_FIELDS,
  quartersAsOf,
  type RowContext,
  sensitivityGrid,
  type Tenor,
} from '../../engine/data/fundamentals/index.ts'
import { reviveStoredCompany } from '../../engine/data/fundamentals/stored.ts'
import { STORE_FILES } from '../../engine/model-store/layout.ts'
import type { ModelStore } from '../../engine/model-store/reader.ts'
import { isoFromDay, lastIndexAtOrBefore, parseIsoDay } from '../../platform/dates.ts'
import { AppError } from '../../platform/errors.ts'
import type { ModelEnvironment, ModelRegistry } from '../models.ts'
import { rowsTable } from './series.ts'
import { resolveTicker } from './tickers.ts'

/**
 * GET /fundamentals/{ticker} (docs/methodology.md §13, "Fundamentals"). The build parsed the SEC filings into
 * point-in-time quarters (engine/data/fundamentals); this reads the company's digest, picks the quarters
 * visible at as_of and computes the rows with the model's betas and the stored rate curves.
 */

export interface FundamentalsQuery {
  as_of?: string
  periods?: number
  erp?: number
  tax_rate?: number
  rf_tenor?: Tenor
  grid?: boolean
  erp_grid?: string
  rf_tenor_grid?: string
}

interface Options {
  asOf: number
  asOfIso: string | null
  periods: number
  erp: number
  taxRate: number
  rfTenor: Tenor
  grid: boolean
  erpGrid: number[]
  tenorGrid: Tenor[]
}

const bad = (detail: string) => new AppError('INVALID_REQUEST', detail)

/** The options, checked before metering (a bad option is a free 400). */
export function fundamentalsOptions(q: FundamentalsQuery): Options {
  let asOf = Number.POSITIVE_INFINITY
  if (q.as_of !== undefined) {
    const d = parseIsoDay(q.as_of)
    if (d === null) throw bad(`as_of ${JSON.stringify(q.as_of)} is not a date (YYYY-MM-DD)`)
    asOf = d
  }
  const periods = q.periods ?? 8
  if (!Number.isInteger(periods) || periods < 1 || periods > MAX_FUNDAMENTAL_PERIODS)
    throw bad(`periods must be an integer from 1 to ${MAX_FUNDAMENTAL_PERIODS}`)
  const erp = q.erp ?? 0.05
  if (!(erp >= 0 && erp <= 0.5)) throw bad('erp must be a number from 0 to 0.5 (a fraction: 0.05 = 5 %)')
  const taxRate = q.tax_rate ?? 0.21
  if (!(taxRate >= 0 && taxRate <= 1)) throw bad('tax_rate must be a number from 0 to 1 (a fraction)')
  const rfTenor = q.rf_tenor ?? '3m'
  if (!(RF_TENORS as readonly string[]).includes(rfTenor))
    throw bad(`rf_tenor must be one of ${RF_TENORS.join(', ')}`)
  const erpGrid = q.erp_grid === undefined ? [...DEFAULT_ERP_GRID] : erpList(q.erp_grid)
  const tenorGrid = q.rf_tenor_grid === undefined ? [...RF_TENORS] : tenorList(q.rf_tenor_grid)
  return {
    asOf,
    asOfIso: q.as_of ?? null,
    periods,
    erp,
    taxRate,
    rfTenor,
    grid: q.grid === true,
    erpGrid,
    tenorGrid,
  }
}

function items(raw: string, what: string): string[] {
  const xs = raw
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s.length > 0)
  if (xs.length === 0) throw bad(`${what} lists no value`)
  if (xs.length > MAX_GRID_VALUES) throw bad(`${what} lists ${xs.length} values; at most ${MAX_GRID_VALUES}`)
  return xs
}

function erpList(raw: string): number[] {
  return items(raw, 'erp_grid').map((s) => {
    const v = /^[0-9]*\.?[0-9]+(e-?[0-9]+)?$/i.test(s) ? Number(s) : Number.NaN
    if (!(v >= 0 && v <= 0.5)) throw bad(`erp_grid: ${JSON.stringify(s)} is not a number from 0 to 0.5`)
    return v
  })
}

function tenorList(raw: string): Tenor[] {
  const out: Tenor[] = []
  for (const s of items(raw, 'rf_tenor_grid')) {
    const t = s.toLowerCase()
    if (!(RF_TENORS as readonly string[]).includes(t))
      throw bad(`rf_tenor_grid: ${JSON.stringify(s)} is not one of ${RF_TENORS.join(', ')}`)
    if (!out.includes(t as Tenor)) out.push(t as Tenor)
  }
  return out
}

/** The dataset's rate curves as stored by the build. */
interface StoredRates {
  tenors: string[]
  days: number[]
  values: (number | null)[][]
}

/** The rate of `tenor` at its last observation on or before `day`; null when there is none. */
function rateAt(r: StoredRates | null, tenor: Tenor, day: number): number | null {
  const k = r ? r.tenors.indexOf(tenor) : -1
  if (!r || k < 0) return null
  const v = r.values[k]
  let lo = 0
  let hi = r.days.length - 1
  let at = -1
  while (lo <= hi) {
    const mid = (lo + hi) >> 1
    if (r.days[mid] <= day) {
      at = mid
      lo = mid + 1
    } else hi = mid - 1
  }
  for (; at >= 0; at--) {
    const x = v[at]
    if (x !== null && x !== undefined) return x
  }
  return null
}

/** Index of the last calendar day ≤ day (-1 when the calendar starts later). */
function dayAtOrBefore(store: ModelStore, day: number): number {
  return lastIndexAtOrBefore(store.calendar, day)
}

/**
 * Betas per quarter end: the cascade betas at the last trade date ≤ period end (docs/methodology.md
 * §13), with their source; a period ending after a delisted stock's last trade gets none.
 */
export async function betaReader(
  store: ModelStore,
  i: number,
  periodEnds: number[],
): Promise<RowContext['betas']> {
  const life = await store.listedLife(i)
  const T = store.calendar.length
  const delisted = life.last >= 0 && life.last < T - 1
  const tOf = new Map<number, number>()
  for (const p of periodEnds) {
    const t = Math.min(dayAtOrBefore(store, p), life.last)
    if (life.first >= 0 && t >= life.first && !(delisted && p > store.calendar[life.last])) tOf.set(p, t)
  }
  const ts = [...tOf.values()]
  const from = ts.length > 0 ? Math.min(...ts) : 0
  const to = ts.length > 0 ? Math.max(...ts) + 1 : 0
  const h =
    ts.length > 0 ? await store.history(i, ['l1_mkt_beta', 'l2_sec_beta', 'l3_sub_beta'], from, to) : null
  const universe = ts.length > 0 ? await inUniverse(store, i, from, to) : null
  const num = (x: number | undefined) => (x === undefined || Number.isNaN(x) ? null : x)
  return (periodEnd) => {
    const none = { market: null, sector: null, subsector: null }
    if (delisted && periodEnd > store.calendar[life.last]) return { ...none, source: 'post-delisting' }
    const t = tOf.get(periodEnd)
    if (t === undefined || !h || !universe) return { ...none, source: 'none' }
    const k = t - from
    const market = num(h.l1_mkt_beta[k])
    if (market === null) return { ...none, source: 'none' }
    const source: BetaSource = universe[k] ? 'in-universe' : 'out-of-universe'
    return {
      market,
      sector: num(h.l2_sec_beta[k]),
      subsector: num(h.l3_sub_beta[k]),
      source,
    }
  }
}

/** Whether the symbol was in the store's default universe on each day of [from, to). */
async function inUniverse(store: ModelStore, i: number, from: number, to: number): Promise<boolean[]> {
  const u = store.manifest.default_universe
  if (u === 'all_valid') {
    const valid = await store.readColumn('universe/valid', i, from, to)
    return Array.from(valid, (v) => v === 1)
  }
  const [, kind, size] = u.split('_') as [string, string, string]
  const ranks = await store.readColumn(`universe/${kind}_rank`, i, from, to)
  const n = Number(size)
  return Array.from(ranks, (r) => r >= 1 && r <= n)
}

// The response texts are ASCII: one non-ASCII character makes the whole JSON string two-byte and
// doubles its UTF-8 encoding time (docs/performance.md).
const CAVEATS = [
  'Fundamentals come from SEC XBRL company facts as filed; a concept the filer did not tag leaves its field null (never zero).',
  'TTM figures need four consecutive visible quarters with finite values; ratios are null otherwise or on a guard, never clipped.',
  'Equity and assets averages are the mean of the four window quarter ends.',
  'Per-row market_cap is null: the top-level market_cap is a current snapshot, not point in time.',
]

/** GET /fundamentals/{ticker}. */
export async function getFundamentals(
  models: ModelRegistry,
  env: ModelEnvironment,
  rawTicker: string,
  q: FundamentalsQuery,
) {
  const o = fundamentalsOptions(q)
  const store = models.store(env)
  const r = resolveTicker(store, rawTicker)
  const meta = store.symbols[r.index]
  const dataAsOf = parseIsoDay(store.dataAsOf) as number // a loaded store's date is valid ISO
  const asOf = Number.isFinite(o.asOf) ? o.asOf : dataAsOf
  const asOfIso = isoFromDay(asOf)
  const cik = meta?.cik ?? null
  const doc = cik === null ? null : await store.document(STORE_FILES.fundamentals(cik))
  const company = doc === null ? null : reviveStoredCompany(doc)
  const rates = (await store.document(STORE_FILES.rates)) as StoredRates | null
  const visible = company ? quartersAsOf(company, asOf) : []
  const shown = visible.slice(-o.periods)
  const betas = await betaReader(
    store,
    r.index,
    shown.map((v) => v.periodEnd),
  )
  const ctx: RowContext = { betas, rate: (day, tenor) => rateAt(rates, tenor, day) }
  const rows: FundamentalsRow[] = company
    ? fundamentalsRows(visible, ctx, { erp: o.erp, taxRate: o.taxRate, rfTenor: o.rfTenor }, o.periods)
    : []
  const latest = await store.latest(r.index, ['market_cap'])
  const cap = latest.values.market_cap
  const capDay = latest.t >= 0 ? store.date(latest.t) : null
  const disclosures: Record<string, unknown> = {
    as_of: asOfIso,
    periods: o.periods,
    erp: o.erp,
    tax_rate: o.taxRate,
    rf_tenor: o.rfTenor,
    grid: o.grid,
    ...(o.grid ? { erp_grid: o.erpGrid, rf_tenor_grid: o.tenorGrid } : {}),
    cik,
    source: 'SEC XBRL company facts (us-gaap, ifrs-full), parsed by the build into point-in-time quarters',
    visibility:
      'a row is visible when filed_date <= as_of (filed_date from the first filing reporting the quarter, else ' +
      'period end + 45 days: approx); its values are those of the latest filing dated <= as_of',
    betas: 'cascade betas (l1_mkt_beta, l2_sec_beta, l3_sub_beta) at the last trade date <= period end',
    rf: `Treasury ${o.rfTenor} yield at its last observation <= period end${rates ? '' : ' (this dataset has no rates: null)'}`,
    visible_periods: visible.length,
    caveats: CAVEATS,
  }
  if (cik === null)
    disclosures.note = `${r.symbol} has no SEC CIK in this dataset, so there are no fundamentals for it`
  else if (!company) disclosures.note = `no SEC company facts for CIK ${cik} in this dataset`
  else if (visible.length === 0) disclosures.note = `no quarter of CIK ${cik} was filed by ${asOfIso}`
  let grid: ReturnType<typeof sensitivityGrid> | undefined
  if (o.grid) {
    grid = company ? sensitivityGrid(visible, ctx, o.taxRate, o.erpGrid, o.tenorGrid) : null
    if (grid === null) disclosures.grid_note = `no period visible at ${asOfIso}: no sensitivity grid`
  }
  const first = rows[0]?.period_end_date
  const last = rows[rows.length - 1]?.period_end_date
  const body = {
    ticker: r.ticker,
    symbol: r.symbol,
    as_of: asOfIso,
    periods_returned: rows.length,
    rows,
    market_cap: {
      value: cap === undefined || Number.isNaN(cap) ? null : cap,
      basis: capDay ? `close x shares outstanding on ${capDay}` : 'no close in this dataset',
      note: 'current snapshot, not point in time: per-row market_cap is null',
    },
    ...(grid === undefined ? {} : { sensitivity_grid: grid }),
    disclosures,
    _metadata: models.metadata(store, first && last ? [first, last] : undefined, r),
  }
  return {
    body,
    store,
    confidence: fundamentalsConfidence(rows),
    table: () => fundamentalsTable(rows),
    filename: `fundamentals_${r.symbol}_${asOfIso}`,
  }
}

/**
 * `_agent.confidence`: filings (any row at all) and ratio coverage (the share of returned rows
 * with a TTM return on equity, i.e. four finite quarters behind them).
 */
function fundamentalsConfidence(rows: FundamentalsRow[]) {
  const filings = rows.length > 0 ? 1 : 0
  const coverage = rows.length > 0 ? rows.filter((r) => r.roe_ttm !== null).length / rows.length : 0
  const factors = { filings, ratio_coverage: coverage }
  return { overall: Math.min(filings, coverage), factors }
}

/** The rows as one flat table: sec_facts as JSON text, equity_bridge_inputs joined by ';'. */
function fundamentalsTable(rows: FundamentalsRow[]) {
  const flat = rows.map((row) => ({
    ...row,
    equity_bridge_inputs: row.equity_bridge_inputs.join(';'),
    sec_facts: JSON.stringify(row.sec_facts),
  }))
  return rowsTable(flat, {
    period_end_date: 'date',
    filed_date: 'date',
    filed_date_source: 'text',
    ...Object.fromEntries(NUMERIC_ROW_FIELDS.map((f) => [f, 'double'])),
    equity_bridge_inputs: 'text',
    beta_source: 'text',
    sec_facts: 'text',
  })
}
