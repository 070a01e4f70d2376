/**
 * Dates are whole UTC days. In arrays they are "day numbers" (days since 1970-01-01, Int32) so
 * calendars are cheap to compare and search; on the wire and on disk they are ISO `YYYY-MM-DD`.
 */
const MS_PER_DAY = 86_400_000

export function dayFromParts(year: number, month: number, day: number): number {
  return Math.floor(Date.UTC(year, month - 1, day) / MS_PER_DAY)
}

const ISO_RE = /^(\d{4})-(\d{2})-(\d{2})$/

/** Strict ISO date to day number; null when not a real calendar date. */
export function parseIsoDay(s: string): number | null {
  const m = ISO_RE.exec(s)
  if (!m) return null
  return validDay(Number(m[1]), Number(m[2]), Number(m[3]))
}

function validDay(y: number, mo: number, d: number): number | null {
  if (mo < 1 || mo > 12 || d < 1 || d > 31 || y < 1800 || y > 2200) return null
  const day = dayFromParts(y, mo, d)
  const back = new Date(day * MS_PER_DAY)
  if (back.getUTCMonth() !== mo - 1 || back.getUTCDate() !== d) return null
  return day
}

export function isoFromDay(day: number): string {
  const { y, m, d } = civilFromDay(day)
  if (y < 0 || y > 9999) return new Date(day * MS_PER_DAY).toISOString().slice(0, 10)
  return `${y < 1000 ? String(y).padStart(4, '0') : y}-${m < 10 ? '0' : ''}${m}-${d < 10 ? '0' : ''}${d}`
}

/** 0 = Sunday … 6 = Saturday. 1970-01-01 was a Thursday. */
export function weekday(day: number): number {
  return (((day + 4) % 7) + 7) % 7
}

export function yearOf(day: number): number {
  return civilFromDay(day).y
}

export function monthOf(day: number): number {
  return civilFromDay(day).m
}

const civil = { y: 0, m: 0, d: 0 }

/**
 * Proleptic Gregorian year, month and day of a day number, by arithmetic (H. Hinnant's
 * days-to-civil): the generator and the writers convert millions of days, and a Date per call
 * made that a measurable share of their time. Returns a shared object: read it at once.
 */
function civilFromDay(day: number): { y: number; m: number; d: number } {
  const z = day + 719_468
  const era = Math.floor(z / 146_097)
  const doe = z - era * 146_097
  const yoe = Math.floor(
    (doe - Math.floor(doe / 1460) + Math.floor(doe / 36_524) - Math.floor(doe / 146_096)) / 365,
  )
  const doy = doe - (365 * yoe + Math.floor(yoe / 4) - Math.floor(yoe / 100))
  const mp = Math.floor((5 * doy + 2) / 153)
  civil.d = doy - Math.floor((153 * mp + 2) / 5) + 1
  civil.m = mp < 10 ? mp + 3 : mp - 9
  civil.y = yoe + era * 400 + (civil.m <= 2 ? 1 : 0)
  return civil
}

/**
 * Accepted date spellings in user files: `YYYY-MM-DD`, the same followed by a time and zone
 * (`2019-01-02 00:00:00+00:00`, `2019-01-02T00:00:00Z`; the time is ignored: files here are
 * end-of-day), `YYYYMMDD`, `YYYY/MM/DD` and US `MM/DD/YYYY`.
 */
const DATE_FORMATS: { re: RegExp; order: 'ymd' | 'mdy' }[] = [
  {
    re: /^(\d{4})-(\d{2})-(\d{2})(?:[ T]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?$/,
    order: 'ymd',
  },
  { re: /^(\d{4})(\d{2})(\d{2})$/, order: 'ymd' },
  { re: /^(\d{4})\/(\d{1,2})\/(\d{1,2})$/, order: 'ymd' },
  { re: /^(\d{1,2})\/(\d{1,2})\/(\d{4})$/, order: 'mdy' },
]

export function parseFlexibleDay(raw: string): number | null {
  const s = raw.trim()
  for (const f of DATE_FORMATS) {
    const m = f.re.exec(s)
    if (!m) continue
    return f.order === 'ymd'
      ? validDay(Number(m[1]), Number(m[2]), Number(m[3]))
      : validDay(Number(m[3]), Number(m[1]), Number(m[2]))
  }
  return null
}

/** Index of the last element of an ascending array that is <= day, or -1. */
export function lastIndexAtOrBefore(days: ArrayLike<number>, day: number): number {
  let lo = 0
  let hi = days.length - 1
  let ans = -1
  while (lo <= hi) {
    const mid = (lo + hi) >> 1
    if (days[mid] <= day) {
      ans = mid
      lo = mid + 1
    } else hi = mid - 1
  }
  return ans
}
