import assert from 'node:assert/strict'
import { join } from 'node:path'
import { describe, test } from 'node:test'
import { gzipSync } from 'node:zlib'
import { parquetWriteBuffer } from 'hyparquet-writer'
import { readDataset } from '../../src/engine/data/dataset-reader.ts'
import type { Dataset } from '../../src/engine/data/format.ts'
import { buildImportedDataset, importDataset } from '../../src/engine/data/import/index.ts'
import { parseRateSpec } from '../../src/engine/data/import/rates.ts'
import { tenorFromFileName, tenorFromName } from '../../src/engine/data/import/tenors.ts'
import { isoFromDay, parseIsoDay } from '../../src/platform/dates.ts'
import { put, tempDir } from './import-helpers.ts'

const day = (iso: string) => parseIsoDay(iso) ?? Number.NaN
const series = (ds: Dataset, sym: string) => ds.prices.adj_close[ds.symbols.indexOf(sym)]

/** n weekdays from 2021-01-04 as ISO dates. */
function weekdays(n: number): string[] {
  const out: string[] = []
  for (let d = day('2021-01-04'); out.length < n; d++)
    if ((d + 4) % 7 !== 0 && (d + 4) % 7 !== 6) out.push(isoFromDay(d))
  return out
}

describe('price layouts', () => {
  test('long CSV: any column order, loose header names, optional fields; gzip found by magic bytes', async () => {
    const dir = await tempDir()
    const text = [
      'Volume,Adj Close,Date,SYMBOL,close,Shares_Outstanding',
      '1000,100,2021-01-04,SPY,101,5',
      '2000,101.5,2021-01-05,SPY,102,5',
      ',10,2021-01-04,brk-b,,',
      '300,11,2021-01-05,BRK/B,12,7',
    ].join('\n')
    const file = await put(dir, 'long.csv', gzipSync(text))
    const ds = await buildImportedDataset({ prices: [file], out: join(dir, 'out') })
    assert.deepEqual(ds.symbols, ['SPY', 'BRK.B'])
    assert.deepEqual(Array.from(series(ds, 'BRK.B')), [10, 11])
    assert.deepEqual(Array.from(ds.prices.close?.[1] ?? []), [Number.NaN, 12])
    assert.deepEqual(Array.from(ds.prices.volume?.[0] ?? []), [1000, 2000])
    assert.deepEqual(Array.from(ds.prices.shares_out?.[1] ?? []), [Number.NaN, 7])
  })

  test('Parquet long file (typed dates) merged with a wide CSV', async () => {
    const dir = await tempDir()
    const wide = await put(dir, 'wide.csv', 'date,SPY\n2021-01-04,100\n2021-01-05,101\n2021-01-06,102\n')
    const buf = parquetWriteBuffer({
      columnData: [
        { name: 'ticker', data: ['AAA', 'AAA', 'AAA'], type: 'STRING' },
        {
          name: 'date',
          data: [new Date('2021-01-04'), new Date('2021-01-05'), new Date('2021-01-09')],
          type: 'TIMESTAMP',
        },
        { name: 'adj_close', data: [5, null, 7], type: 'DOUBLE' },
      ],
    })
    const pq = await put(dir, 'long.parquet', new Uint8Array(buf))
    const ds = await buildImportedDataset({ prices: [wide, pq], out: join(dir, 'out') })
    assert.deepEqual(Array.from(series(ds, 'AAA')), [5, Number.NaN, Number.NaN])
    assert.equal(ds.prices.close, null)
    // 2021-01-09 is a Saturday: not on SPY's calendar, so dropped and reported.
    const dropped = ds.report?.findings.find((f) => f.kind === 'dropped_rows' && f.symbol === 'AAA')
    assert.equal(dropped?.from, '2021-01-09')
  })

  test('ETFs vs stocks, industry ETF fallbacks, macro and style rows only when priced', async () => {
    const dir = await tempDir()
    const p = await put(
      dir,
      'p.csv',
      'date,SPY,XLE,XOP,GLD,MTUM,AAA,BBB\n2021-01-04,1,1,1,1,1,1,1\n2021-01-05,2,2,2,2,2,2,2\n',
    )
    const s = await put(
      dir,
      's.csv',
      'Symbol,Security,GICS Sector,GICS Sub-Industry,CIK\nAAA,Aaa Co,Energy,Drilling,0000000042\nBBB,Bbb Co,Energy,Refining,\nCCC,Unpriced,Energy,Drilling,\n',
    )
    const m = await put(
      dir,
      'm.csv',
      'gics_sector,sector_etf,gics_sub_industry,industry_etf,alt_industry_etf,note\nEnergy,XLE,Drilling,OIH,XOP,\nEnergy,XLE,Refining,CRAK,,\nEnergy,XLE,Integrated,,XOP,\n',
    )
    const ds = await buildImportedDataset({
      prices: [p],
      securities: s,
      classificationMap: m,
      out: join(dir, 'out'),
    })
    const sec = (t: string) => ds.securities.find((x) => x.symbol === t)
    assert.equal(sec('AAA')?.assetType, 'stock')
    assert.equal(sec('AAA')?.cik, 42)
    assert.equal(sec('XOP')?.assetType, 'etf')
    assert.equal(sec('XOP')?.name, 'SPDR S&P Oil & Gas Exploration & Production ETF')
    const sub = (code: string) => ds.factors.find((f) => f.role === 'subsector' && f.code === code)?.ticker
    assert.equal(sub('Drilling'), 'XOP')
    assert.equal(sub('Refining'), null)
    assert.equal(sub('Integrated'), null)
    assert.deepEqual(
      ds.factors
        .filter((f) => f.role === 'macro' || f.role === 'style')
        .map((f) => [f.role, f.code, f.ticker]),
      [
        ['macro', 'gold', 'GLD'],
        ['style', 'momentum', 'MTUM'],
      ],
    )
    const notes = ds.report?.findings.filter((f) => f.kind === 'note').map((f) => f.detail) ?? []
    assert.ok(notes.some((n) => /OIH .* uses the alternative XOP/.test(n)))
    assert.ok(notes.some((n) => /CRAK .* falls back to the sector ETF/.test(n)))
    assert.ok(notes.some((n) => /1 of 3 securities have no price series/.test(n)))
  })
})

