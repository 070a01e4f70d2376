import assert from 'node:assert/strict'
import { join } from 'node:path'
import { describe, test } from 'node:test'
import { gzipSync } from 'node:zlib'
import { readDataset } from '../../src/engine/data/dataset-reader.ts'
import { buildImportedDataset, importDataset } from '../../src/engine/data/import/index.ts'
import { AppError } from '../../src/platform/errors.ts'
import { assertInputError, assertNothingWritten, type Expected, put, tempDir } from './import-helpers.ts'

/**
 * The importer's inputs for the macro factors: an index level (`--series`, a FRED VIXCLS file)
 * and ETF closes taken from a long OHLCV file (`--prices path=close:TICKERS`).
 */

const day = (iso: string) => Date.parse(`${iso}T00:00:00Z`) / 86_400_000
const isNull = (v: number | undefined) => v === undefined || Number.isNaN(v)

/** SPY (the calendar: five days, 2020-01-02 … 2020-01-08) and one stock-like series. */
const WIDE = [
  'date,SPY,AAA',
  '2020-01-02,100,10',
  '2020-01-03,101,11',
  '2020-01-06,102,12',
  '2020-01-07,103,13',
  '2020-01-08,104,14',
].join('\n')

async function files(entries: Record<string, string | Uint8Array>): Promise<Record<string, string>> {
  const dir = await tempDir()
  const paths: Record<string, string> = { out: join(dir, 'out') }
  for (const [name, content] of Object.entries(entries)) paths[name] = await put(dir, name, content)
  return paths
}

async function expectInputError(
  entries: Record<string, string | Uint8Array>,
  opts: (p: Record<string, string>) => { prices: string[]; series?: string[] },
  want: (p: Record<string, string>) => Expected,
): Promise<void> {
  const p = await files(entries)
  await assertInputError(importDataset({ ...opts(p), out: p.out }), want(p))
  await assertNothingWritten(p.out)
}

async function expectAppError(
  entries: Record<string, string | Uint8Array>,
  opts: (p: Record<string, string>) => { prices: string[]; series?: string[] },
  message: RegExp,
): Promise<void> {
  const p = await files(entries)
  await assert.rejects(importDataset({ ...opts(p), out: p.out }), (err: unknown) => {
    assert.ok(err instanceof AppError, String(err))
    assert.match(err.code, /^INVALID_(REQUEST|INPUT)$/)
    assert.match(err.message, message)
    return true
  })
  await assertNothingWritten(p.out)
}

