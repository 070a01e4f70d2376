/**
 * A fake of the US Treasury's daily rates CSV download: for
 * `/resource-center/data-chart-center/interest-rates/daily-treasury-rates.csv/{year}/all?type=daily_treasury_bill_rates…`
 * it serves the year's rows the test gives, newest first, with the real header
 * (`Date,"4 WEEKS BANK DISCOUNT","4 WEEKS COUPON EQUIVALENT",…,"13 WEEKS COUPON EQUIVALENT",…`) and
 * `MM/DD/YYYY` dates; a year without rows is a 404. A row's `date` may be anything (malformed rows).
 *
 *   const t = await startTreasuryFake([{ date: '2024-01-02', coupon13w: 5.42 }])
 *   const source = treasurySource({ baseUrl: t.url })
 */
import { type FakeServer, startFake } from './ref-server.ts'

export interface BillRow {
  /** ISO date (written MM/DD/YYYY), or any raw text to make a malformed row. */
  date: string
  /** 13 WEEKS COUPON EQUIVALENT in percent; null: `N/A`. */
  coupon13w: number | null
}

const HEADER =
  'Date,"4 WEEKS BANK DISCOUNT","4 WEEKS COUPON EQUIVALENT","8 WEEKS BANK DISCOUNT","8 WEEKS COUPON EQUIVALENT","13 WEEKS BANK DISCOUNT","13 WEEKS COUPON EQUIVALENT","26 WEEKS BANK DISCOUNT","26 WEEKS COUPON EQUIVALENT","52 WEEKS BANK DISCOUNT","52 WEEKS COUPON EQUIVALENT"'

const us = (iso: string) => {
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(iso)
  return m ? `${m[2]}/${m[3]}/${m[1]}` : iso
}

export function treasuryCsv(rows: readonly BillRow[]): string {
  const lines = [...rows]
    .sort((a, b) => b.date.localeCompare(a.date))
    .map((r) => {
      const v = r.coupon13w === null ? 'N/A' : r.coupon13w.toFixed(2)
      // The 13-week discount rate is a little lower than the coupon equivalent: any other number.
      const d = r.coupon13w === null ? 'N/A' : (r.coupon13w - 0.1).toFixed(2)
      return `${us(r.date)},5.27,5.40,5.25,5.39,${d},${v},5.10,5.30,4.70,4.90`
    })
  return `${HEADER}\n${lines.join('\n')}\n`
}

const PATH_RE =
  /^\/resource-center\/data-chart-center\/interest-rates\/daily-treasury-rates\.csv\/(\d{4})\/all$/

export function startTreasuryFake(rows: readonly BillRow[]): Promise<FakeServer> {
  return startFake((url) => {
    const m = PATH_RE.exec(url.pathname)
    if (!m || url.searchParams.get('type') !== 'daily_treasury_bill_rates') return null
    if (url.searchParams.get('field_tdr_date_value') !== m[1]) return { status: 400, body: 'year mismatch' }
    const year = rows.filter((r) => r.date.startsWith(m[1]) || r.date.endsWith(m[1]))
    return year.length === 0 ? null : { body: treasuryCsv(year), type: 'text/csv' }
  })
}
