/**
 * What /health says about the data: how old `data_as_of` is, in calendar days and in NYSE
 * sessions that should already be in, and what the last update did (the `status/update.json` the
 * updater writes at the store's root). A serving node reads that file on its reload poll, never
 * per request, and alerts the operator once per stale episode.
 */
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { sessionClose } from '../../engine/data/calendar.ts'
import type { BlobReader } from '../../engine/object-store/types.ts'
import type { UpdateOutcome } from '../../engine/update/types.ts'
import { parseIsoDay } from '../../platform/dates.ts'
import type { Logger } from '../../platform/logger.ts'
import type { DataStatus } from '../context.ts'
import type { OperatorAlert } from './alert.ts'
import { dateIn, zonedInstant } from './schedule.ts'

/** Where the updater leaves its last outcome, relative to the store's root. */
const UPDATE_STATUS_FILE = 'status/update.json'

/** A session counts as due once this long after its close (vendors publish end-of-day data late). */
const CLOSE_GRACE_MS = 4 * 3_600_000

const NEW_YORK = 'America/New_York'
const MS_PER_DAY = 86_400_000

/** Sessions after `dataAsOf` whose close plus the grace is at or before `now`. */
export function sessionsDue(dataAsOf: string, now: number): number {
  const from = parseIsoDay(dataAsOf)
  if (from === null) return 0
  let n = 0
  for (let day = from + 1; day <= dateIn(now, NEW_YORK); day++) {
    const close = sessionClose(day)
    if (close && zonedInstant(day, close.hour, close.minute, NEW_YORK) + CLOSE_GRACE_MS <= now) n++
  }
  return n
}

export interface DataAge {
  data_as_of: string | null
  age_days: number | null
  age_sessions: number | null
  stale_after_sessions: number
  /** Whether the data is meant to be current: an updater maintains the store, or this node schedules one. */
  monitored: boolean
  stale: boolean
}

/**
 * The age of `dataAsOf`. Only monitored data can be stale: a store built once from a fixed dataset
 * (the synthetic market, an import) is as old as it is on purpose.
 */
export function dataAge(
  dataAsOf: string | null,
  now: number,
  o: { staleAfterSessions: number; monitored: boolean },
): DataAge {
  const sessions = dataAsOf ? sessionsDue(dataAsOf, now) : null
  return {
    data_as_of: dataAsOf,
    age_days: dataAsOf ? Math.floor((now - Date.parse(`${dataAsOf}T00:00:00Z`)) / MS_PER_DAY) : null,
    age_sessions: sessions,
    stale_after_sessions: o.staleAfterSessions,
    monitored: o.monitored,
    stale: o.monitored && sessions !== null && sessions > o.staleAfterSessions,
  }
}

/** Monitored: the store carries an update status, or this node runs the scheduled update. */
export const isMonitored = (s: DataStatus | undefined) => Boolean(s && (s.lastUpdate !== null || s.scheduled))

/** The store's last update outcome: null when there is none (no updater ran yet) or it is unreadable. */
export async function readUpdateStatus(store: {
  url: string
  remote: BlobReader | null
}): Promise<UpdateOutcome | null> {
  let text: string | null
  if (store.remote) {
    const bytes = await store.remote.get(UPDATE_STATUS_FILE)
    text = bytes && new TextDecoder().decode(bytes)
  } else {
    text = await readFile(join(store.url, UPDATE_STATUS_FILE), 'utf8').catch((e: NodeJS.ErrnoException) => {
      if (e.code === 'ENOENT') return null
      throw e
    })
  }
  if (text === null) return null
  const parsed = JSON.parse(text) as UpdateOutcome
  if (typeof parsed.outcome !== 'string' || !Array.isArray(parsed.findings))
    throw new Error(`${UPDATE_STATUS_FILE} is not an update outcome`)
  return parsed
}

/**
 * The poll's side: refresh() reads the status into `status` (what /health shows) and fires the
 * stale alert when the data turns stale, once until it is fresh again.
 */
export function createDataWatch(o: {
  status: DataStatus
  read: () => Promise<UpdateOutcome | null>
  dataAsOf: () => string | null
  staleAfterSessions: number
  alert: (a: OperatorAlert) => Promise<void>
  log: Logger
  now: () => number
}): { refresh(): Promise<void> } {
  let alerted = false
  return {
    async refresh() {
      try {
        o.status.lastUpdate = await o.read()
        o.status.readError = null
      } catch (e) {
        o.status.readError = (e as Error).message
        o.log.warn({ err: o.status.readError }, `model store: ${UPDATE_STATUS_FILE} could not be read`)
      }
      const age = dataAge(o.dataAsOf(), o.now(), {
        staleAfterSessions: o.staleAfterSessions,
        monitored: isMonitored(o.status),
      })
      if (!age.stale) alerted = false
      else if (!alerted) {
        alerted = true
        const staleness = {
          data_as_of: age.data_as_of,
          age_sessions: age.age_sessions ?? 0,
          stale_after_sessions: age.stale_after_sessions,
        }
        o.log.warn(staleness, 'the data is stale')
        o.alert({ kind: 'stale', staleness }).catch((e: Error) =>
          o.log.error({ err: e.message }, 'operator alert failed'),
        )
      }
    },
  }
}
