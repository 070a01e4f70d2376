/**
 * When the daily update runs: `--update-at "18:30 America/New_York"` (ERM3_UPDATE_AT) is a wall
 * clock time in an IANA zone, and the next run is the first such instant after `now` on a date
 * (in that zone) the NYSE holds a session. Wall clock to instant goes through Intl, so the run
 * stays at 18:30 local across daylight-saving changes.
 */
import { isSession } from '../../engine/data/calendar.ts'
import type { UpdateAt } from '../../platform/update-at.ts'

const MS_PER_DAY = 86_400_000

const formats = new Map<string, Intl.DateTimeFormat>()
function formatIn(zone: string): Intl.DateTimeFormat {
  let f = formats.get(zone)
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone: zone,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
    })
    formats.set(zone, f)
  }
  return f
}

/** The wall clock of `ms` in `zone`, as if it were UTC (epoch ms, whole seconds). */
function wallClock(ms: number, zone: string): number {
  const p: Record<string, number> = {}
  for (const part of formatIn(zone).formatToParts(ms)) p[part.type] = Number(part.value)
  return Date.UTC(p.year ?? 0, (p.month ?? 1) - 1, p.day ?? 1, p.hour ?? 0, p.minute ?? 0, p.second ?? 0)
}

/** The zone's offset from UTC at instant `ms` (ms; New York in winter: -5 h). */
const offsetAt = (ms: number, zone: string) => wallClock(ms, zone) - Math.floor(ms / 1000) * 1000

/** The date (a day number) `ms` falls on in `zone`. */
export function dateIn(ms: number, zone: string): number {
  return Math.floor(wallClock(ms, zone) / MS_PER_DAY)
}

/**
 * The instant the wall clock of `zone` reads hour:minute on `day`. A time skipped by a
 * spring-forward change runs as many minutes after the change as it named after the gap's start
 * (02:30 → 03:30); a time that occurs twice (fall back) is its first occurrence.
 */
export function zonedInstant(day: number, hour: number, minute: number, zone: string): number {
  const wall = day * MS_PER_DAY + (hour * 60 + minute) * 60_000
  const before = offsetAt(wall, zone)
  const first = wall - before
  const after = offsetAt(first, zone)
  if (after === before) return first
  const second = wall - after
  return wallClock(second, zone) === wall ? second : Math.max(first, second)
}

/** The next run strictly after `now`: the first session date (in the schedule's zone) whose time is still ahead. */
export function nextRunAt(at: UpdateAt, now: number): number {
  const today = dateIn(now, at.zone)
  // The longest NYSE closure since 1900 with its weekends is well under three weeks.
  for (let day = today; day < today + 21; day++) {
    if (!isSession(day)) continue
    const t = zonedInstant(day, at.hour, at.minute, at.zone)
    if (t > now) return t
  }
  throw new Error('no NYSE session in the next 21 days')
}
