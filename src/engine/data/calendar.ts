import { dayFromParts, parseIsoDay, weekday, yearOf } from '../../platform/dates.ts'

/**
 * The NYSE trading calendar, used by the synthetic market (imported data brings its own
 * calendar: the days the market ETF traded). Rules: weekends; New Year's Day, MLK Day (from
 * 1998), Washington's Birthday, Good Friday, Memorial Day, Juneteenth (from 2022), Independence
 * Day, Labor Day, Thanksgiving and Christmas, with Saturday holidays observed on Friday (except
 * New Year's Day, which the exchange then does not observe) and Sunday holidays on Monday; plus
 * the unscheduled closures below.
 */
const SPECIAL_CLOSURES = [
  '2001-09-11',
  '2001-09-12',
  '2001-09-13',
  '2001-09-14',
  '2004-06-11', // President Reagan's funeral
  '2007-01-02', // President Ford's funeral
  '2012-10-29', // Hurricane Sandy
  '2012-10-30',
  '2018-12-05', // President G. H. W. Bush's funeral
  '2025-01-09', // President Carter's funeral
]

function nthWeekday(year: number, month: number, dow: number, n: number): number {
  const first = dayFromParts(year, month, 1)
  return first + ((dow - weekday(first) + 7) % 7) + 7 * (n - 1)
}

function lastWeekday(year: number, month: number, dow: number): number {
  const last = dayFromParts(year, month + 1, 0)
  return last - ((weekday(last) - dow + 7) % 7)
}

/** Gregorian Easter Sunday (anonymous Gregorian algorithm). */
function easter(year: number): number {
  const a = year % 19
  const b = Math.floor(year / 100)
  const c = year % 100
  const d = Math.floor(b / 4)
  const e = b % 4
  const f = Math.floor((b + 8) / 25)
  const g = Math.floor((b - f + 1) / 3)
  const h = (19 * a + b - d - g + 15) % 30
  const i = Math.floor(c / 4)
  const k = c % 4
  const l = (32 + 2 * e + 2 * i - h - k) % 7
  const m = Math.floor((a + 11 * h + 22 * l) / 451)
  const month = Math.floor((h + l - 7 * m + 114) / 31)
  const day = ((h + l - 7 * m + 114) % 31) + 1
  return dayFromParts(year, month, day)
}

function observed(day: number): number {
  const w = weekday(day)
  if (w === 6) return day - 1
  if (w === 0) return day + 1
  return day
}

export function nyseHolidays(year: number): Set<number> {
  const h = new Set<number>()
  const newYear = dayFromParts(year, 1, 1)
  if (weekday(newYear) !== 6) h.add(observed(newYear))
  if (year >= 1998) h.add(nthWeekday(year, 1, 1, 3))
  h.add(nthWeekday(year, 2, 1, 3))
  h.add(easter(year) - 2)
  h.add(lastWeekday(year, 5, 1))
  if (year >= 2022) h.add(observed(dayFromParts(year, 6, 19)))
  h.add(observed(dayFromParts(year, 7, 4)))
  h.add(nthWeekday(year, 9, 1, 1))
  h.add(nthWeekday(year, 11, 4, 4))
  h.add(observed(dayFromParts(year, 12, 25)))
  return h
}

/** All NYSE trading days in [from, to], inclusive (day numbers). */
export function nyseTradingDays(from: number, to: number): Int32Array {
  const special = new Set(SPECIAL_CLOSURES.map((s) => parseIsoDay(s) ?? 0))
  const out: number[] = []
  let year = -1
  let holidays = new Set<number>()
  for (let d = from; d <= to; d++) {
    const w = weekday(d)
    if (w === 0 || w === 6) continue
    if (yearOf(d) !== year) {
      year = yearOf(d)
      holidays = nyseHolidays(year)
    }
    if (!holidays.has(d) && !special.has(d)) out.push(d)
  }
  return Int32Array.from(out)
}
