import { isoFromDay } from '../../../platform/dates.ts'
import type { DurationField, FactSource, FundamentalField, InstantField } from './concepts.ts'
import type { SecFact } from './facts.ts'
import type { VisibleQuarter } from './quarters.ts'

/**
 * The fundamentals rows of docs/methodology.md §13 from the quarters visible at one as-of date.
 *
 * - TTM of a duration field = the sum over the row's quarter and the three visible quarters before
 *   it, which must be four consecutive fiscal quarters (the oldest ends 250–300 days before the
 *   row's) with four finite values; else null. Only visible quarters are used: a quarter filed
 *   after as_of never enters a window.
 * - Average equity / assets = the mean of the four quarter-end values of the same window (the
 *   literal "trailing-4-quarter average"; the opening balance of the window is not used).
 * - Guards give null, never a clipped value: roe null when average equity ≤ 0; roa when average
 *   assets ≤ 0; leverage and economic profit when the quarter's equity ≤ 0; fcf_margin when TTM
 *   revenue ≤ 0; payout, buyback and total payout ratios when TTM net income ≤ 0 (a ratio to
 *   non-positive earnings has no meaning, and total = payout + buyback must stay consistent);
 *   cost of debt when total debt ≤ 0; leverage and cost of debt when total debt is unreported
 *   (NaN, never taken as 0). retention = 1 − payout (null with it); sustainable growth
 *   = retention × roe.
 * - cost_of_equity = rf + beta_market × erp, rf = ctx.rate(period end, rf tenor).
 * - wacc = E/(D+E)·CoE + D/(D+E)·CoD·(1 − tax) with book E = the quarter's equity and D = its
 *   total debt; null when CoE is null, E ≤ 0 or D is unreported. D = 0 gives wacc = CoE (cost
 *   of debt is null then, but its weight is 0).
 * - economic_profit = (roe_ttm − CoE) × the quarter's equity.
 * - equity bridge: residual = closing equity − (opening equity + net income − dividends −
 *   repurchases + stock issued + other comprehensive income + share-based compensation) over the
 *   row's own quarter, opening equity = the previous visible quarter's closing equity (which
 *   must be the adjacent fiscal quarter). Null on the first visible quarter or when either
 *   equity is unreported; a missing flow is left out (its movement is inside the residual) and
 *   `equity_bridge_inputs` lists the flows that were present.
 *
 * ## sec_facts keys
 * - `Concept`: the value of the row's own quarter (for a derived quarter value: the derived
 *   value, with `derived` and the filing of the fact ending at the quarter end);
 * - `Concept:PART`: the raw facts a derived value was computed from (PART = FY, YTD2, YTD3, Q1,
 *   Q2, Q3 of the same fiscal year);
 * - `Concept@YYYY-MM-DD` and `Concept@YYYY-MM-DD:PART`: the same for the three earlier quarters
 *   of the TTM window (and the previous quarter's equity of the bridge), keyed by their period
 *   end; only the fields that enter a TTM sum or an average are listed for them.
 * Fields summing several concepts (total debt) list each concept under its own name.
 */

export type Tenor = '3m' | '1y' | '2y' | '5y' | '10y' | '30y'
export type BetaSource = 'none' | 'in-universe' | 'out-of-universe' | 'post-delisting'

/** Inputs the row math needs from the market model, per quarter end. */
export interface RowContext {
  betas(periodEnd: number): {
    market: number | null
    sector: number | null
    subsector: number | null
    source: BetaSource | null
  }
  /** fraction, at the last date ≤ periodEnd */
  rate(periodEnd: number, tenor: Tenor): number | null
}
export interface RowParams {
  erp: number
  taxRate: number
  rfTenor: Tenor
}

interface SecFactCell {
  value: number
  source: FactSource
  unit: string
  form: string
  accession: string
  filed: string
  derived?: string
}