describe('--series: an index level such as FRED VIXCLS', () => {
  test("FRED layout: '.' and empty cells are null, days off the calendar are dropped, a calendar day the file lacks is null", async () => {
    // 2020-01-01 is a holiday FRED lists with '.', 2020-01-04 a Saturday with a value (off the
    // calendar), 2020-01-06 is missing ('.'), 2020-01-07 empty, 2020-01-08 absent from the file.
    const vix = [
      'observation_date,VIXCLS',
      '2020-01-01,.',
      '2020-01-02,12.47',
      '2020-01-03,14.02',
      '2020-01-04,13.5',
      '2020-01-06,.',
      '2020-01-07,',
    ].join('\n')
    const p = await files({ 'p.csv': WIDE, 'VIXCLS.csv': vix })
    await importDataset({ prices: [p['p.csv']], series: [p['VIXCLS.csv']], out: p.out })
    const { dataset: ds, manifest } = await readDataset(p.out)
    assert.deepEqual(manifest.series, ['VIX'])
    assert.deepEqual(ds.series?.names, ['VIX'])
    const v = Array.from(ds.series?.values[0] ?? [])
    assert.equal(v.length, 5)
    assert.deepEqual(v.slice(0, 2), [12.47, 14.02])
    assert.ok(v.slice(2).every(isNull), `missing days are null, not zero or carried: ${v}`)
    const dropped = ds.report?.findings.find((f) => f.kind === 'dropped_rows' && f.symbol === 'VIX')
    assert.equal(dropped?.from, '2020-01-04')
    assert.match(dropped?.detail ?? '', /1 value\(s\) on days outside the price calendar/)
    assert.ok(ds.source.kind === 'import' && ds.source.inputs.some((i) => i.role === 'series'))
  })

  test('DATE,VIXCLS (the older FRED header), gzip, and an explicit =VIX for any column name', async () => {
    const p = await files({
      'p.csv': WIDE,
      'fred.csv.gz': gzipSync('DATE,VIXCLS\n2020-01-03,14.02\n2020-01-06,13.85\n'),
      'level.csv': 'date,value\n2020-01-07,13.79\n',
    })
    const a = await buildImportedDataset({ prices: [p['p.csv']], series: [p['fred.csv.gz']], out: p.out })
    assert.deepEqual(Array.from(a.series?.values[0] ?? []), [
      Number.NaN,
      14.02,
      13.85,
      Number.NaN,
      Number.NaN,
    ])
    const b = await buildImportedDataset({
      prices: [p['p.csv']],
      series: [`${p['level.csv']}=vix`],
      out: p.out,
    })
    assert.deepEqual(b.series?.names, ['VIX'])
    assert.equal(b.series?.values[0][3], 13.79)
  })

  test('a Yahoo-style table: the Close column is the level', async () => {
    const p = await files({
      'p.csv': WIDE,
      '^VIX.csv': 'Date,Open,High,Low,Close,Volume\n2020-01-02,13.46,13.72,12.42,12.47,0\n',
    })
    const ds = await buildImportedDataset({
      prices: [p['p.csv']],
      series: [`${p['^VIX.csv']}=VIX`],
      out: p.out,
    })
    assert.equal(ds.series?.values[0][0], 12.47)
  })

  test('an unknown series name is a request error', () =>
    expectAppError(
      { 'p.csv': WIDE, 's.csv': 'date,X\n2020-01-02,1\n' },
      (p) => ({ prices: [p['p.csv']], series: [`${p['s.csv']}=MOVE`] }),
      /unknown series "MOVE" \(known: VIX\)/,
    ))

  test('a value column whose series cannot be told', () =>
    expectInputError(
      { 'p.csv': WIDE, 's.csv': 'date,DGS10\n2020-01-02,1.9\n' },
      (p) => ({ prices: [p['p.csv']], series: [p['s.csv']] }),
      (p) => ({ file: p['s.csv'], line: 1, column: 'DGS10', message: /cannot tell which series.*=NAME/ }),
    ))

  test('two value columns', () =>
    expectInputError(
      { 'p.csv': WIDE, 's.csv': 'date,VIXCLS,VXVCLS\n2020-01-02,12,13\n' },
      (p) => ({ prices: [p['p.csv']], series: [p['s.csv']] }),
      (p) => ({ file: p['s.csv'], line: 1, column: 'VXVCLS', message: /one value column/ }),
    ))

  test('an unparsable number', () =>
    expectInputError(
      { 'p.csv': WIDE, 's.csv': 'DATE,VIXCLS\n2020-01-02,12.47\n2020-01-03,1a\n' },
      (p) => ({ prices: [p['p.csv']], series: [p['s.csv']] }),
      (p) => ({ file: p['s.csv'], line: 3, column: 'VIXCLS', message: /not a number: "1a"/ }),
    ))

  test('a zero level (a placeholder, not a level)', () =>
    expectInputError(
      { 'p.csv': WIDE, 's.csv': 'DATE,VIXCLS\n2020-01-02,0\n' },
      (p) => ({ prices: [p['p.csv']], series: [p['s.csv']] }),
      (p) => ({ file: p['s.csv'], line: 2, column: 'VIXCLS', message: /non-positive level 0/ }),
    ))

  test('a duplicate date', () =>
    expectInputError(
      { 'p.csv': WIDE, 's.csv': 'DATE,VIXCLS\n2020-01-02,12\n2020-01-03,13\n2020-01-03,14\n' },
      (p) => ({ prices: [p['p.csv']], series: [p['s.csv']] }),
      (p) => ({
        file: p['s.csv'],
        line: 4,
        column: 'DATE',
        message: /duplicate date 2020-01-03 \(also on line 3\)/,
      }),
    ))

  test('no value on any calendar day (only missing values, or other years)', async () => {
    for (const body of ['DATE,VIXCLS\n2020-01-02,.\n', 'DATE,VIXCLS\n2019-06-03,15.2\n2019-06-04,14.9\n']) {
      const p = await files({ 'p.csv': WIDE, 's.csv': body })
      await assert.rejects(
        importDataset({ prices: [p['p.csv']], series: [p['s.csv']], out: p.out }),
        (err: unknown) => {
          assert.ok(err instanceof AppError && err.code === 'INVALID_INPUT', String(err))
          assert.match(
            err.message,
            /VIX: no value on any day of the price calendar \(2020-01-02 … 2020-01-08\)/,
          )
          return true
        },
      )
      await assertNothingWritten(p.out)
    }
  })

  test('the same series from two files', () =>
    expectAppError(
      { 'p.csv': WIDE, 'a.csv': 'DATE,VIXCLS\n2020-01-02,12\n', 'b.csv': 'date,close\n2020-01-03,13\n' },
      (p) => ({ prices: [p['p.csv']], series: [p['a.csv'], `${p['b.csv']}=VIX`] }),
      /series VIX is given by both .*a\.csv and .*b\.csv/,
    ))
})

/** A long OHLCV file of TIP, HYG and a SPY whose closes differ from the wide file's. */
function ohlcv(rows: [string, string, number, number][]): string {
  const lines = rows.map(([t, d, close, vol]) => `${t},${d},${close},${close},${close},${close},${vol}`)
  return ['ticker,date,open,high,low,close,volume', ...lines].join('\n')
}

const OHLCV = ohlcv([
  ['TIP', '2020-01-02', 116.1, 1000],
  ['TIP', '2020-01-03', 116.5, 1100],
  ['TIP', '2020-01-06', 116.4, 1200],
  ['HYG', '2020-01-03', 88.2, 500],
  ['HYG', '2020-01-07', 88.3, 600],
  ['SPY', '2020-01-02', 99.5, 9000],
])

