import assert from 'node:assert/strict'
import { mkdtemp, readdir, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, test } from 'node:test'
import type { UpdateOutcome } from '../../../src/engine/update/types.ts'
import { parseUpdateAt } from '../../../src/platform/update-at.ts'
import type { OperatorAlert } from '../../../src/services/updates/alert.ts'
import { createFileLease, type UpdateLease } from '../../../src/services/updates/lease.ts'
import { startUpdateScheduler, type UpdateRunner } from '../../../src/services/updates/scheduler.ts'
import { memoryLogger, outcomeOf } from './helpers.ts'

const dirP = mkdtemp(join(tmpdir(), 'erm3-sched-'))
after(async () => rm(await dirP, { recursive: true, force: true }))

/** A clock that sleep() moves forward (yielding to the event loop each time). */
function fakeClock(start: string) {
  let t = Date.parse(start)
  return {
    now: () => t,
    sleep: (ms: number, signal: AbortSignal) =>
      new Promise<void>((resolve, reject) =>
        setImmediate(() => {
          if (signal.aborted) return reject(signal.reason)
          t += ms
          resolve()
        }),
      ),
  }
}

/** Starts a scheduler and stops it after `runs` calls of the runner. */
async function runScheduler(o: { outcomes: (UpdateOutcome | Error)[]; lease: UpdateLease; start?: string }) {
  const clock = fakeClock(o.start ?? '2025-07-03T12:00:00Z')
  const { log, lines } = memoryLogger()
  const calls: string[] = []
  const alerts: OperatorAlert[] = []
  let done: () => void = () => undefined
  const finished = new Promise<void>((r) => {
    done = r
  })
  const run: UpdateRunner = async () => {
    calls.push(new Date(clock.now()).toISOString())
    const next = o.outcomes[calls.length - 1]
    if (calls.length >= o.outcomes.length) done()
    if (next instanceof Error) throw next
    return next ?? outcomeOf('unchanged')
  }
  const s = startUpdateScheduler({
    at: parseUpdateAt('18:30 America/New_York', '--update-at'),
    run,
    lease: o.lease,
    log,
    now: clock.now,
    sleep: clock.sleep,
    alert: async (a) => void alerts.push(a),
  })
  await finished
  await s.stop()
  return { calls, alerts, lines: lines(), last: s.last(), next: s.nextAt() }
}

test('runs at the scheduled instants of session days, under the lease, and releases it', async () => {
  const dir = await dirP
  const lease = createFileLease(join(dir, 'a.lease'))
  const r = await runScheduler({
    outcomes: [outcomeOf('updated'), outcomeOf('unchanged'), outcomeOf('updated')],
    lease,
  })
  // July 3 (a session), July 4 (a holiday) and the weekend skipped, then Monday and Tuesday.
  assert.deepEqual(r.calls, [
    '2025-07-03T22:30:00.000Z',
    '2025-07-07T22:30:00.000Z',
    '2025-07-08T22:30:00.000Z',
  ])
  assert.deepEqual(r.alerts, [])
  assert.equal(r.last?.outcome, 'updated')
  assert.equal(r.next, null)
  assert.ok(!(await readdir(dir)).includes('a.lease'), 'the lease is released after each run')
})

test('a failed or quarantined outcome, or a runner that throws, alerts the operator', async () => {
  const lease = createFileLease(join(await dirP, 'b.lease'))
  const r = await runScheduler({
    outcomes: [outcomeOf('failed'), outcomeOf('quarantined'), new Error('boom'), outcomeOf('updated')],
    lease,
  })
  assert.deepEqual(
    r.alerts.map((a) => (a.kind === 'update' ? [a.outcome.outcome, a.outcome.error] : a.kind)),
    [
      ['failed', 'the vendor answered 503'],
      ['quarantined', null],
      ['failed', 'boom'],
    ],
  )
  const errors = r.lines.filter((l) => l.level === 50).map((l) => l.msg)
  assert.equal(errors.length, 3)
  assert.match(String(errors[2]), /boom/)
})

test('another node holding the lease: the run is skipped and logged, the next day tried again', async () => {
  let tries = 0
  const busy: UpdateLease = {
    kind: 'file',
    acquire: async () => (++tries < 3 ? null : createFileLease(join(await dirP, 'c.lease')).acquire()),
  }
  const r = await runScheduler({ outcomes: [outcomeOf('updated')], lease: busy })
  assert.equal(tries, 3)
  assert.deepEqual(r.calls, ['2025-07-08T22:30:00.000Z'])
  const skipped = r.lines.filter((l) => String(l.msg).includes('another node holds the update lease'))
  assert.equal(skipped.length, 2)
})

test('stop() aborts a run in progress through its signal and waits for it', async () => {
  const { log } = memoryLogger()
  const clock = fakeClock('2025-07-03T12:00:00Z')
  let started: () => void = () => undefined
  const running = new Promise<void>((r) => {
    started = r
  })
  let sawAbort = false
  const s = startUpdateScheduler({
    at: parseUpdateAt('18:30', '--update-at'),
    lease: createFileLease(join(await dirP, 'd.lease')),
    log,
    now: clock.now,
    sleep: clock.sleep,
    alert: async () => undefined,
    run: (signal) =>
      new Promise((resolve) => {
        started()
        signal.addEventListener('abort', () => {
          sawAbort = true
          resolve(outcomeOf('failed', { message: 'aborted' }))
        })
      }),
  })
  await running
  await s.stop()
  assert.equal(sawAbort, true)
  assert.equal(s.last()?.message, 'aborted')
  assert.ok(!(await readdir(await dirP)).includes('d.lease'))
})