export interface FundamentalsRow {
  period_end_date: string
  filed_date: string | null
  filed_date_source: 'exact' | 'approx' | null
  sec_facts: Record<string, SecFactCell>
  gross_margin: null
  operating_margin: null
  roe_ttm: number | null
  roa_ttm: number | null
  leverage_ratio: number | null
  fcf_margin: number | null
  payout_ratio: number | null
  retention_ratio: number | null
  buyback_ratio: number | null
  total_payout_ratio: number | null
  sustainable_growth: number | null
  equity_bridge_residual: number | null
  equity_bridge_inputs: string[]
  beta_market: number | null
  beta_sector: number | null
  beta_subsector: number | null
  beta_source: BetaSource | null
  rf_rate: number | null
  cost_of_equity: number | null
  cost_of_debt: number | null
  wacc: number | null
  economic_profit: number | null
  market_cap: null
}

/** The number-or-null fields of a row, in row order (the tabular form's numeric columns). */
export const NUMERIC_ROW_FIELDS = [
  'roe_ttm',
  'roa_ttm',
  'leverage_ratio',
  'fcf_margin',
  'payout_ratio',
  'retention_ratio',
  'buyback_ratio',
  'total_payout_ratio',
  'sustainable_growth',
  'equity_bridge_residual',
  'beta_market',
  'beta_sector',
  'beta_subsector',
  'rf_rate',
  'cost_of_equity',
  'cost_of_debt',
  'wacc',
  'economic_profit',
] as const satisfies readonly (keyof FundamentalsRow)[]

interface GridCell {
  cost_of_equity: number | null
  wacc: number | null
  economic_profit: number | null
}
export interface SensitivityGrid {
  period_end_date: string
  filed_date: string
  erp_values: number[]
  rf_tenor_values: string[]
  tax_rate: number
  cells: GridCell[][]
}

const WINDOW_MIN_DAYS = 250
const WINDOW_MAX_DAYS = 300
const ADJACENT_MIN_DAYS = 75
const ADJACENT_MAX_DAYS = 105

/** Fields of the earlier window quarters that enter a TTM sum or an average. */
const WINDOW_FIELDS: FundamentalField[] = [
  'revenue',
  'net_income',
  'operating_cash_flow',
  'capex',
  'dividends',
  'repurchases',
  'interest_expense',
  'total_equity',
  'total_assets',
]

/** Flows of the equity bridge with their sign. */
const BRIDGE_FLOWS: [DurationField, 1 | -1][] = [
  ['net_income', 1],
  ['dividends', -1],
  ['repurchases', -1],
  ['stock_issued', 1],
  ['other_comprehensive_income', 1],
  ['share_based_compensation', 1],
]

const finite = (x: number | null | undefined): number | null =>
  x !== null && x !== undefined && Number.isFinite(x) ? x : null

/** The four consecutive visible quarters ending at index i, or null. */
function ttmWindow(visible: VisibleQuarter[], i: number): VisibleQuarter[] | null {
  if (i < 3) return null
  const span = visible[i].periodEnd - visible[i - 3].periodEnd
  if (span < WINDOW_MIN_DAYS || span > WINDOW_MAX_DAYS) return null
  return visible.slice(i - 3, i + 1)
}

/** The sum of a field over a window: null unless all four values are finite. */
function ttm(w: VisibleQuarter[] | null, field: FundamentalField): number | null {
  if (!w) return null
  let s = 0
  for (const q of w) {
    const v = q.values[field]
    if (!Number.isFinite(v)) return null
    s += v
  }
  return s
}

function average(w: VisibleQuarter[] | null, field: InstantField): number | null {
  const s = ttm(w, field)
  return s === null ? null : s / 4
}

const ratio = (num: number | null, den: number | null): number | null =>
  num === null || den === null || !(den > 0) ? null : finite(num / den)

/** What the cost-of-capital formulas need from one row, independent of erp and tenor. */
interface CapitalInputs {
  betaMarket: number | null
  equity: number
  debt: number
  costOfDebt: number | null
  roe: number | null
}

