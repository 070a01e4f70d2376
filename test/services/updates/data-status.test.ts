import assert from 'node:assert/strict'
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, test } from 'node:test'
import type { DataStatus } from '../../../src/services/context.ts'
import type { OperatorAlert } from '../../../src/services/updates/alert.ts'
import {
  createDataWatch,
  dataAge,
  readUpdateStatus,
  sessionsDue,
} from '../../../src/services/updates/data-status.ts'
import { startTestApp } from '../../helpers/test-app.ts'
import { memoryLogger, outcomeOf } from './helpers.ts'

const t = (iso: string) => Date.parse(iso)

test('sessionsDue: sessions after data_as_of whose close was at least 4 hours ago', () => {
  // July 3 2025 closes at 13:00 EDT (17:00 UTC): due from 21:00 UTC.
  assert.equal(sessionsDue('2025-07-02', t('2025-07-03T20:59:59Z')), 0)
  assert.equal(sessionsDue('2025-07-02', t('2025-07-03T21:00:00Z')), 1)
  // July 4 (holiday) and the weekend add nothing; Monday's 16:00 close is due at 20:00 EDT.
  assert.equal(sessionsDue('2025-07-02', t('2025-07-07T23:59:00Z')), 1)
  assert.equal(sessionsDue('2025-07-02', t('2025-07-08T00:00:00Z')), 2)
  // In winter (EST) the same close is due at 01:00 UTC the next day.
  assert.equal(sessionsDue('2025-01-10', t('2025-01-14T00:59:00Z')), 0)
  assert.equal(sessionsDue('2025-01-10', t('2025-01-14T01:00:00Z')), 1)
  assert.equal(sessionsDue('2025-07-08', t('2025-07-08T12:00:00Z')), 0)
})

test('dataAge: stale only when monitored and past the limit', () => {
  const now = t('2025-07-10T12:00:00Z') // sessions due after July 2: July 3, 7, 8, 9
  assert.deepEqual(dataAge('2025-07-02', now, { staleAfterSessions: 4, monitored: true }), {
    data_as_of: '2025-07-02',
    age_days: 8,
    age_sessions: 4,
    stale_after_sessions: 4,
    monitored: true,
    stale: false,
  })
  assert.equal(dataAge('2025-07-02', now, { staleAfterSessions: 3, monitored: true }).stale, true)
  assert.equal(dataAge('2025-07-02', now, { staleAfterSessions: 3, monitored: false }).stale, false)
  assert.equal(dataAge(null, now, { staleAfterSessions: 3, monitored: true }).age_sessions, null)
})

const dirP = mkdtemp(join(tmpdir(), 'erm3-status-'))
after(async () => rm(await dirP, { recursive: true, force: true }))

test('readUpdateStatus: a local store root with, without, and with a broken status/update.json', async () => {
  const root = await dirP
  assert.equal(await readUpdateStatus({ url: root, remote: null }), null)
  await mkdir(join(root, 'status'))
  const outcome = outcomeOf('updated')
  await writeFile(join(root, 'status', 'update.json'), JSON.stringify(outcome))
  assert.deepEqual(await readUpdateStatus({ url: root, remote: null }), outcome)
  await writeFile(join(root, 'status', 'update.json'), '{"hello": 1}')
  await assert.rejects(
    readUpdateStatus({ url: root, remote: null }),
    /status\/update.json is not an update outcome/,
  )
  // A remote store: read through its blob reader.
  const remote = {
    url: 's3://bucket/store',
    get: async (key: string) =>
      key === 'status/update.json' ? new TextEncoder().encode(JSON.stringify(outcome)) : null,
    getRange: async () => null,
    close() {},
  }
  assert.deepEqual(await readUpdateStatus({ url: remote.url, remote }), outcome)
})

test('createDataWatch: one stale alert per episode', async () => {
  const alerts: OperatorAlert[] = []
  const status: DataStatus = { lastUpdate: null, readError: null, scheduled: false }
  let dataAsOf = '2025-07-01'
  let read = async () => outcomeOf('failed')
  const { log } = memoryLogger()
  const watch = createDataWatch({
    status,
    read: () => read(),
    dataAsOf: () => dataAsOf,
    staleAfterSessions: 2,
    alert: async (a) => void alerts.push(a),
    log,
    now: () => t('2025-07-10T12:00:00Z'),
  })
  await watch.refresh()
  await watch.refresh()
  assert.equal(alerts.length, 1)
  assert.deepEqual(alerts[0], {
    kind: 'stale',
    staleness: { data_as_of: '2025-07-01', age_sessions: 5, stale_after_sessions: 2 },
  })
  assert.equal(status.lastUpdate?.outcome, 'failed')
  dataAsOf = '2025-07-09'
  await watch.refresh()
  read = async () => {
    throw new Error('access denied')
  }
  dataAsOf = '2025-07-02'
  await watch.refresh()
  assert.equal(alerts.length, 2, 'stale again after being fresh: a new episode')
  assert.equal(status.readError, 'access denied')
})

test('GET /health: the data component, and degraded when stale', async () => {
  const app = await startTestApp()
  after(() => app.close())
  const health = async () => (await app.client.call('getHealth')).ok()
  // The fixture store carries no update status and no node schedules one: old data is not stale.
  let h = await health()
  assert.equal(h.status, 'ok')
  assert.equal(h.data.data_as_of, h.model.data_as_of)
  assert.equal(h.data.monitored, false)
  assert.equal(h.data.stale, false)
  assert.equal(h.data.last_update, null)
  assert.ok((h.data.age_sessions ?? 0) > 100)
  app.ctx.dataStatus = {
    lastUpdate: outcomeOf('quarantined', { message: 'held back: see /srv/erm3/data/reports/x.json' }),
    readError: null,
    scheduled: false,
  }
  h = await health()
  assert.equal(h.status, 'degraded')
  assert.equal(h.data.stale, true)
  assert.deepEqual(h.data.last_update, {
    outcome: 'quarantined',
    started_at: '2025-07-07T22:30:00.000Z',
    finished_at: '2025-07-07T22:41:00.000Z',
    message: 'held back: see …',
    error: null,
    days: [],
    build: null,
    findings: 1,
    findings_by_kind: { large_move: 1 },
  })
})
