import assert from 'node:assert/strict'
import { test } from 'node:test'
import { parse } from 'csv-parse/sync'
import fc from 'fast-check'
import { csvDocument } from '../../src/platform/csv.ts'
import { isoFromDay, parseFlexibleDay, parseIsoDay } from '../../src/platform/dates.ts'

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
