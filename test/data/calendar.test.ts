import assert from 'node:assert/strict'
import { existsSync, readFileSync } from 'node:fs'
import { test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { nyseHolidays, nyseTradingDays } from '../../src/engine/data/calendar.ts'
import { isoFromDay, parseIsoDay } from '../../src/platform/dates.ts'

const REAL = fileURLToPath(
  new URL('../../../shared/data/real/fixture_adjclose_2019-01-02_2026-07-31.csv', import.meta.url),
)

test('NYSE holidays of known years', () => {
  const iso = (y: number) => [...nyseHolidays(y)].sort((a, b) => a - b).map(isoFromDay)
  assert.deepEqual(iso(2022), [
    '2022-01-17',
    '2022-02-21',
    '2022-04-15',
    '2022-05-30',
    '2022-06-20',
    '2022-07-04',
    '2022-09-05',
    '2022-11-24',
    '2022-12-26',
  ]) // New Year's Day 2022 fell on a Saturday: not observed on Friday 2021-12-31
  assert.ok(iso(2021).includes('2021-12-24'))
  assert.ok(iso(2008).includes('2008-03-21')) // Good Friday
  assert.ok(!iso(2006).some((d) => d.endsWith('06-19'))) // Juneteenth only from 2022
})

test('the generated calendar equals the real SPY calendar of 2019-01-02 … 2026-07-31', {
  skip: existsSync(REAL) ? false : 'shared/data/real is absent',
}, () => {
  const real = readFileSync(REAL, 'utf8')
    .split('\n')
    .slice(1)
    .filter((l) => l.length > 0)
    .map((l) => l.slice(0, 10))
  const ours = Array.from(
    nyseTradingDays(parseIsoDay('2019-01-02') ?? 0, parseIsoDay('2026-07-31') ?? 0),
    isoFromDay,
  )
  assert.equal(real.length, 1905)
  assert.deepEqual(ours, real)
})
