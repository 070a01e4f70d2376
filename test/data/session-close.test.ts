import assert from 'node:assert/strict'
import { test } from 'node:test'
import { isSession, sessionClose } from '../../src/engine/data/calendar.ts'
import { parseIsoDay } from '../../src/platform/dates.ts'

const day = (iso: string): number => {
  const d = parseIsoDay(iso)
  if (d === null) throw new Error(`bad date ${iso}`)
  return d
}
const close = (iso: string) => {
  const c = sessionClose(day(iso))
  return c ? `${String(c.hour).padStart(2, '0')}:${String(c.minute).padStart(2, '0')}` : 'closed'
}

// The NYSE's published early closes (13:00 ET), 2019–2026.
const EARLY = [
  '2019-07-03',
  '2019-11-29',
  '2019-12-24',
  '2020-11-27',
  '2020-12-24',
  '2021-11-26',
  '2022-11-25',
  '2023-07-03',
  '2023-11-24',
  '2024-07-03',
  '2024-11-29',
  '2024-12-24',
  '2025-07-03',
  '2025-11-28',
  '2025-12-24',
  '2026-11-27',
  '2026-12-24',
]

// Weekdays around those holidays on which the exchange was closed.
const CLOSED = [
  '2019-07-04',
  '2019-11-28',
  '2019-12-25',
  '2020-07-03',
  '2020-11-26',
  '2020-12-25',
  '2021-07-05',
  '2021-11-25',
  '2021-12-24',
  '2022-07-04',
  '2022-11-24',
  '2022-12-26',
  '2023-07-04',
  '2023-11-23',
  '2023-12-25',
  '2024-07-04',
  '2024-11-28',
  '2024-12-25',
  '2025-01-09',
  '2025-07-04',
  '2025-11-27',
  '2025-12-25',
  '2026-01-01',
  '2026-01-19',
  '2026-02-16',
  '2026-04-03',
  '2026-05-25',
  '2026-06-19',
  '2026-07-03',
  '2026-09-07',
  '2026-11-26',
  '2026-12-25',
]

// Full sessions next to them, where a naive rule would close early.
const FULL = [
  '2019-07-05',
  '2019-12-23',
  '2019-12-26',
  '2019-12-31',
  '2020-07-02',
  '2020-12-23',
  '2021-07-02',
  '2021-12-23',
  '2022-07-01',
  '2022-12-23',
  '2023-12-22',
  '2023-12-26',
  '2024-07-05',
  '2024-12-23',
  '2024-12-26',
  '2025-07-02',
  '2025-12-26',
  '2026-07-02',
  '2026-12-23',
]

test('sessionClose: the published early closes of 2019–2026 are at 13:00', () => {
  for (const d of EARLY) assert.equal(close(d), '13:00', d)
})

test('sessionClose: holidays and special closures are closed, their neighbours full sessions', () => {
  for (const d of CLOSED) {
    assert.equal(close(d), 'closed', d)
    assert.equal(isSession(day(d)), false, d)
  }
  for (const d of FULL) {
    assert.equal(close(d), '16:00', d)
    assert.equal(isSession(day(d)), true, d)
  }
})

test('sessionClose: weekends are closed; every other weekday of 2019–2026 closes at 16:00', () => {
  const special = new Set([...EARLY, ...CLOSED])
  let sessions = 0
  for (let d = day('2019-01-01'); d <= day('2026-12-31'); d++) {
    const date = new Date(d * 86_400_000)
    const iso = date.toISOString().slice(0, 10)
    const dow = date.getUTCDay()
    if (dow === 0 || dow === 6) {
      assert.equal(close(iso), 'closed', iso)
      continue
    }
    if (special.has(iso)) continue
    const c = close(iso)
    // Other weekday holidays (New Year, MLK, …) are closed; nothing else closes early.
    assert.ok(c === '16:00' || c === 'closed', `${iso}: ${c}`)
    if (c === '16:00') sessions++
  }
  // 252 ± 2 sessions a year, less the early closes counted apart.
  assert.ok(sessions > 8 * 248 - EARLY.length && sessions < 8 * 254, String(sessions))
})

test('sessionClose: the rule changes before 2013', () => {
  // July 4 on a Thursday: the early close was Friday July 5 until 2012, July 3 since 2013.
  assert.equal(close('2002-07-03'), '16:00')
  assert.equal(close('2002-07-05'), '13:00')
  assert.equal(close('1996-07-05'), '13:00')
  assert.equal(close('2013-07-03'), '13:00')
  assert.equal(close('2013-07-05'), '16:00')
  assert.equal(close('2008-07-03'), '13:00') // a Thursday (July 4 a Friday)
  assert.equal(close('1997-12-26'), '13:00')
  assert.equal(close('2003-12-26'), '13:00')
  assert.equal(close('2008-12-26'), '16:00')
  assert.equal(close('1993-11-26'), '13:00')
  assert.equal(close('1991-11-29'), '16:00') // before 1993: not modelled
})
