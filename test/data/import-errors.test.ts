import assert from 'node:assert/strict'
import { join } from 'node:path'
import { describe, test } from 'node:test'
import { gzipSync } from 'node:zlib'
import { readDataset } from '../../src/engine/data/dataset-reader.ts'
import { importDataset } from '../../src/engine/data/import/index.ts'
import { InputError } from '../../src/platform/errors.ts'
import * as fc from '../helpers/fc.ts'
import {
  assertInputError,
  assertNothingWritten,
  type Expected,
  put,
  snapshot,
  tempDir,
} from './import-helpers.ts'
import { cellsOf, defectArb, inject, render, tableArb } from './wide-csv-arb.ts'

const WIDE_OK = 'date,SPY,AAA\n2020-01-02,100,10\n2020-01-03,101,11\n2020-01-06,102,12\n'

/** Writes the named files, runs the import and expects an InputError at `want` with nothing written. */
async function expectFailure(
  files: Record<string, string | Uint8Array>,
  opts: (paths: Record<string, string>) => { prices: string[]; [k: string]: unknown },
  want: (paths: Record<string, string>) => Expected,
): Promise<void> {
  const dir = await tempDir()
  const paths: Record<string, string> = {}
  for (const [name, content] of Object.entries(files)) paths[name] = await put(dir, name, content)
  const out = join(dir, 'out')
  await assertInputError(importDataset({ ...opts(paths), out }), want(paths))
  await assertNothingWritten(out)
}

const prices =
  (name = 'p.csv') =>
  (p: Record<string, string>) => ({ prices: [p[name]] })

