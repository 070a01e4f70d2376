import { dayFromParts, monthOf, parseIsoDay, weekday, yearOf } from '../../platform/dates.ts'

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

const SPECIAL_CLOSURE_DAYS = new Set(SPECIAL_CLOSURES.map((s) => parseIsoDay(s) ?? 0))

/** All NYSE trading days in [from, to], inclusive (day numbers). */
export function nyseTradingDays(from: number, to: number): Int32Array {
  const special = SPECIAL_CLOSURE_DAYS
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

const holidayCache = new Map<number, Set<number>>()
function holidaysOf(year: number): Set<number> {
  let h = holidayCache.get(year)
  if (!h) {
    h = nyseHolidays(year)
    holidayCache.set(year, h)
  }
  return h
}

/** Whether the NYSE holds a session on `day` (a day number): a weekday, no holiday, no closure. */
export function isSession(day: number): boolean {
  const w = weekday(day)
  if (w === 0 || w === 6) return false
  return !holidaysOf(yearOf(day)).has(day) && !SPECIAL_CLOSURE_DAYS.has(day)
}

/** A session's closing time, New York wall clock. */
export interface SessionClose {
  hour: number
  minute: number
}

/** Early closes that no rule below yields: the day after Christmas of 1997 and 2003 (both Fridays). */
const EXTRA_EARLY_CLOSES = new Set(['1997-12-26', '2003-12-26'].map((s) => parseIsoDay(s) ?? 0))

/**
 * The 13:00 closes, from 1993 (earlier early closes were at 14:00 and on other days; they are not
 * modelled, so a session before 1993 reports 16:00):
 * - the day after Thanksgiving;
 * - Christmas Eve, Monday to Thursday (on a Friday it is the observed Christmas holiday);
 * - July 3 on a Monday, Tuesday or Thursday, and on a Wednesday from 2013 (on a Friday it is the
 *   observed Independence Day; when July 4 is a Monday, Friday July 1 is a full session). From 1996
 *   to 2012, when July 4 fell on a Thursday, the exchange closed early on Friday July 5 instead and
 *   July 3 was a full session (1996, 2002);
 * - the extra days above.
 */
function isEarlyClose(day: number): boolean {
  const year = yearOf(day)
  if (year < 1993) return false
  if (EXTRA_EARLY_CLOSES.has(day)) return true
  const month = monthOf(day)
  const date = day - dayFromParts(year, month, 1) + 1
  const w = weekday(day)
  if (month === 11) return day === nthWeekday(year, 11, 4, 4) + 1
  if (month === 12) return date === 24 && w >= 1 && w <= 4
  if (month !== 7) return false
  if (date === 3) return w === 1 || w === 2 || w === 4 || (w === 3 && year >= 2013)
  return date === 5 && w === 5 && year >= 1996 && year <= 2012
}

/** When the session of `day` closes (New York time), or null when the exchange is closed. */
export function sessionClose(day: number): SessionClose | null {
  if (!isSession(day)) return null
  return isEarlyClose(day) ? { hour: 13, minute: 0 } : { hour: 16, minute: 0 }
}
