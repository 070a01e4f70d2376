/**
 * The daily update's time, `--update-at "18:30 America/New_York"` or ERM3_UPDATE_AT: a 24-hour
 * wall-clock time and an IANA zone (America/New_York when none is named). services/updates/schedule.ts
 * turns it into run instants.
 */
import { AppError } from './errors.ts'

export interface UpdateAt {
  hour: number
  minute: number
  /** An IANA zone (America/New_York when the value names none). */
  zone: string
}

const DEFAULT_ZONE = 'America/New_York'

/** `HH:MM [Zone]`; `what` names the flag or variable in the error. */
export function parseUpdateAt(raw: string, what: string): UpdateAt {
  const m = /^\s*(\d{1,2}):(\d{2})(?:\s+(\S+))?\s*$/.exec(raw)
  const hour = Number(m?.[1])
  const minute = Number(m?.[2])
  if (!m || hour > 23 || minute > 59)
    throw new AppError(
      'CONFIG_INVALID',
      `${what} must be a 24-hour time HH:MM, optionally followed by an IANA time zone (e.g. "18:30 America/New_York"), got ${JSON.stringify(raw)}`,
    )
  const zone = m[3] ?? DEFAULT_ZONE
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: zone })
  } catch {
    throw new AppError(
      'CONFIG_INVALID',
      `${what}: ${JSON.stringify(zone)} is not an IANA time zone (e.g. America/New_York, Europe/London, UTC)`,
    )
  }
  return { hour, minute, zone }
}
