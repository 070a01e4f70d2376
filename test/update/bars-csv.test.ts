import assert from 'node:assert/strict'
import { appendFile, readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { describe, test } from 'node:test'
import type { DailyBar } from '../../src/engine/sources/types.ts'
import { parseBarsCsv } from '../../src/engine/update/bars-csv.ts'
import {
  DATA_DIR_FILES,
  extendBars,
  readBars,
  readBarsTail,
  writeBars,
} from '../../src/engine/update/data-dir.ts'
import { InputError } from '../../src/platform/errors.ts'
import { tempDir } from '../data/import-helpers.ts'
import * as fc from '../helpers/fc.ts'

const HEADER = 'date,close,adj_close,volume,split_factor,dividend'

const bar = (date: string, close: number, volume: number | null = 1000): DailyBar => ({
  date,
  close,
  adjClose: close / 2,
  volume,
  splitFactor: 1,
  dividend: 0,
})

/** A cell as the reader must take it: JavaScript's own Number, an empty cell NaN. */
const expected = (cell: string) => (cell === '' ? Number.NaN : Number(cell))

describe('bar file parsing', () => {
  test('every number cell reads as Number of its text, bit for bit', () => {
    const decimal = fc.stringMatching(/^-?\d{0,18}(\.\d{0,25})?$/)
    const written = fc.double().map(String)
    const odd = fc.constantFrom('1e-7', '-0', '1.', '.5', '+3', '0x10', 'abc', ' 7', '-', '.', '1.2.3')
    fc.assert(
      fc.property(fc.oneof(decimal, written, odd), (cell) => {
        const [b] = parseBarsCsv(`${HEADER}\r\n2020-01-02,10,5,${cell},${cell},${cell}\r\n`, 'f.csv')
        const want = expected(cell)
        assert.ok(Object.is(b.splitFactor, want), `split_factor of ${JSON.stringify(cell)}`)
        assert.ok(Object.is(b.dividend, want), `dividend of ${JSON.stringify(cell)}`)
        assert.ok(Object.is(b.volume, cell === '' ? null : want), `volume of ${JSON.stringify(cell)}`)
      }),
      { numRuns: 2000 },
    )
  })

  test('full-precision prices round-trip through writeBars and readBars', async () => {
    const dir = await tempDir('erm3-bars-')
    const price = fc.double({ min: 1e-6, max: 1e7, noNaN: true })
    await fc.assert(
      fc.asyncProperty(fc.array(fc.tuple(price, price), { minLength: 1, maxLength: 30 }), async (ps) => {
        const bars = ps.map(([c, a], i) => ({
          ...bar(`2020-01-${String(i + 1).padStart(2, '0')}`, c),
          adjClose: a,
        }))
        await writeBars(dir, 'RT', bars)
        assert.deepEqual(await readBars(dir, 'RT'), bars)
      }),
      { numRuns: 50 },
    )
  })

  test('line ends, blank lines, spaces, a BOM, missing and extra cells', () => {
    const text = `\uFEFF${HEADER}\n\n 2020-01-02,10,5,,2,0.5 \r\n2020-01-03,11,5.5\n2020-01-06,12,6,7,1,0,extra\n`
    assert.deepEqual(parseBarsCsv(text, 'f.csv'), [
      { date: '2020-01-02', close: 10, adjClose: 5, volume: null, splitFactor: 2, dividend: 0.5 },
      {
        date: '2020-01-03',
        close: 11,
        adjClose: 5.5,
        volume: null,
        splitFactor: Number.NaN,
        dividend: Number.NaN,
      },
      { date: '2020-01-06', close: 12, adjClose: 6, volume: 7, splitFactor: 1, dividend: 0 },
    ])
  })

  test('a last line without its line end (a torn append) is ignored', () => {
    const whole = `${HEADER}\r\n2020-01-02,10,5,1,1,0\r\n`
    assert.deepEqual(parseBarsCsv(`${whole}2020-01-03,11,5.`, 'f.csv'), [bar('2020-01-02', 10, 1)])
    assert.deepEqual(parseBarsCsv(`${HEADER}\r\n`, 'f.csv'), [])
  })

  test('bad files are errors naming the file and line', () => {
    const err = (text: string, pattern: RegExp) =>
      assert.throws(
        () => parseBarsCsv(text, 'bars/X.csv'),
        (e: unknown) => e instanceof InputError && pattern.test(e.message) && /bars\/X\.csv/.test(e.message),
      )
    err('', /expected the header/)
    err(`${HEADER}`, /expected the header/)
    err('date,close\n2020-01-02,1\n', /expected the header/)
    err(`${HEADER}\n2020-1-02,10,5,1,1,0\n`, /X\.csv:2: unreadable bar: 2020-1-02/)
    err(`${HEADER}\n\n2020-01-02,10,0,1,1,0\n`, /X\.csv:3: unreadable bar/)
    err(`${HEADER}\n2020-01-02,,5,1,1,0\n`, /unreadable bar/)
    err(`${HEADER}\n2020-01-02 ,10,5,1,1,0\n`, /unreadable bar/)
  })
})

describe('extendBars', () => {
  const stored = [bar('2020-01-02', 10), bar('2020-01-03', 11.25, null)]
  const fresh = [bar('2020-01-06', 12.125), bar('2020-01-07', 1 / 3)]
  const file = (dir: string) => join(dir, DATA_DIR_FILES.bars('X'))

  test('an unchanged history gets the new lines appended: the same bytes as a rewrite', async () => {
    const [dir, ref] = [await tempDir('erm3-bars-'), await tempDir('erm3-bars-')]
    await writeBars(dir, 'X', stored)
    const held = await readBars(dir, 'X')
    const all = [...held, ...fresh]
    const before = await readFile(file(dir), 'utf8')
    await extendBars(dir, 'X', held, all)
    await writeBars(ref, 'X', all)
    const after = await readFile(file(dir), 'utf8')
    assert.ok(after.startsWith(before))
    assert.equal(after, await readFile(file(ref), 'utf8'))
    assert.deepEqual(await readBars(dir, 'X'), all)
  })

  test('a torn last line is replaced by a rewrite', async () => {
    const dir = await tempDir('erm3-bars-')
    await writeBars(dir, 'X', stored)
    await appendFile(file(dir), '2020-01-06,12.1')
    const held = await readBars(dir, 'X')
    assert.deepEqual(held, stored)
    await extendBars(dir, 'X', held, [...held, ...fresh])
    assert.deepEqual(await readBars(dir, 'X'), [...stored, ...fresh])
    assert.ok(!(await readFile(file(dir), 'utf8')).includes('12.1\r'))
  })

  test('a restated history (other bar objects) is rewritten', async () => {
    const dir = await tempDir('erm3-bars-')
    await writeBars(dir, 'X', stored)
    const held = await readBars(dir, 'X')
    const restated = [...held.map((b) => ({ ...b, adjClose: b.adjClose / 2 })), ...fresh]
    await extendBars(dir, 'X', held, restated)
    assert.deepEqual(await readBars(dir, 'X'), restated)
    const none = await tempDir('erm3-bars-')
    await extendBars(none, 'X', [], fresh)
    assert.deepEqual(await readBars(none, 'X'), fresh)
  })
})

describe('readBarsTail', () => {
  const days = Array.from({ length: 400 }, (_, i) => new Date(Date.UTC(2020, 0, 1) + i * 86_400_000))
  const all = days.map((d, i) => bar(d.toISOString().slice(0, 10), 10 + i / 7, i % 5 === 0 ? null : i))

  test('the bars from a date on and the one before, from a first read far too small', async () => {
    const dir = await tempDir('erm3-bars-')
    await writeBars(dir, 'X', all)
    const from = all[300].date
    const t = await readBarsTail(dir, 'X', from, 100)
    assert.equal(t.complete, false)
    const k = all.length - t.bars.length
    assert.ok(k <= 299, `starts at bar ${k}`)
    assert.deepEqual(t.bars, all.slice(k))
    // A torn last line is ignored, as by readBars; appending after a tail keeps the file whole.
    await appendFile(join(dir, DATA_DIR_FILES.bars('X')), '2021-02-05,12.1')
    const torn = await readBarsTail(dir, 'X', from, 4096)
    assert.deepEqual(torn.bars, all.slice(all.length - torn.bars.length))
    const fresh = [bar('2021-02-05', 12.5)]
    assert.equal(await extendBars(dir, 'X', torn.bars, [...torn.bars, ...fresh], true), 'rewritten')
    assert.deepEqual(await readBars(dir, 'X'), [...all, ...fresh])
  })

  test('a date before the first bar reads the whole file; a missing file has no bars', async () => {
    const dir = await tempDir('erm3-bars-')
    await writeBars(dir, 'X', all)
    assert.deepEqual(await readBarsTail(dir, 'X', '2019-01-01', 1000), { bars: all, complete: true })
    assert.deepEqual(await readBarsTail(dir, 'Y', '2019-01-01', 1000), { bars: [], complete: true })
  })
})
