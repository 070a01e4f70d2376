import { gzipSync } from 'node:zlib'
import {
  dayFromParts,
  isoFromDay,
  lastIndexAtOrBefore,
  monthOf,
  weekday,
  yearOf,
} from '../../../platform/dates.ts'
import type { Rng } from '../../model/random.ts'
import type { FundamentalsFile } from '../format.ts'
import type { Company } from './universe.ts'

/**
 * Quarterly SEC-companyfacts-shaped filings for every synthetic company, consistent with its
 * prices and shares. They copy the real format's habits that trip up naive parsers: 10-Q
 * income items cover 3 months but cash-flow items are year-to-date; Q4 exists only inside the
 * 10-K annual figure; some filers switch revenue and interest concepts (2018, 2023); filings are
 * visible only from their filing date; fiscal years need not end in December.
 */
interface Fact {
  start?: string
  end: string
  val: number
  accn: string
  fy: number
  fp: string
  form: string
  filed: string
}

const LABELS: Record<string, string> = {
  Revenues: 'Revenues',
  RevenueFromContractWithCustomerExcludingAssessedTax:
    'Revenue from Contract with Customer, Excluding Assessed Tax',
  NetIncomeLoss: 'Net Income (Loss) Attributable to Parent',
  StockholdersEquity: "Stockholders' Equity Attributable to Parent",
  Assets: 'Assets',
  LongTermDebt: 'Long-term Debt',
  InterestExpense: 'Interest Expense',
  InterestExpenseNonoperating: 'Interest Expense, Nonoperating',
  NetCashProvidedByUsedInOperatingActivities: 'Net Cash Provided by (Used in) Operating Activities',
  PaymentsToAcquirePropertyPlantAndEquipment: 'Payments to Acquire Property, Plant, and Equipment',
  PaymentsOfDividends: 'Payments of Dividends',
  PaymentsForRepurchaseOfCommonStock: 'Payment for Repurchase of Common Stock',
}

const XBRL_START = dayFromParts(2009, 6, 30)

export interface FundamentalsInputs {
  calendar: Int32Array
  close: Float64Array
  shares: Float64Array
  bill3m: Float64Array
  endDay: number
}

export function companyFundamentals(rng: Rng, c: Company, x: FundamentalsInputs): FundamentalsFile {
  const profile = companyProfile(rng, c)
  const { usGaap, shareFacts } = quarterlyFilings(rng, c, x, profile)
  return factsFile(c, usGaap, shareFacts)
}

type Profile = ReturnType<typeof companyProfile>

/** The company's fixed traits (drawn first, always in this order). */
function companyProfile(rng: Rng, c: Company) {
  const financial = c.cik % 7 === 0
  const ps = rng.logNormal(2.5, 0.5)
  const margin = 0.02 + 0.09 * rng.normal() * 0.7 + 0.06
  const leverage = financial ? 6 + 4 * rng.uniform() : 1.6 + 1.4 * rng.uniform()
  const capexRatio = 0.02 + 0.06 * rng.uniform()
  const buybackRate = rng.chance(0.5) ? 0.01 + 0.03 * rng.uniform() : 0
  const newRevenueConcept = rng.chance(0.5)
  const newInterestConcept = rng.chance(0.3)
  return { ps, margin, leverage, capexRatio, buybackRate, newRevenueConcept, newInterestConcept }
}

/** What carries from quarter to quarter: revenue and equity, and the fiscal year's sums so far. */
interface Books {
  revenue: number
  equity: number
  ytd: { cfo: number; capex: number; div: number; buy: number }
  income: { rev: number; ni: number; int: number; quarters: number }
}

/**
 * One filing per fiscal quarter from the company's listing (or the start of XBRL) to its
 * delisting or the dataset's end, each visible from its filing date.
 */
