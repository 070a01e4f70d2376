/**
 * Which trading days an update should fetch: the NYSE sessions after the data directory's last
 * day whose close, plus a grace period for the vendors to publish, has passed. Times are the
 * exchange's (America/New_York, daylight saving included), whatever the machine's time zone.
 */
import { isoFromDay, parseIsoDay } from '../../platform/dates.ts'
import { AppError } from '../../platform/errors.ts'
import { isSession as isSessionDay, nyseTradingDays, sessionClose } from '../data/calendar.ts'

/** Regular close, minutes after midnight in New York. */
const REGULAR_CLOSE_MINUTES = 16 * 60

/** The session's close in minutes after midnight in New York (13:00 on a half day). */
function closeMinutes(day: number): number {
  const c = sessionClose(day)
  return c ? c.hour * 60 + c.minute : REGULAR_CLOSE_MINUTES
}
/** Default wait after the close before a day counts as published (ERM3_UPDATE_GRACE_MINUTES). */
export const DEFAULT_GRACE_MINUTES = 120

const NY = new Intl.DateTimeFormat('en-US', {
  timeZone: 'America/New_York',
  hourCycle: 'h23',
  year: 'numeric',
  month: '2-digit',
  day: '2-digit',
  hour: '2-digit',
  minute: '2-digit',
})

/** `now` as New York wall-clock minutes since 1970-01-01 00:00 (day number × 1440 + minutes). */
function newYorkMinutes(now: Date): number {
  const p: Record<string, string> = {}
  for (const part of NY.formatToParts(now)) p[part.type] = part.value
  const day = parseIsoDay(`${p.year}-${p.month}-${p.day}`)
  if (day === null) throw new Error(`cannot read the New York date of ${now.toISOString()}`)
  return day * 1440 + Number(p.hour) * 60 + Number(p.minute)
}

/**
 * The sessions after `lastDay` (exclusive) whose close (13:00 on a half day) + grace has passed at
 * `now`, oldest first.
 */
export function newSessions(lastDay: string, now: Date, graceMinutes = DEFAULT_GRACE_MINUTES): string[] {
  const last = parseIsoDay(lastDay)
  if (last === null)
    throw new AppError(
      'INVALID_REQUEST',
      `the data directory's last day ${JSON.stringify(lastDay)} is not a date`,
    )
  const nowMinutes = newYorkMinutes(now)
  const today = Math.floor(nowMinutes / 1440)
  const out: string[] = []
  for (const d of nyseTradingDays(last + 1, today)) {
    if (d * 1440 + closeMinutes(d) + graceMinutes <= nowMinutes) out.push(isoFromDay(d))
  }
  return out
}

/** The session before `day` (which need not be a session itself). */
export function previousSession(day: string): string {
  const d = parseIsoDay(day)
  if (d === null) throw new AppError('INVALID_REQUEST', `${JSON.stringify(day)} is not a date`)
  const days = nyseTradingDays(d - 14, d - 1)
  return isoFromDay(days[days.length - 1])
}

/** Whether the exchange traded on `day`. */
export function isSession(day: string): boolean {
  const d = parseIsoDay(day)
  return d !== null && isSessionDay(d)
}

/**
 * The instant just after `day`'s close + grace, in New York: what `erm3 update --date` pretends
 * `now` is. Found by correcting a UTC guess by the zone's offset (two rounds settle DST).
 */
export function afterClose(day: string, graceMinutes = DEFAULT_GRACE_MINUTES): Date {
  const d = parseIsoDay(day)
  if (d === null)
    throw new AppError('INVALID_REQUEST', `--date must be YYYY-MM-DD, got ${JSON.stringify(day)}`)
  const want = d * 1440 + closeMinutes(d) + graceMinutes + 1
  let ms = want * 60_000 + 5 * 3_600_000
  for (let i = 0; i < 2; i++) ms += (want - newYorkMinutes(new Date(ms))) * 60_000
  return new Date(ms)
}
