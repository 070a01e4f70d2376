import assert from 'node:assert/strict'
import { test } from 'node:test'
import { parse } from 'csv-parse/sync'
import { csvDocument } from '../../src/platform/csv.ts'
import { isoFromDay, monthOf, parseFlexibleDay, parseIsoDay, yearOf } from '../../src/platform/dates.ts'
import * as fc from '../helpers/fc.ts'

test('CSV writer output reads back identically with csv-parse (RFC 4180)', () => {
  fc.assert(
    fc.property(
      fc.array(
        fc.array(
          fc.oneof(fc.string(), fc.double({ noNaN: true, noDefaultInfinity: true }), fc.constant(null)),
          { minLength: 3, maxLength: 3 },
        ),
        { maxLength: 20 },
      ),
      (rows) => {
        const text = csvDocument(['a', 'b', 'c'], rows)
        assert.ok(text.endsWith('\r\n'))
        const back = parse(text, { columns: true, relax_column_count: false }) as Record<string, string>[]
        assert.equal(back.length, rows.length)
        for (const [i, r] of rows.entries()) {
          for (const [j, k] of ['a', 'b', 'c'].entries()) {
            const v = r[j]
            assert.equal(back[i][k], v === null ? '' : typeof v === 'number' ? String(v) : v)
            // numbers come back exactly (CSV has no -0: String(-0) is "0")
            if (typeof v === 'number') assert.ok(Number(back[i][k]) === v, `${v} read back as ${back[i][k]}`)
          }
        }
      },
    ),
    { numRuns: 500 },
  )
})

test('day numbers convert to the calendar exactly as Date does (years 0000–9999 and beyond)', () => {
  const viaDate = (d: number) => new Date(d * 86_400_000)
  const check = (d: number) => {
    const date = viaDate(d)
    assert.equal(isoFromDay(d), date.toISOString().slice(0, 10), `day ${d}`)
    assert.equal(yearOf(d), date.getUTCFullYear(), `year of ${d}`)
    assert.equal(monthOf(d), date.getUTCMonth() + 1, `month of ${d}`)
  }
  // Leap rules at century and 400-year boundaries, month ends, the epoch, negative days.
  for (const iso of [
    '1900-02-28',
    '1900-03-01',
    '2000-02-29',
    '2000-03-01',
    '2100-02-28',
    '1970-01-01',
    '1969-12-31',
    '0000-03-01',
    '9999-12-31',
  ])
    check(Date.parse(`${iso}T00:00:00Z`) / 86_400_000)
  fc.assert(fc.property(fc.integer({ min: -800_000, max: 3_000_000 }), (d) => check(d)))
})

test('dates: ISO round trip and the accepted spellings', () => {
  fc.assert(fc.property(fc.integer({ min: -50000, max: 80000 }), (d) => parseIsoDay(isoFromDay(d)) === d))
  const d = parseIsoDay('2024-01-02')
  for (const s of [
    '2024-01-02',
    '2024-01-02 00:00:00+00:00',
    '2024-01-02T00:00:00Z',
    '20240102',
    '2024/1/2',
    '01/02/2024',
  ]) {
    assert.equal(parseFlexibleDay(s), d, s)
  }
  for (const s of ['2024-02-30', '2024-13-01', '02-01-2024', 'yesterday', ''])
    assert.equal(parseFlexibleDay(s), null, s)
})
