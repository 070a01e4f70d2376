/**
 * The US Treasury's daily Treasury bill rates (`treasury`): one CSV file a year from
 * `/resource-center/data-chart-center/interest-rates/daily-treasury-rates.csv/{year}/all?type=daily_treasury_bill_rates…`,
 * dates `MM/DD/YYYY`, newest first, rates in percent. The 3-month rate is the column
 * `13 WEEKS COUPON EQUIVALENT` (the bill's bond-equivalent yield; FRED's DTB3 is the same bill
 * on a discount basis, a few basis points lower). Public domain, no key.
 */
import { isoFromDay, parseFlexibleDay, parseIsoDay, yearOf } from '../../platform/dates.ts'
import { AppError } from '../../platform/errors.ts'
import { csvRows, publishedNumber } from './csv-rows.ts'
import { configValue, type SourceEnv } from './env.ts'
import { HttpClient, type HttpClientOptions, SourceError } from './http.ts'
import type { RatePoint, Source, SourceFinding } from './types.ts'

export interface TreasuryOptions {
  baseUrl?: string
  onFinding?: (f: SourceFinding) => void
  http?: Partial<HttpClientOptions>
}

const COLUMN = '13 WEEKS COUPON EQUIVALENT'

const treasuryPath = (year: number) =>
  `resource-center/data-chart-center/interest-rates/daily-treasury-rates.csv/${year}/all?type=daily_treasury_bill_rates&field_tdr_date_value=${year}&page&_format=csv`

/** The range [from, to] as day numbers; an unreadable or reversed range is a clear error. */
export function dayRange(source: string, from: string, to: string): [number, number] {
  const a = parseIsoDay(from)
  const b = parseIsoDay(to)
  if (a === null || b === null || a > b)
    throw new AppError(
      'INVALID_REQUEST',
      `${source}: the range must be two ISO dates, from <= to; got ${from} … ${to}`,
    )
  return [a, b]
}

export function treasurySource(opts: TreasuryOptions = {}): Source {
  const http = new HttpClient({
    source: 'treasury',
    baseUrl: opts.baseUrl ?? 'https://home.treasury.gov',
    ratePerSecond: 2,
    concurrency: 2,
    ...opts.http,
  })
  const finding = (detail: string) => opts.onFinding?.({ source: 'treasury', detail })
  return {
    name: 'treasury',
    rates: {
      async tbill3m(from, to, o) {
        const [a, b] = dayRange('treasury', from, to)
        const out: RatePoint[] = []
        for (let y = yearOf(a); y <= yearOf(b); y++) {
          const text = await http.getText(treasuryPath(y), {
            allow: [404],
            accept: 'text/csv',
            signal: o?.signal,
          })
          if (text === null || text.trim() === '') {
            finding(`no daily bill rates file for ${y}`)
            continue
          }
          for (const p of billRatesFromCsv(text, `bill rates ${y}`, finding)) {
            const d = parseIsoDay(p.date) ?? Number.NaN
            if (d >= a && d <= b) out.push(p)
          }
        }
        return out.sort((x, y) => x.date.localeCompare(y.date))
      },
    },
  }
}

/**
 * The 3-month points of one daily bill rates CSV, in fractions, in file order. A missing column is
 * an error; a row with an unreadable date is a finding; an empty rate (`N/A`, blank) is skipped.
 */
function billRatesFromCsv(text: string, file: string, finding: (detail: string) => void): RatePoint[] {
  const rows = csvRows(text).filter((r) => r.some((c) => c.trim() !== ''))
  const header = (rows[0] ?? []).map((c) => c.trim().toUpperCase())
  const iDate = header.indexOf('DATE')
  const iRate = header.indexOf(COLUMN)
  if (iDate < 0 || iRate < 0)
    throw new SourceError(
      'treasury',
      200,
      `${file}: expected columns Date and "${COLUMN}", got ${header.join(', ')}`,
    )
  const out: RatePoint[] = []
  for (const [n, r] of rows.slice(1).entries()) {
    const day = parseFlexibleDay(r[iDate] ?? '')
    if (day === null) {
      finding(`${file}: row ${n + 2} skipped: unreadable date "${r[iDate] ?? ''}"`)
      continue
    }
    const v = publishedNumber(r[iRate])
    if (!Number.isNaN(v)) out.push({ date: isoFromDay(day), value: v / 100 })
  }
  return out
}

/** The `treasury` source from TREASURY_BASE_URL. */
export function treasuryFromEnv(env: SourceEnv, onFinding?: (f: SourceFinding) => void): Source {
  return treasurySource({ baseUrl: configValue(env, 'TREASURY_BASE_URL') ?? undefined, onFinding })
}
