import assert from 'node:assert/strict'
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { before, describe, test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { gunzipSync } from 'node:zlib'
import { readDataset } from '../../src/engine/data/dataset-reader.ts'
import type { Dataset, DatasetManifest } from '../../src/engine/data/format.ts'
import { importDataset } from '../../src/engine/data/import/index.ts'
import { sha256File } from '../../src/platform/digest.ts'
import { exists, tempDir } from './import-helpers.ts'
import { panelDigest } from './panel-digest.ts'

/**
 * Imports the real files in ../shared/data/real (never copied into the repository) and checks
 * facts that are known about them independently of the importer (PROVENANCE.md, the files).
 */
const REAL = fileURLToPath(new URL('../../../shared/data/real/', import.meta.url))
const present = await exists(join(REAL, 'PROVENANCE.md'))
const skip = present ? false : `real data not found at ${REAL} (only on development and CI machines)`

const F = {
  prices: join(REAL, 'fixture_adjclose_2019-01-02_2026-07-31.csv'),
  securities: join(REAL, 'classification/sp500_constituents_gics_2026-08-08.csv'),
  map: join(REAL, 'classification/gics_to_etf_map.csv'),
  dtb3: join(REAL, 'rates/DTB3_fred_2023-01-12_2026-08-12.csv'),
  irx: join(REAL, 'rates/IRX_yahoo_13week_tbill_1976-08-03_2026-08-03.csv'),
  curve: join(REAL, 'rates/treasury_curves_zipline_1990-01-02_2017-03-29.csv'),
  volume: join(REAL, 'volume/benda931_daily_ohlcv_70tickers_2021-04-01_2026-04-01.csv.gz'),
  facts: join(REAL, 'fundamentals/companyfacts'),
}

/** The value of a `date,value` row in a small CSV, looked up directly in the file. */
async function valueOn(file: string, date: string): Promise<number> {
  const line = (await readFile(file, 'utf8')).split(/\r?\n/).find((l) => l.startsWith(`${date},`))
  assert.ok(line, `${date} in ${file}`)
  return Number(line.split(',')[1])
}

describe('data import of the real files', { skip }, () => {
  let ds: Dataset
  let manifest: DatasetManifest
  let out: string
  let ms = 0

  before(async () => {
    out = join(await tempDir(), 'dataset')
    const t0 = performance.now()
    await importDataset({
      prices: [F.prices],
      securities: F.securities,
      classificationMap: F.map,
      rates: [F.dtb3, F.irx, F.curve],
      volume: F.volume,
      fundamentals: F.facts,
      out,
    })
    ms = performance.now() - t0
    ;({ dataset: ds, manifest } = await readDataset(out, { fundamentals: true }))
  })

  const col = (sym: string) => {
    const k = ds.symbols.indexOf(sym)
    assert.ok(k >= 0, `${sym} has a price series`)
    return k
  }
  const dayIndex = (iso: string) => ds.calendar.indexOf(Date.parse(`${iso}T00:00:00Z`) / 86_400_000)

  test('216 price series on SPY’s calendar of 1,905 days', () => {
    process.stdout.write(`# full real import took ${ms.toFixed(0)} ms\n`)
    assert.equal(ds.symbols.length, 216)
    assert.equal(ds.calendar.length, 1905)
    assert.deepEqual(manifest.calendar, { first: '2019-01-02', last: '2026-07-31', days: 1905 })
    assert.equal(manifest.counts.stocks, 148)
    assert.equal(manifest.counts.etfs, 68)
  })

  test('XLC is priced from the first day of the file', () => {
    assert.ok(!Number.isNaN(ds.prices.adj_close[col('XLC')][0]))
    assert.equal(ds.securities.find((s) => s.symbol === 'XLC')?.validFrom, '2019-01-02')
  })

  test('INDS has exactly one gap, 2025-10-24, and it is reported', () => {
    const px = ds.prices.adj_close[col('INDS')]
    const missing = [...px.keys()].filter((i) => Number.isNaN(px[i]))
    assert.deepEqual(missing, [dayIndex('2025-10-24')])
    const gaps = ds.report?.findings.filter((f) => f.kind === 'gap') ?? []
    assert.deepEqual(
      gaps.map((g) => [g.symbol, g.from, g.to]),
      [['INDS', '2025-10-24', '2025-10-24']],
    )
  })

  test('NVDA → Information Technology, XLK, subsector SMH', () => {
    const nvda = ds.securities.find((s) => s.symbol === 'NVDA')
    assert.equal(nvda?.assetType, 'stock')
    assert.equal(nvda?.sector, 'Information Technology')
    assert.equal(ds.factors.find((f) => f.role === 'sector' && f.code === nvda?.sector)?.ticker, 'XLK')
    assert.equal(ds.factors.find((f) => f.role === 'subsector' && f.code === nvda?.industry)?.ticker, 'SMH')
  })

  test('XOM → XLE, subsector falls back to the sector (no industry ETF)', () => {
    const xom = ds.securities.find((s) => s.symbol === 'XOM')
    assert.equal(ds.factors.find((f) => f.role === 'sector' && f.code === xom?.sector)?.ticker, 'XLE')
    const sub = ds.factors.find((f) => f.role === 'subsector' && f.code === xom?.industry)
    assert.ok(sub, 'Integrated Oil & Gas has a subsector row')
    assert.equal(sub.ticker, null)
  })

  test('BRK-B in the prices is the stock BRK.B of the constituents', () => {
    const brk = ds.securities.find((s) => s.symbol === 'BRK.B')
    assert.equal(brk?.assetType, 'stock')
    assert.equal(brk?.name, 'Berkshire Hathaway')
    assert.equal(brk?.cik, 1067983)
  })

  test('one market row, 11 sector rows, 127 subsector rows', () => {
    assert.deepEqual(ds.factors[0], { role: 'market', code: 'MARKET', ticker: 'SPY', kind: 'etf' })
    assert.equal(ds.factors.filter((f) => f.role === 'sector').length, 11)
    assert.equal(ds.factors.filter((f) => f.role === 'subsector').length, 127)
  })

  test('rates: fractions, DTB3 wins over IRX, curve gives 10y', async () => {
    const r = ds.rates
    assert.ok(r)
    const at = (iso: string, tenor: string) =>
      r.values[r.tenors.indexOf(tenor)][r.days.indexOf(Date.parse(`${iso}T00:00:00Z`) / 86_400_000)]
    assert.equal(at('2024-01-02', '3m'), (await valueOn(F.dtb3, '2024-01-02')) / 100)
    assert.notEqual(await valueOn(F.irx, '2024-01-02'), await valueOn(F.dtb3, '2024-01-02'))
    // Before DTB3's first date, 3m comes from IRX (listed before the curve).
    assert.equal(at('2020-01-02', '3m'), (await valueOn(F.irx, '2020-01-02')) / 100)
    assert.equal(at('1990-01-02', '10y'), 0.0794)
    assert.deepEqual(r.tenors, ['1m', '3m', '6m', '1y', '2y', '3y', '5y', '7y', '10y', '20y', '30y'])
    const overlap = ds.report?.findings.find(
      (f) => f.kind === 'note' && /IRX.*3m on \d+ date\(s\) already given by DTB3/.test(f.detail),
    )
    assert.ok(overlap, 'the DTB3/IRX overlap is reported')
  })

  test('volume: AAPL has volume; the partial day 2026-04-01 is dropped and reported', () => {
    const vol = ds.prices.volume
    assert.ok(vol)
    const aapl = vol[col('AAPL')]
    assert.equal(aapl[dayIndex('2021-04-01')], 75089100)
    assert.ok(Number.isNaN(aapl[dayIndex('2026-04-01')]))
    assert.ok(vol.every((v) => Number.isNaN(v[dayIndex('2026-04-01')])))
    const dropped = ds.report?.findings.find((f) => f.kind === 'dropped_rows' && f.from === '2026-04-01')
    assert.ok(dropped, 'the partial day is reported')
    assert.equal(ds.prices.close, null)
    assert.equal(ds.prices.shares_out, null)
  })

  test('the four companyfacts files, with their CIKs', () => {
    assert.deepEqual(
      ds.fundamentals.map((f) => f.cik),
      [320193, 1045810, 1640147, 1652044],
    )
    for (const f of ds.fundamentals) {
      const doc = JSON.parse(gunzipSync(f.gzipped).toString('utf8')) as { cik: number; facts: object }
      assert.equal(doc.cik, f.cik)
      assert.equal(typeof doc.facts, 'object')
    }
  })

  test('manifest digests match the files', async () => {
    for (const [path, want] of Object.entries(manifest.files)) {
      assert.deepEqual(await sha256File(join(out, path)), { sha256: want.sha256, bytes: want.bytes }, path)
      // Panels also list their parts (magic, row groups, footer), which must cover the file.
      if (path.endsWith('.parquet')) assert.deepEqual(await panelDigest(join(out, path)), want, path)
    }
    assert.ok(manifest.files['import-report.json'])
    assert.equal(manifest.source.kind, 'import')
  })
})