function capitalInputs(visible: VisibleQuarter[], i: number, ctx: RowContext) {
  const q = visible[i]
  const w = ttmWindow(visible, i)
  const debt = q.values.total_debt
  const equity = q.values.total_equity
  const interest = ttm(w, 'interest_expense')
  const roe = ratio(ttm(w, 'net_income'), average(w, 'total_equity'))
  const betas = ctx.betas(q.periodEnd)
  const inputs: CapitalInputs = {
    betaMarket: finite(betas.market),
    equity,
    debt,
    costOfDebt: Number.isFinite(debt) ? ratio(interest, debt) : null,
    roe,
  }
  return { w, betas, inputs }
}

/** Cost of equity, WACC and economic profit: one formula for the rows and the grid. */
function costOfCapital(x: CapitalInputs, rf: number | null, erp: number, taxRate: number): GridCell {
  const coe = rf === null || x.betaMarket === null ? null : finite(rf + x.betaMarket * erp)
  let wacc: number | null = null
  if (coe !== null && x.equity > 0 && x.debt >= 0) {
    if (x.debt === 0) wacc = coe
    else if (x.costOfDebt !== null) {
      const total = x.debt + x.equity
      wacc = finite((x.equity / total) * coe + (x.debt / total) * x.costOfDebt * (1 - taxRate))
    }
  }
  const ep = x.roe === null || coe === null || !(x.equity > 0) ? null : finite((x.roe - coe) * x.equity)
  return { cost_of_equity: coe, wacc, economic_profit: ep }
}

/**
 * Rows for the visible quarters (oldest → newest); TTM windows use the visible quarters only.
 * `last` limits the output to the newest `last` rows (their windows still reach back into the
 * earlier visible quarters): a request for 8 periods builds 8 rows, not the whole history.
 */
export function fundamentalsRows(
  visible: VisibleQuarter[],
  ctx: RowContext,
  p: RowParams,
  last: number = visible.length,
): FundamentalsRow[] {
  const rows: FundamentalsRow[] = []
  for (let i = Math.max(0, visible.length - Math.max(0, last)); i < visible.length; i++) {
    const q = visible[i]
    const { w, betas, inputs } = capitalInputs(visible, i, ctx)
    const rf = finite(ctx.rate(q.periodEnd, p.rfTenor))
    const capital = costOfCapital(inputs, rf, p.erp, p.taxRate)
    const ni = ttm(w, 'net_income')
    const div = ttm(w, 'dividends')
    const rep = ttm(w, 'repurchases')
    const earnings = ni !== null && ni > 0 ? ni : null
    const cfo = ttm(w, 'operating_cash_flow')
    const capex = ttm(w, 'capex')
    const payout = ratio(div, earnings)
    const retention = payout === null ? null : 1 - payout
    const prev = i > 0 ? visible[i - 1] : null
    const bridge = equityBridge(q, prev)
    const leverage =
      inputs.equity > 0 && Number.isFinite(inputs.debt) ? finite(inputs.debt / inputs.equity) : null
    rows.push({
      period_end_date: isoFromDay(q.periodEnd),
      filed_date: isoFromDay(q.filedDate),
      filed_date_source: q.filedDateSource,
      sec_facts: secFacts(q, w, bridge.residual === null ? null : prev),
      gross_margin: null,
      operating_margin: null,
      roe_ttm: inputs.roe,
      roa_ttm: ratio(ni, average(w, 'total_assets')),
      leverage_ratio: leverage,
      fcf_margin: cfo === null || capex === null ? null : ratio(cfo - capex, ttm(w, 'revenue')),
      payout_ratio: payout,
      retention_ratio: retention,
      buyback_ratio: ratio(rep, earnings),
      total_payout_ratio: div === null || rep === null ? null : ratio(div + rep, earnings),
      sustainable_growth: retention === null || inputs.roe === null ? null : finite(retention * inputs.roe),
      equity_bridge_residual: bridge.residual,
      equity_bridge_inputs: bridge.inputs,
      beta_market: inputs.betaMarket,
      beta_sector: finite(betas.sector),
      beta_subsector: finite(betas.subsector),
      beta_source: betas.source,
      rf_rate: rf,
      cost_of_equity: capital.cost_of_equity,
      cost_of_debt: inputs.costOfDebt,
      wacc: capital.wacc,
      economic_profit: capital.economic_profit,
      market_cap: null,
    })
  }
  return rows
}

