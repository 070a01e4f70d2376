/**
 * The in-process daily update of `erm3 serve --update-at`: sleep until the next run instant, take
 * the lease (another node holding it: skip the day), run, record the outcome, release. A failed or
 * quarantined outcome fires an operator alert, without waiting for it. stop() aborts a run in
 * progress through its signal and waits for it to end.
 */
import type { UpdateOutcome } from '../../engine/update/types.ts'
import type { Logger } from '../../platform/logger.ts'
import type { UpdateAt } from '../../platform/update-at.ts'
import type { OperatorAlert } from './alert.ts'
import type { UpdateLease } from './lease.ts'
import { nextRunAt } from './schedule.ts'

/** One update run (engine/update's runUpdate, bound to its options); aborts when `signal` does. */
export type UpdateRunner = (signal: AbortSignal) => Promise<UpdateOutcome>

export interface UpdateScheduler {
  /** The next planned run (epoch ms); null once stopped. */
  nextAt(): number | null
  /** What this node's last run did. */
  last(): UpdateOutcome | null
  stop(): Promise<void>
}

export interface SchedulerOptions {
  at: UpdateAt
  run: UpdateRunner
  lease: UpdateLease
  log: Logger
  alert: (alert: OperatorAlert) => Promise<void>
  now?: () => number
  /** Waits `ms` or until `signal` aborts (then rejects); tests move a clock instead. */
  sleep?: (ms: number, signal: AbortSignal) => Promise<void>
}

const realSleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    // setTimeout's limit is 2^31-1 ms (24.8 days); the next session is always sooner.
    const timer = setTimeout(resolve, Math.max(0, ms))
    signal.addEventListener('abort', () => {
      clearTimeout(timer)
      reject(signal.reason)
    })
  })

/** The outcome of a run that threw instead of answering. */
function thrown(e: unknown, startedAt: number, now: number): UpdateOutcome {
  const error = e instanceof Error ? e.message : String(e)
  return {
    outcome: 'failed',
    started_at: new Date(startedAt).toISOString(),
    finished_at: new Date(now).toISOString(),
    days: [],
    data_as_of_before: null,
    data_as_of: null,
    build: null,
    build_kind: null,
    build_note: null,
    findings: [],
    summary: {},
    message: `the update stopped with an error: ${error}`,
    error,
  }
}

export function startUpdateScheduler(o: SchedulerOptions): UpdateScheduler {
  const now = o.now ?? Date.now
  const sleep = o.sleep ?? realSleep
  const stopper = new AbortController()
  let next: number | null = null
  let last: UpdateOutcome | null = null

  const runOnce = async () => {
    const held = await o.lease.acquire().catch((e: Error) => {
      o.log.error(
        { err: e.message, lease: o.lease.kind },
        'update: the lease could not be taken; skipping this run',
      )
      return undefined
    })
    if (held === undefined) return
    if (held === null) {
      o.log.info({ lease: o.lease.kind }, 'update: another node holds the update lease; skipping this run')
      return
    }
    const started = now()
    o.log.info({ holder: held.holder }, 'update: starting')
    let outcome: UpdateOutcome
    try {
      outcome = await o.run(AbortSignal.any([stopper.signal, held.lost]))
    } catch (e) {
      outcome = thrown(e, started, now())
    } finally {
      await held
        .release()
        .catch((e: Error) => o.log.warn({ err: e.message }, 'update: releasing the lease failed'))
    }
    last = outcome
    const line = { outcome: outcome.outcome, data_as_of: outcome.data_as_of, days: outcome.days.length }
    if (outcome.outcome === 'failed' || outcome.outcome === 'quarantined') {
      o.log.error({ ...line, error: outcome.error }, `update: ${outcome.message}`)
      o.alert({ kind: 'update', outcome }).catch((e: Error) =>
        o.log.error({ err: e.message }, 'operator alert failed'),
      )
    } else o.log.info(line, `update: ${outcome.message}`)
  }

  const loop = (async () => {
    while (!stopper.signal.aborted) {
      next = nextRunAt(o.at, now())
      o.log.debug({ next: new Date(next).toISOString() }, 'update: next run')
      try {
        await sleep(next - now(), stopper.signal)
      } catch {
        break
      }
      if (stopper.signal.aborted) break
      await runOnce()
    }
    next = null
  })()

  return {
    nextAt: () => next,
    last: () => last,
    async stop() {
      stopper.abort(new Error('the server is stopping'))
      await loop
    },
  }
}
