import assert from 'node:assert/strict'
import { test } from 'node:test'
import { parseIsoDay } from '../../../src/platform/dates.ts'
import { parseUpdateAt } from '../../../src/platform/update-at.ts'
import { nextRunAt, zonedInstant } from '../../../src/services/updates/schedule.ts'

const iso = (ms: number) => new Date(ms).toISOString()
const at = (raw: string) => parseUpdateAt(raw, '--update-at')
const next = (raw: string, now: string) => iso(nextRunAt(at(raw), Date.parse(now)))
const day = (s: string) => parseIsoDay(s) ?? Number.NaN

test('parseUpdateAt: a time with an optional IANA zone', () => {
  assert.deepEqual(at('18:30'), { hour: 18, minute: 30, zone: 'America/New_York' })
  assert.deepEqual(at(' 6:05 Europe/London '), { hour: 6, minute: 5, zone: 'Europe/London' })
  assert.deepEqual(at('00:00 UTC'), { hour: 0, minute: 0, zone: 'UTC' })
})

test('parseUpdateAt: a bad value is a configuration error that names the flag and the value', () => {
  for (const bad of ['24:00', '18:60', 'noon', '', '18.30', '18:30 New York']) {
    assert.throws(
      () => parseUpdateAt(bad, 'ERM3_UPDATE_AT'),
      (e: Error & { code?: string }) => e.code === 'CONFIG_INVALID' && e.message.startsWith('ERM3_UPDATE_AT'),
      bad,
    )
  }
  assert.throws(() => at('18:30 Mars/Olympus_Mons'), /"Mars\/Olympus_Mons" is not an IANA time zone/)
  assert.throws(() => at('7pm'), /HH:MM.*got "7pm"/)
})

test('nextRunAt: later the same session day, else the next session day', () => {
  // July 2025: EDT (UTC-4). July 3 is a session (early close), July 4 a holiday.
  assert.equal(next('18:30', '2025-07-03T12:00:00Z'), '2025-07-03T22:30:00.000Z')
  assert.equal(next('18:30', '2025-07-03T22:30:00Z'), '2025-07-07T22:30:00.000Z') // strictly after now
  assert.equal(next('18:30', '2025-07-03T22:31:00Z'), '2025-07-07T22:30:00.000Z') // holiday, weekend
  // Saturday evening in New York: Monday.
  assert.equal(next('18:30', '2025-07-12T23:00:00Z'), '2025-07-14T22:30:00.000Z')
  // The date is the zone's: 01:00 UTC on Tuesday is still Monday evening in New York.
  assert.equal(next('21:00', '2025-07-08T00:30:00Z'), '2025-07-08T01:00:00.000Z')
})

test('nextRunAt: the same wall-clock time across spring forward and fall back', () => {
  // 2025-03-09 (Sunday) New York goes from EST (-5) to EDT (-4).
  assert.equal(next('18:30', '2025-03-07T22:00:00Z'), '2025-03-07T23:30:00.000Z')
  assert.equal(next('18:30', '2025-03-07T23:31:00Z'), '2025-03-10T22:30:00.000Z')
  // 2025-11-02 (Sunday) back to EST.
  assert.equal(next('18:30', '2025-10-31T22:31:00Z'), '2025-11-03T23:30:00.000Z')
  // London changes on 2025-03-30: 07:00 GMT on Friday, 07:00 BST (06:00 UTC) on Monday.
  assert.equal(next('07:00 Europe/London', '2025-03-27T08:00:00Z'), '2025-03-28T07:00:00.000Z')
  assert.equal(next('07:00 Europe/London', '2025-03-28T07:00:00Z'), '2025-03-31T06:00:00.000Z')
})

test('zonedInstant: on the change days themselves', () => {
  const ny = 'America/New_York'
  // Spring forward at 02:00 EST (07:00 UTC): before it, after it, and in the skipped hour.
  assert.equal(iso(zonedInstant(day('2025-03-09'), 1, 30, ny)), '2025-03-09T06:30:00.000Z')
  assert.equal(iso(zonedInstant(day('2025-03-09'), 3, 30, ny)), '2025-03-09T07:30:00.000Z')
  assert.equal(iso(zonedInstant(day('2025-03-09'), 2, 30, ny)), '2025-03-09T07:30:00.000Z')
  assert.equal(iso(zonedInstant(day('2025-03-09'), 18, 30, ny)), '2025-03-09T22:30:00.000Z')
  // Fall back at 02:00 EDT (06:00 UTC): 01:30 happens twice, the first (EDT) is taken.
  assert.equal(iso(zonedInstant(day('2025-11-02'), 1, 30, ny)), '2025-11-02T05:30:00.000Z')
  assert.equal(iso(zonedInstant(day('2025-11-02'), 2, 30, ny)), '2025-11-02T07:30:00.000Z')
  assert.equal(iso(zonedInstant(day('2025-11-02'), 18, 30, ny)), '2025-11-02T23:30:00.000Z')
  assert.equal(iso(zonedInstant(day('2025-11-01'), 18, 30, ny)), '2025-11-01T22:30:00.000Z')
})