function quarterlyFilings(rng: Rng, c: Company, x: FundamentalsInputs, p: Profile) {
  const usGaap: Record<string, Fact[]> = {}
  const shareFacts: Fact[] = []
  const push = (concept: string, f: Fact) => {
    let list = usGaap[concept]
    if (!list) {
      list = []
      usGaap[concept] = list
    }
    list.push(f)
  }
  const books: Books = {
    revenue: Number.NaN,
    equity: Number.NaN,
    ytd: { cfo: 0, capex: 0, div: 0, buy: 0 },
    income: { rev: 0, ni: 0, int: 0, quarters: 0 },
  }
  let seq = 100000 + (c.cik % 800000)

  const firstDay = Math.max(x.calendar[c.listIdx], XBRL_START)
  const lastDay = Math.min(x.calendar[c.delistIdx], x.endDay)
  for (let pe = firstQuarterEnd(firstDay, c.fyEnd); pe <= lastDay; pe = nextQuarterEnd(pe)) {
    const q = fiscalQuarter(pe, c.fyEnd)
    const t = lastIndexAtOrBefore(x.calendar, pe)
    const cap = x.close[t] * x.shares[t]
    if (!(cap > 0)) continue
    const annual = q === 4
    const filed = businessDay(pe + (annual ? rng.int(50, 75) : rng.int(25, 45)))
    if (filed > x.endDay || filed > x.calendar[c.delistIdx]) break
    const fy = yearOf(pe) + (monthOf(pe) > c.fyEnd ? 1 : 0)
    const accn = `${String(c.cik).padStart(10, '0')}-${String(yearOf(filed) % 100).padStart(2, '0')}-${String(seq++).padStart(6, '0')}`
    const base = {
      accn,
      fy,
      fp: annual ? 'FY' : `Q${q}`,
      form: annual ? '10-K' : '10-Q',
      filed: isoFromDay(filed),
      end: isoFromDay(pe),
    }
    const qStart = isoFromDay(previousQuarterEnd(pe) + 1)
    const fyStart = isoFromDay(fiscalYearStart(pe, c.fyEnd))
    const { revenue, ni, interest, equity, assets, debt } = quarterFigures(rng, books, p, c, x, q, t, cap)
    const { ytd, income } = books

    // Income items: 3-month durations in 10-Qs; the 10-K carries only the 12-month figure (a
    // partial first fiscal year is filled with the current quarter's run rate).
    const fill = 4 - income.quarters
    const period = annual
      ? {
          start: fyStart,
          rev: income.rev + fill * revenue,
          ni: income.ni + fill * ni,
          int: income.int + fill * interest,
        }
      : { start: qStart, rev: revenue, ni, int: interest }
    const revConcept =
      p.newRevenueConcept && yearOf(pe) >= 2018
        ? 'RevenueFromContractWithCustomerExcludingAssessedTax'
        : 'Revenues'
    const intConcept =
      p.newInterestConcept && yearOf(pe) >= 2023 ? 'InterestExpenseNonoperating' : 'InterestExpense'
    push(revConcept, { start: period.start, ...base, val: usd(period.rev) })
    push('NetIncomeLoss', { start: period.start, ...base, val: usd(period.ni) })
    push(intConcept, { start: period.start, ...base, val: usd(period.int) })
    // Cash-flow items: year-to-date, as filers report them.
    push('NetCashProvidedByUsedInOperatingActivities', { start: fyStart, ...base, val: usd(ytd.cfo) })
    push('PaymentsToAcquirePropertyPlantAndEquipment', { start: fyStart, ...base, val: usd(ytd.capex) })
    if (c.divYield > 0) push('PaymentsOfDividends', { start: fyStart, ...base, val: usd(ytd.div) })
    if (p.buybackRate > 0)
      push('PaymentsForRepurchaseOfCommonStock', { start: fyStart, ...base, val: usd(ytd.buy) })
    push('StockholdersEquity', { ...base, val: usd(equity) })
    push('Assets', { ...base, val: usd(assets) })
    push('LongTermDebt', { ...base, val: usd(debt) })
    const cover = lastIndexAtOrBefore(x.calendar, filed - 5)
    shareFacts.push({
      ...base,
      end: isoFromDay(x.calendar[cover]),
      val: Math.round(x.shares[cover] || x.shares[t]),
    })
  }
  return { usGaap, shareFacts }
}

/**
 * The quarter's figures, consistent with its market cap: revenue drifts towards cap / (P/S),
 * equity grows by what is earned and not paid out; the fiscal year's sums move on (`books`).
 */
