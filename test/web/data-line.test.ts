import assert from 'node:assert/strict'
import { test } from 'node:test'
import { dataLine } from '../../src/web/data-line.ts'

test("the banner's data line: age, sessions behind when monitored, the last update and its findings", () => {
  const base = { age_days: 4, age_sessions: 2, monitored: false, stale: false, last_update: null }
  assert.equal(dataLine(undefined), '')
  assert.equal(dataLine({ ...base, age_days: null }), '')
  assert.equal(dataLine(base), ' 4 days old.')
  assert.equal(
    dataLine({
      ...base,
      monitored: true,
      stale: true,
      age_sessions: 3,
      last_update: {
        outcome: 'quarantined',
        finished_at: '2025-07-07T22:41:09.000Z',
        findings: 2,
        findings_by_kind: { large_move: 1, stale: 1 },
      },
    }),
    ' Stale: 4 days old, 3 sessions behind. Last update quarantined (2025-07-07 22:41 UTC), 2 findings: large_move 1, stale 1.',
  )
  assert.equal(
    dataLine({
      ...base,
      age_days: 1,
      age_sessions: 0,
      monitored: true,
      last_update: {
        outcome: 'updated',
        finished_at: '2025-07-08T22:40:00Z',
        findings: 0,
        findings_by_kind: {},
      },
    }),
    ' 1 day old. Last update updated (2025-07-08 22:40 UTC), 0 findings.',
  )
})
