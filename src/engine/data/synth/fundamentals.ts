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
  const financial = c.cik % 7 === 0
  const ps = rng.logNormal(2.5, 0.5)
  const margin = 0.02 + 0.09 * rng.normal() * 0.7 + 0.06
  const leverage = financial ? 6 + 4 * rng.uniform() : 1.6 + 1.4 * rng.uniform()
  const capexRatio = 0.02 + 0.06 * rng.uniform()
  const buybackRate = rng.chance(0.5) ? 0.01 + 0.03 * rng.uniform() : 0
  const newRevenueConcept = rng.chance(0.5)
  const newInterestConcept = rng.chance(0.3)
  let revenue = Number.NaN
  let equity = Number.NaN
  let ytd = { cfo: 0, capex: 0, div: 0, buy: 0 }
  let income = { rev: 0, ni: 0, int: 0, quarters: 0 }
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

    const target = cap / ps / 4
    revenue = Number.isNaN(revenue)
      ? target
      : 0.6 * revenue * Math.exp(0.01 + 0.03 * rng.normal()) + 0.4 * target
    const ni = revenue * (margin + 0.03 * rng.normal())
    const dividends = (c.divYield * cap) / 4
    const buybacks = (buybackRate * cap) / 4
    equity = Number.isNaN(equity) ? cap / rng.logNormal(3, 0.4) : equity + ni - dividends - buybacks
    const assets = Math.max(equity, 0) * leverage + revenue
    const debt = (assets - equity) * 0.45
    const rate = x.bill3m[Math.max(0, t)] + 0.02
    const quarter = {
      cfo: ni * 1.15 + revenue * 0.03 * rng.normal(),
      capex: revenue * capexRatio,
      div: dividends,
      buy: buybacks,
    }
    if (q === 1) ytd = { cfo: 0, capex: 0, div: 0, buy: 0 }
    ytd = {
      cfo: ytd.cfo + quarter.cfo,
      capex: ytd.capex + quarter.capex,
      div: ytd.div + quarter.div,
      buy: ytd.buy + quarter.buy,
    }
    // Income items: 3-month durations in 10-Qs; the 10-K carries only the 12-month figure (a
    // partial first fiscal year is filled with the current quarter's run rate).
    const interest = (debt * rate) / 4
    if (q === 1) income = { rev: 0, ni: 0, int: 0, quarters: 0 }
    income = {
      rev: income.rev + revenue,
      ni: income.ni + ni,
      int: income.int + interest,
      quarters: income.quarters + 1,
    }
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
      newRevenueConcept && yearOf(pe) >= 2018
        ? 'RevenueFromContractWithCustomerExcludingAssessedTax'
        : 'Revenues'
    const intConcept =
      newInterestConcept && yearOf(pe) >= 2023 ? 'InterestExpenseNonoperating' : 'InterestExpense'
    push(revConcept, { start: period.start, ...base, val: usd(period.rev) })
    push('NetIncomeLoss', { start: period.start, ...base, val: usd(period.ni) })
    push(intConcept, { start: period.start, ...base, val: usd(period.int) })
    // Cash-flow items: year-to-date, as filers report them.
    push('NetCashProvidedByUsedInOperatingActivities', { start: fyStart, ...base, val: usd(ytd.cfo) })
    push('PaymentsToAcquirePropertyPlantAndEquipment', { start: fyStart, ...base, val: usd(ytd.capex) })
    if (c.divYield > 0) push('PaymentsOfDividends', { start: fyStart, ...base, val: usd(ytd.div) })
    if (buybackRate > 0)
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