describe('data-quality findings', () => {
  test('gaps, flat runs and large moves', async () => {
    const dates = weekdays(12)
    const spy = dates.map((_, i) => 100 + i)
    const aaa = [10, 11, '', '', 12, 12, 12, 12, 12, 30, 31, 32]
    const rows = dates.map((d, i) => `${d},${spy[i]},${aaa[i]}`)
    const dir = await tempDir()
    const p = await put(dir, 'p.csv', `date,SPY,AAA\n${rows.join('\n')}\n`)
    const ds = await buildImportedDataset({ prices: [p], out: join(dir, 'out') })
    const f = (kind: string) =>
      ds.report?.findings.filter((x) => x.kind === kind).map((x) => [x.symbol, x.from, x.to])
    assert.deepEqual(f('gap'), [['AAA', dates[2], dates[3]]])
    assert.deepEqual(f('flat_run'), [['AAA', dates[4], dates[8]]])
    assert.deepEqual(f('large_move'), [['AAA', dates[8], dates[9]]])
    assert.equal(ds.report?.summary.findings_gap, 1)
    assert.equal(ds.report?.summary.calendar_days, 12)
  })
})

describe('rates', () => {
  test('spec and tenor parsing', () => {
    assert.deepEqual(parseRateSpec('a/b.csv'), { path: 'a/b.csv', tenor: null, unit: null })
    assert.deepEqual(parseRateSpec('a/b.csv=3m'), { path: 'a/b.csv', tenor: '3m', unit: null })
    assert.deepEqual(parseRateSpec('x=y/b.csv=10Y:Percent'), {
      path: 'x=y/b.csv',
      tenor: '10y',
      unit: 'percent',
    })
    assert.deepEqual(parseRateSpec('b.csv=:fraction'), { path: 'b.csv', tenor: null, unit: 'fraction' })
    assert.throws(() => parseRateSpec('b.csv=soon'))
    const names: [string, string | null][] = [
      ['1month', '1m'],
      ['3 Mo', '3m'],
      ['BC_6MONTH', '6m'],
      ['1year', '1y'],
      ['30year', '30y'],
      ['DGS10', '10y'],
      ['DGS3MO', '3m'],
      ['DTB3', '3m'],
      ['DTB4WK', '1m'],
      ['^IRX', '3m'],
      ['12m', '1y'],
      ['Close', null],
      ['value', null],
    ]
    for (const [name, want] of names) assert.equal(tenorFromName(name), want, name)
    assert.equal(tenorFromFileName('/x/IRX_yahoo_13week_tbill_1976-08-03_2026-08-03.csv'), '3m')
    assert.equal(tenorFromFileName('/x/t-bill_13week.csv.gz'), '3m')
    assert.equal(tenorFromFileName('/x/treasury_curves_zipline_1990-01-02_2017-03-29.csv'), null)
  })

  test('units: detected per file or forced; merged on the union of dates; earlier file wins', async () => {
    const dir = await tempDir()
    const p = await put(dir, 'p.csv', 'date,SPY\n2021-01-04,1\n')
    const a = await put(dir, 'a.csv', 'observation_date,DTB3\n2021-01-02,1.25\n2021-01-03,\n2021-01-05,2\n')
    const b = await put(dir, 'b.csv', 'Date,Open,Close\n2021-01-05,0,0.9\n2021-01-01,0,0.8\n')
    const c = await put(dir, 'c.csv', 'Time Period,1year,3month\n2021-01-01 00:00:00+00:00,0.01,0.005\n')
    const ds = await buildImportedDataset({
      prices: [p],
      rates: [a, `${b}=3m:percent`, c],
      out: join(dir, 'out'),
    })
    const r = ds.rates
    assert.ok(r)
    assert.deepEqual(r.tenors, ['3m', '1y'])
    assert.deepEqual(Array.from(r.days, isoFromDay), ['2021-01-01', '2021-01-02', '2021-01-05'])
    // a.csv has max 2 > 1.5 → percent. b.csv forced percent. c.csv fractions, but 3m on 01-01 comes from b.
    assert.deepEqual(Array.from(r.values[0]), [0.8 / 100, 1.25 / 100, 2 / 100])
    assert.deepEqual(Array.from(r.values[1]), [0.01, Number.NaN, Number.NaN])
    const notes = ds.report?.findings.map((f) => f.detail).join('\n') ?? ''
    assert.match(notes, /a\.csv \(3m\): values read as percent \(detected/)
    assert.match(notes, /b\.csv \(3m\): values read as percent \(as given/)
    assert.match(notes, /c\.csv \(1y, 3m\): values read as fraction/)
    assert.match(notes, /b\.csv gives 3m on 1 date\(s\) already given by a\.csv/)
  })
})

describe('volume', () => {
  test('a trailing intraday day is dropped; a normal last day is kept; dates off the calendar dropped', async () => {
    const dates = weekdays(30)
    const dir = await tempDir()
    const p = await put(
      dir,
      'p.csv',
      `date,SPY,AAA\n${dates.map((d, i) => `${d},${100 + i},${50 + i}`).join('\n')}\n`,
    )
    const rows = (last: number) =>
      ['ticker,date,open,high,low,close,volume']
        .concat(
          ['SPY', 'AAA'].flatMap((t) =>
            dates.slice(0, 25).map((d, i) => `${t},${d},1,1,1,1,${i === 24 ? last : 1000 + (i % 3) * 10}`),
          ),
        )
        .concat(['AAA,2021-01-09,1,1,1,1,5'])
        .join('\n')
    const partial = await put(dir, 'v1.csv', rows(300))
    const ds = await buildImportedDataset({ prices: [p], volume: partial, out: join(dir, 'o1') })
    const vol = ds.prices.volume
    assert.ok(vol)
    assert.ok(Number.isNaN(vol[1][24]))
    assert.equal(vol[1][23], 1000 + (23 % 3) * 10)
    const dropped = ds.report?.findings.filter((f) => f.kind === 'dropped_rows').map((f) => f.from)
    assert.deepEqual(dropped, [dates[24], '2021-01-09'])

    const normal = await put(dir, 'v2.csv', rows(900))
    const ds2 = await buildImportedDataset({ prices: [p], volume: normal, out: join(dir, 'o2') })
    assert.equal(ds2.prices.volume?.[1][24], 900)
    assert.ok(Number.isNaN(ds2.prices.volume?.[1][25] ?? 0))
  })
})

describe('round trip through the writer', () => {
  test('what is imported is what is read back', async () => {
    const dir = await tempDir()
    const p = await put(
      dir,
      'p.csv',
      'date,SPY,AAA\n2021-01-04,100.1,0.1\n2021-01-05,100.2,\n2021-01-06,100.3,0.30000000000000004\n',
    )
    const out = join(dir, 'out')
    const { dataset } = await importDataset({ prices: [p], out })
    const back = (await readDataset(out)).dataset
    assert.deepEqual(back.symbols, dataset.symbols)
    assert.deepEqual(back.securities, dataset.securities)
    assert.deepEqual(back.factors, dataset.factors)
    assert.deepEqual(back.report, dataset.report)
    assert.deepEqual(Array.from(series(back, 'AAA')), [0.1, Number.NaN, 0.30000000000000004])
  })
})