function equityBridge(
  q: VisibleQuarter,
  prev: VisibleQuarter | null,
): { residual: number | null; inputs: string[] } {
  const none = { residual: null, inputs: [] }
  if (!prev) return none
  const gap = q.periodEnd - prev.periodEnd
  if (gap < ADJACENT_MIN_DAYS || gap > ADJACENT_MAX_DAYS) return none
  const closing = q.values.total_equity
  const opening = prev.values.total_equity
  if (!Number.isFinite(closing) || !Number.isFinite(opening)) return none
  let expected = opening
  const inputs: string[] = []
  for (const [field, sign] of BRIDGE_FLOWS) {
    const v = q.values[field]
    if (!Number.isFinite(v)) continue
    expected += sign * v
    inputs.push(field)
  }
  return { residual: finite(closing - expected), inputs }
}

function secFacts(
  q: VisibleQuarter,
  w: VisibleQuarter[] | null,
  opening: VisibleQuarter | null,
): Record<string, SecFactCell> {
  const out: Record<string, SecFactCell> = {}
  addFacts(out, q, Object.keys(q.facts) as FundamentalField[], '')
  if (w) for (const e of w.slice(0, 3)) addFacts(out, e, WINDOW_FIELDS, `@${isoFromDay(e.periodEnd)}`)
  if (opening) addFacts(out, opening, ['total_equity'], `@${isoFromDay(opening.periodEnd)}`)
  return out
}

function addFacts(
  out: Record<string, SecFactCell>,
  q: VisibleQuarter,
  fields: FundamentalField[],
  suffix: string,
) {
  for (const field of fields) {
    const list = q.facts[field]
    if (!list || list.length === 0) continue
    const head = list[0]
    if (head.derived !== null) {
      out[`${head.concept}${suffix}`] = cell(head, q.values[field], head.derived)
      for (const f of list) out[`${f.concept}${suffix}:${f.part}`] = cell(f, f.value, null)
    } else for (const f of list) out[`${f.concept}${suffix}`] = cell(f, f.value, null)
  }
}

function cell(f: SecFact, value: number, derived: string | null): SecFactCell {
  const c: SecFactCell = {
    value,
    source: f.source,
    unit: f.unit,
    form: f.form,
    accession: f.accession,
    filed: f.filed,
  }
  if (derived !== null) c.derived = derived
  return c
}

/**
 * The sensitivity grid on the latest visible quarter: cells[i][j] pairs erpValues[i] with
 * tenors[j]; each cell is the row formulas with that erp and the rate of that tenor. null when
 * no quarter is visible.
 */
export function sensitivityGrid(
  visible: VisibleQuarter[],
  ctx: RowContext,
  taxRate: number,
  erpValues: number[],
  tenors: Tenor[],
): SensitivityGrid | null {
  if (visible.length === 0) return null
  const i = visible.length - 1
  const q = visible[i]
  const { inputs } = capitalInputs(visible, i, ctx)
  const rates = tenors.map((t) => finite(ctx.rate(q.periodEnd, t)))
  return {
    period_end_date: isoFromDay(q.periodEnd),
    filed_date: isoFromDay(q.filedDate),
    erp_values: [...erpValues],
    rf_tenor_values: [...tenors],
    tax_rate: taxRate,
    cells: erpValues.map((erp) => rates.map((rf) => costOfCapital(inputs, rf, erp, taxRate))),
  }
}
