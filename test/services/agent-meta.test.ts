/**
 * `_agent.data_freshness`: the 16:00 New York close of `data_as_of`, in UTC. The reference here
 * asks the platform's time-zone database (Intl, America/New_York) what the wall clock reads at the
 * two candidate instants, independently of the daylight-time rule the service implements; and
 * the answer must not depend on which dates were asked before (the service keeps the last one).
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { dataFreshness } from '../../src/services/agent-meta.ts'
import * as fc from '../helpers/fc.ts'

const newYork = new Intl.DateTimeFormat('en-US', {
  timeZone: 'America/New_York',
  hourCycle: 'h23',
  year: 'numeric',
  month: '2-digit',
  day: '2-digit',
  hour: '2-digit',
  minute: '2-digit',
})

/** The instant whose New York wall clock reads `day` 16:00. */
function closeInNewYork(day: string): string {
  const [y, m, d] = day.split('-').map(Number) as [number, number, number]
  for (const utcHour of [20, 21]) {
    const t = new Date(Date.UTC(y, m - 1, d, utcHour))
    const parts = Object.fromEntries(newYork.formatToParts(t).map((p) => [p.type, p.value]))
    if (`${parts.year}-${parts.month}-${parts.day}` === day && parts.hour === '16' && parts.minute === '00')
      return t.toISOString()
  }
  throw new Error(`no 16:00 in New York on ${day}`)
}

const day = fc
  .date({ min: new Date(Date.UTC(2006, 0, 1)), max: new Date(Date.UTC(2035, 11, 31)), noInvalidDate: true })
  .map((t) => t.toISOString().slice(0, 10))

describe('data freshness', () => {
  it('is the 16:00 New York close of data_as_of, whatever was asked before', () => {
    fc.assert(
      fc.property(fc.array(day, { minLength: 1, maxLength: 8 }), (days) => {
        // Each day asked twice in a row and again after the others: a kept answer must be its own.
        for (const d of [...days, ...days]) {
          assert.equal(dataFreshness(d), closeInNewYork(d), d)
          assert.equal(dataFreshness(d), closeInNewYork(d), d)
        }
      }),
      { numRuns: 200 },
    )
  })

  it('around the daylight-time changes of 2024 (10 March, 3 November) and of 2006 (2 April, 29 October)', () => {
    for (const [d, utc] of [
      ['2006-03-31', '2006-03-31T21:00:00.000Z'],
      ['2006-04-03', '2006-04-03T20:00:00.000Z'],
      ['2006-10-27', '2006-10-27T20:00:00.000Z'],
      ['2006-10-30', '2006-10-30T21:00:00.000Z'],
      ['2024-03-08', '2024-03-08T21:00:00.000Z'],
      ['2024-03-11', '2024-03-11T20:00:00.000Z'],
      ['2024-11-01', '2024-11-01T20:00:00.000Z'],
      ['2024-11-04', '2024-11-04T21:00:00.000Z'],
    ] as const)
      assert.equal(dataFreshness(d), utc)
  })
})