describe('data import rejects malformed inputs with file, line and column', () => {
  test('unparseable number', () =>
    expectFailure({ 'p.csv': 'date,SPY,AAA\n2020-01-02,100,10\n2020-01-03,101,1.2.3\n' }, prices(), (p) => ({
      file: p['p.csv'],
      line: 3,
      column: 'AAA',
      message: /not a number: "1\.2\.3"/,
    })))

  test('non-positive price', () =>
    expectFailure({ 'p.csv': 'date,SPY,AAA\n2020-01-02,100,10\n2020-01-03,0,11\n' }, prices(), (p) => ({
      file: p['p.csv'],
      line: 3,
      column: 'SPY',
      message: /non-positive price 0/,
    })))

  test('duplicate date', () =>
    expectFailure(
      { 'p.csv': 'date,SPY\n2020-01-02,100\n2020-01-03,101\n2020-01-03,102\n' },
      prices(),
      (p) => ({
        file: p['p.csv'],
        line: 4,
        column: 'date',
        message: /duplicate date 2020-01-03 \(also on line 3\)/,
      }),
    ))

  test('unknown date format', () =>
    expectFailure({ 'p.csv': 'Date,SPY\n2020-01-02,100\n02.01.2020,101\n' }, prices(), (p) => ({
      file: p['p.csv'],
      line: 3,
      column: 'Date',
      message: /unknown date format "02\.01\.2020"/,
    })))

  test('missing required column (wide: no date column)', () =>
    expectFailure({ 'p.csv': 'when,SPY\n2020-01-02,100\n' }, prices(), (p) => ({
      file: p['p.csv'],
      line: 1,
      column: 'date',
      message: /missing required column "date"/,
    })))

  test('missing required column (long: no adj_close)', () =>
    expectFailure({ 'p.csv': 'date,ticker,close\n2020-01-02,SPY,100\n' }, prices(), (p) => ({
      file: p['p.csv'],
      line: 1,
      column: 'adj_close',
    })))

  test('duplicate ticker column after canonical spelling (BRK-B vs BRK.B)', () =>
    expectFailure({ 'p.csv': 'date,SPY,BRK-B,BRK.B\n2020-01-02,100,1,1\n' }, prices(), (p) => ({
      file: p['p.csv'],
      line: 1,
      column: 4,
      message: /duplicate ticker column BRK\.B/,
    })))

  test('empty file', () =>
    expectFailure({ 'p.csv': '' }, prices(), (p) => ({
      file: p['p.csv'],
      line: 1,
      column: 1,
      message: /empty file/,
    })))

  test('header without data rows', () =>
    expectFailure({ 'p.csv': 'date,SPY\n' }, prices(), (p) => ({ file: p['p.csv'], line: 2, column: 1 })))

  test('ragged row', () =>
    expectFailure({ 'p.csv': 'date,SPY,AAA\n2020-01-02,100,10\n2020-01-03,101\n' }, prices(), (p) => ({
      file: p['p.csv'],
      line: 3,
      column: 3,
      message: /ragged row: 2 fields where the header has 3/,
    })))

  test('unclosed quote', () =>
    expectFailure({ 'p.csv': 'date,SPY\n2020-01-02,100\n2020-01-03,"101\n' }, prices(), (p) => ({
      file: p['p.csv'],
      line: 3,
    })))

  test('error lines in a gzip-compressed CSV', () =>
    expectFailure(
      { 'p.csv.gz': gzipSync('date,SPY\n2020-01-02,100\n2020-01-03,-1\n') },
      prices('p.csv.gz'),
      (p) => ({
        file: p['p.csv.gz'],
        line: 3,
        column: 'SPY',
      }),
    ))

  test('the same (ticker, date) in two price files', () =>
    expectFailure(
      { 'a.csv': WIDE_OK, 'b.csv': 'Symbol,Date,AdjClose\nSPY,2020-01-07,103\nAAA,2020-01-03,11\n' },
      (p) => ({ prices: [p['a.csv'], p['b.csv']] }),
      (p) => ({
        file: p['b.csv'],
        line: 3,
        column: 'Date',
        message: /duplicate AAA on 2020-01-03 \(first given at .*a\.csv:3\)/,
      }),
    ))

  test('the same (ticker, date) twice in a long file', () =>
    expectFailure(
      { 'l.csv': 'ticker,date,adj_close\nSPY,2020-01-02,1\nSPY,2020-01-03,2\nSPY,2020-01-02,3\n' },
      prices('l.csv'),
      (p) => ({ file: p['l.csv'], line: 4, column: 'date' }),
    ))

  test('invalid ticker in a long file', () =>
    expectFailure(
      { 'l.csv': 'ticker,date,adj_close\nSPY,2020-01-02,1\n$$$,2020-01-02,2\n' },
      prices('l.csv'),
      (p) => ({
        file: p['l.csv'],
        line: 3,
        column: 'ticker',
      }),
    ))

  test('securities file: bad CIK', () =>
    expectFailure(
      { 'p.csv': WIDE_OK, 's.csv': 'Symbol,Security,GICS Sector,CIK\nAAA,"Aaa, Inc.",Energy,12x\n' },
      (p) => ({ prices: [p['p.csv']], securities: p['s.csv'] }),
      (p) => ({ file: p['s.csv'], line: 2, column: 'CIK', message: /not a CIK/ }),
    ))

  test('classification map: sector ETF without a price series', () =>
    expectFailure(
      {
        'p.csv': WIDE_OK,
        's.csv': 'Symbol,Security,GICS Sector,GICS Sub-Industry\nAAA,Aaa,Energy,Oil\n',
        'm.csv':
          'gics_sector,sector_etf,gics_sub_industry,industry_etf,alt_industry_etf,note\nEnergy,XLE,Oil,,,\n',
      },
      (p) => ({ prices: [p['p.csv']], securities: p['s.csv'], classificationMap: p['m.csv'] }),
      (p) => ({
        file: p['m.csv'],
        line: 2,
        column: 'sector_etf',
        message: /sector ETF XLE .* has no price series/,
      }),
    ))

  test('securities file: a priced stock whose sector the map does not know', () =>
    expectFailure(
      {
        'p.csv': 'date,SPY,XLF,AAA\n2020-01-02,100,10,1\n',
        's.csv': 'Symbol,Security,GICS Sector,GICS Sub-Industry\nZZZ,Zzz,Energy,Oil\nAAA,Aaa,Energy,Oil\n',
        'm.csv': 'gics_sector,sector_etf,gics_sub_industry,industry_etf\nFinancials,XLF,Banks,\n',
      },
      (p) => ({ prices: [p['p.csv']], securities: p['s.csv'], classificationMap: p['m.csv'] }),
      (p) => ({ file: p['s.csv'], line: 3, column: 'GICS Sector', message: /sector "Energy" of AAA/ }),
    ))

  test('rates: column without a tenor', () =>
    expectFailure(
      { 'p.csv': WIDE_OK, 'r.csv': 'date,value\n2020-01-02,1.5\n' },
      (p) => ({ prices: [p['p.csv']], rates: [p['r.csv']] }),
      (p) => ({ file: p['r.csv'], line: 1, column: 'value', message: /=TENOR/ }),
    ))

  test('rates: unparseable value', () =>
    expectFailure(
      { 'p.csv': WIDE_OK, 'r.csv': 'observation_date,DTB3\n2020-01-02,1.5\n2020-01-03,n.a.\n' },
      (p) => ({ prices: [p['p.csv']], rates: [p['r.csv']] }),
      (p) => ({ file: p['r.csv'], line: 3, column: 'DTB3' }),
    ))

  test('volume: negative volume', () =>
    expectFailure(
      {
        'p.csv': WIDE_OK,
        'v.csv': 'ticker,date,close,volume\nSPY,2020-01-02,100,5\nSPY,2020-01-03,101,-5\n',
      },
      (p) => ({ prices: [p['p.csv']], volume: p['v.csv'] }),
      (p) => ({ file: p['v.csv'], line: 3, column: 'volume', message: /negative volume/ }),
    ))
})