function quarterFigures(
  rng: Rng,
  books: Books,
  p: Profile,
  c: Company,
  x: FundamentalsInputs,
  q: number,
  t: number,
  cap: number,
) {
  const target = cap / p.ps / 4
  const revenue = Number.isNaN(books.revenue)
    ? target
    : 0.6 * books.revenue * Math.exp(0.01 + 0.03 * rng.normal()) + 0.4 * target
  books.revenue = revenue
  const ni = revenue * (p.margin + 0.03 * rng.normal())
  const dividends = (c.divYield * cap) / 4
  const buybacks = (p.buybackRate * cap) / 4
  const equity = Number.isNaN(books.equity)
    ? cap / rng.logNormal(3, 0.4)
    : books.equity + ni - dividends - buybacks
  books.equity = equity
  const assets = Math.max(equity, 0) * p.leverage + revenue
  const debt = (assets - equity) * 0.45
  const rate = x.bill3m[Math.max(0, t)] + 0.02
  const quarter = {
    cfo: ni * 1.15 + revenue * 0.03 * rng.normal(),
    capex: revenue * p.capexRatio,
    div: dividends,
    buy: buybacks,
  }
  let ytd = books.ytd
  if (q === 1) ytd = { cfo: 0, capex: 0, div: 0, buy: 0 }
  books.ytd = {
    cfo: ytd.cfo + quarter.cfo,
    capex: ytd.capex + quarter.capex,
    div: ytd.div + quarter.div,
    buy: ytd.buy + quarter.buy,
  }
  const interest = (debt * rate) / 4
  let income = books.income
  if (q === 1) income = { rev: 0, ni: 0, int: 0, quarters: 0 }
  books.income = {
    rev: income.rev + revenue,
    ni: income.ni + ni,
    int: income.int + interest,
    quarters: income.quarters + 1,
  }
  return { revenue, ni, interest, equity, assets, debt }
}

/** The companyfacts JSON (gzipped): shares outstanding under dei, the rest under us-gaap. */
function factsFile(c: Company, usGaap: Record<string, Fact[]>, shareFacts: Fact[]): FundamentalsFile {
  const facts = {
    dei: {
      EntityCommonStockSharesOutstanding: {
        label: 'Entity Common Stock, Shares Outstanding',
        units: { shares: shareFacts },
      },
    },
    'us-gaap': Object.fromEntries(
      Object.entries(usGaap).map(([k, v]) => [
        k,
        { label: LABELS[k] ?? k, description: LABELS[k] ?? k, units: { USD: v } },
      ]),
    ),
  }
  const json = JSON.stringify({ cik: c.cik, entityName: c.name, facts })
  return { cik: c.cik, gzipped: new Uint8Array(gzipSync(json, { level: 4 })) }
}

const usd = (v: number) => Math.round(v / 1000) * 1000

/** Last day of a month; months outside 1..12 roll into neighbouring years. */
function endOfMonth(year: number, month: number): number {
  return dayFromParts(year, month + 1, 0)
}

const shiftQuarterEnd = (pe: number, months: number) => endOfMonth(yearOf(pe), monthOf(pe) + months)
const nextQuarterEnd = (pe: number) => shiftQuarterEnd(pe, 3)
const previousQuarterEnd = (pe: number) => shiftQuarterEnd(pe, -3)

/** The first fiscal quarter end on or after `day`. */
function firstQuarterEnd(day: number, fyEnd: number): number {
  const m = monthOf(day)
  return endOfMonth(yearOf(day), m + ((((fyEnd - m) % 3) + 3) % 3))
}

/** 1..4 within the fiscal year ending in month fyEnd. */
function fiscalQuarter(pe: number, fyEnd: number): number {
  const monthsAfterFyEnd = (monthOf(pe) - fyEnd + 12) % 12
  return monthsAfterFyEnd === 0 ? 4 : monthsAfterFyEnd / 3
}

function fiscalYearStart(pe: number, fyEnd: number): number {
  return shiftQuarterEnd(pe, -3 * fiscalQuarter(pe, fyEnd)) + 1
}

function businessDay(day: number): number {
  const w = weekday(day)
  return w === 6 ? day + 2 : w === 0 ? day + 1 : day
}