describe('--prices path=close: ETF closes from a long OHLCV file', () => {
  test('the close column of the listed tickers becomes their adjusted close, and nothing else', async () => {
    const p = await files({ 'p.csv': WIDE, 'ohlcv.csv': OHLCV })
    const ds = await buildImportedDataset({
      prices: [p['p.csv'], `${p['ohlcv.csv']}=close:TIP,hyg`],
      out: p.out,
    })
    assert.deepEqual(ds.symbols, ['SPY', 'AAA', 'TIP', 'HYG'])
    const px = (s: string) => Array.from(ds.prices.adj_close[ds.symbols.indexOf(s)])
    assert.deepEqual(px('TIP'), [116.1, 116.5, 116.4, Number.NaN, Number.NaN])
    assert.deepEqual(px('HYG'), [Number.NaN, 88.2, Number.NaN, 88.3, Number.NaN])
    assert.deepEqual(px('SPY'), [100, 101, 102, 103, 104], 'the unlisted SPY rows are not read')
    assert.equal(ds.prices.volume, null, 'the volume column is only read to find partial days')
    assert.equal(ds.prices.close, null)
    assert.equal(ds.securities.find((s) => s.symbol === 'TIP')?.assetType, 'etf')
  })

  test('with --volume on the same file, the volume comes from the volume reading', async () => {
    const p = await files({ 'p.csv': WIDE, 'ohlcv.csv': OHLCV })
    const ds = await buildImportedDataset({
      prices: [p['p.csv'], `${p['ohlcv.csv']}=close:TIP`],
      volume: p['ohlcv.csv'],
      out: p.out,
    })
    assert.deepEqual(
      Array.from(ds.prices.volume?.[ds.symbols.indexOf('TIP')] ?? []).slice(0, 3),
      [1000, 1100, 1200],
    )
  })

  test('without a ticker list, a ticker both files give on one day is still an error (never merged)', () =>
    expectInputError(
      { 'p.csv': WIDE, 'ohlcv.csv': OHLCV },
      (p) => ({ prices: [p['p.csv'], `${p['ohlcv.csv']}=close`] }),
      (p) => ({ file: p['ohlcv.csv'], line: 7, column: 'date', message: /duplicate SPY on 2020-01-02/ }),
    ))

  test('without =close an OHLCV file is refused (its close is not taken implicitly)', () =>
    expectInputError(
      { 'p.csv': WIDE, 'ohlcv.csv': OHLCV },
      (p) => ({ prices: [p['p.csv'], p['ohlcv.csv']] }),
      (p) => ({ file: p['ohlcv.csv'], line: 1, column: 'adj_close', message: /missing required column/ }),
    ))

  test('a listed ticker the file lacks', async () => {
    const p = await files({ 'p.csv': WIDE, 'ohlcv.csv': OHLCV })
    await assert.rejects(
      importDataset({ prices: [p['p.csv'], `${p['ohlcv.csv']}=close:TIP,USO`], out: p.out }),
      /no close for USO in this file/,
    )
    await assertNothingWritten(p.out)
  })

  test('=close on a wide file', () =>
    expectInputError(
      { 'p.csv': WIDE, 'w.csv': 'date,TIP\n2020-01-02,116\n' },
      (p) => ({ prices: [p['p.csv'], `${p['w.csv']}=close`] }),
      (p) => ({ file: p['w.csv'], line: 1, column: 'date', message: /this file is wide/ }),
    ))

  test('a malformed ticker list', () =>
    expectAppError(
      { 'p.csv': WIDE, 'ohlcv.csv': OHLCV },
      (p) => ({ prices: [p['p.csv'], `${p['ohlcv.csv']}=close:TIP,,HYG`] }),
      /"" is not a ticker/,
    ))

  test('a trailing intraday partial day (volume far below the usual) is dropped with a finding', async () => {
    const days = [
      '2020-01-02',
      '2020-01-03',
      '2020-01-06',
      '2020-01-07',
      '2020-01-08',
      '2020-01-09',
      '2020-01-10',
    ]
    const wide = ['date,SPY', ...days.map((d, i) => `${d},${100 + i}`)].join('\n')
    const rows: [string, string, number, number][] = []
    for (const t of ['TIP', 'HYG'])
      days.forEach((d, i) => {
        rows.push([t, d, 50 + i, i === days.length - 1 ? 10 : 1000])
      })
    const p = await files({ 'p.csv': wide, 'ohlcv.csv': ohlcv(rows) })
    const ds = await buildImportedDataset({
      prices: [p['p.csv'], `${p['ohlcv.csv']}=close:TIP,HYG`],
      out: p.out,
    })
    const tip = ds.prices.adj_close[ds.symbols.indexOf('TIP')]
    assert.equal(tip[5], 55)
    assert.ok(isNull(tip[6]), 'the intraday close of the last day is not a price')
    assert.equal(ds.calendar[6], day('2020-01-10'))
    const f = ds.report?.findings.find((x) => x.kind === 'dropped_rows' && x.from === '2020-01-10')
    assert.match(f?.detail ?? '', /^prices ohlcv\.csv: 2020-01-10 looks like an intraday partial day/)
  })
})