describe('data import: fundamentals and atomicity', () => {
  test('fundamentals: invalid JSON and CIK mismatch', async () => {
    const dir = await tempDir()
    const p = await put(dir, 'p.csv', WIDE_OK)
    const bad = await put(dir, 'f/CIK0000320193.json', '{"cik": 320193,\n "facts": {,}}')
    const out = join(dir, 'out')
    await assertInputError(importDataset({ prices: [p], fundamentals: join(dir, 'f'), out }), {
      file: bad,
      line: 2,
    })
    await assertNothingWritten(out)
    const dir2 = await tempDir()
    const p2 = await put(dir2, 'p.csv', WIDE_OK)
    const wrong = await put(dir2, 'f/CIK0000320193.json.gz', gzipSync('{"cik": 1, "facts": {}}'))
    const err = await importDataset({
      prices: [p2],
      fundamentals: join(dir2, 'f'),
      out: join(dir2, 'out'),
    }).catch((e: unknown) => e)
    assert.ok(err instanceof InputError)
    assert.equal(err.location.file, wrong)
    assert.match(err.message, /CIK 320193 but the document says 1/)
  })

  test('SPY missing entirely is an error', async () => {
    const dir = await tempDir()
    const p = await put(dir, 'p.csv', 'date,AAA\n2020-01-02,1\n')
    const out = join(dir, 'out')
    await assert.rejects(
      importDataset({ prices: [p], out }),
      (err: unknown) => err instanceof InputError && /SPY/.test(err.message),
    )
    await assertNothingWritten(out)
  })

  test('a failed import leaves an existing dataset at out unchanged', async () => {
    const dir = await tempDir()
    const good = await put(dir, 'good.csv', WIDE_OK)
    const bad = await put(dir, 'bad.csv', 'date,SPY\n2020-01-02,100\n2020-01-03,abc\n')
    const out = join(dir, 'out')
    await importDataset({ prices: [good], out })
    const before = await snapshot(out)
    assert.ok(before.size > 0)
    await assertInputError(importDataset({ prices: [bad], out }), { file: bad, line: 3, column: 'SPY' })
    assert.deepEqual(await snapshot(out), before)
  })
})

/** Random wide CSVs, with and without one injected defect (generators in wide-csv-arb.ts). */
describe('data import properties (fast-check)', () => {
  test('one injected defect → InputError at the injected line, nothing written', async () => {
    const root = await tempDir('erm3-import-prop-')
    let run = 0
    await fc.assert(
      fc.asyncProperty(tableArb, defectArb, async (t, d) => {
        const dir = join(root, `run-${run++}`)
        const { cells, line } = inject(t, d)
        const file = await put(dir, 'prices.csv', render(cells, t.eol))
        const out = join(dir, 'out')
        await assertInputError(importDataset({ prices: [file], out }), { file, line })
        await assertNothingWritten(out)
      }),
      { numRuns: 120 },
    )
  })

  test('valid random wide CSVs import and read back bit-identical', async () => {
    const root = await tempDir('erm3-import-prop-')
    let run = 0
    await fc.assert(
      fc.asyncProperty(tableArb, async (t) => {
        const dir = join(root, `run-${run++}`)
        const file = await put(dir, 'prices.csv', render(cellsOf(t), t.eol))
        const out = join(dir, 'out')
        await importDataset({ prices: [file], out })
        const { dataset } = await readDataset(out)
        assert.deepEqual(
          Array.from(dataset.calendar),
          t.rows.map((r) => r.day),
        )
        const symbols = ['SPY', ...t.tickers.map((x) => x.replace('-', '.'))]
        assert.deepEqual(dataset.symbols, symbols)
        t.rows.forEach((r, i) => {
          assert.ok(Object.is(dataset.prices.adj_close[0][i], r.spy))
          r.others.forEach((v, c) => {
            const got = dataset.prices.adj_close[c + 1][i]
            assert.ok(Object.is(got, v ?? Number.NaN), `${symbols[c + 1]} row ${i}: ${got} vs ${v}`)
          })
        })
      }),
      { numRuns: 40 },
    )
  })
})
