import assert from 'node:assert/strict'
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, test } from 'node:test'
import { DuckDBInstance } from '@duckdb/node-api'
import { parse } from 'csv-parse/sync'
import { buildStore } from '../../src/engine/build/index.ts'
import { synthesizeDataset } from '../../src/engine/data/synthesize.ts'
import { CsvTableWriter } from '../../src/engine/export/csv-table.ts'
import { ParquetTableWriter } from '../../src/engine/export/parquet-table.ts'
import { ModelStore } from '../../src/engine/model-store/reader.ts'
import { isoFromDay } from '../../src/platform/dates.ts'
import {
  EXPORT_FIELDS,
  exportBlocks,
  INTEGER_FIELDS,
  planExport,
  TEXT_FIELDS,
} from '../../src/services/analytics/export-panel.ts'

const dir = await mkdtemp(join(tmpdir(), 'erm3-store-'))
after(() => rm(dir, { recursive: true, force: true }))
const dataset = join(dir, 'dataset')
await synthesizeDataset(dataset, {
  seed: 21,
  stocks: 40,
  start: '2014-01-02',
  end: '2016-12-30',
  fundamentals: false,
})
const storeRoot = join(dir, 'store')
const manifest = await buildStore({ dataset, store: storeRoot })

async function exportTo(path: string, req: Parameters<typeof planExport>[1]) {
  const store = await ModelStore.open(storeRoot)
  const plan = planExport(store, req)
  const w = path.endsWith('.parquet')
    ? new ParquetTableWriter(path, plan.fields, { integers: INTEGER_FIELDS, texts: TEXT_FIELDS })
    : new CsvTableWriter(path, plan.fields)
  for await (const b of exportBlocks(store, plan)) await w.write(b)
  await w.close()
  await store.close()
}

describe('model store', () => {
  test('manifest records version, lineage, parameters and counts', () => {
    assert.equal(manifest.model_version, 'ERM3-L3-v3')
    assert.equal(manifest.methodology_version, 3)
    assert.equal(manifest.factor_set_id, 'SPY_uni_mc_3000')
    // A dataset with market caps keeps the market-cap default universe and log-cap weights.
    assert.equal(manifest.universe_basis, 'market_cap')
    assert.equal(manifest.default_universe, 'uni_mc_3000')
    assert.equal(manifest.weight_basis, 'log_market_cap')
    assert.equal(manifest.data_as_of, '2016-12-30')
    assert.equal(manifest.parameters.window, 252)
    assert.ok(manifest.universe_size > 30 && manifest.universe_size <= 44)
    assert.equal(manifest.counts.stocks + manifest.counts.etfs, manifest.counts.symbols)
    assert.ok(manifest.timings_s.total > 0)
  })

  test('reader: history and cross-section agree; tickers resolve; ETFs have no model fields', async () => {
    const s = await ModelStore.open(storeRoot)
    const T = s.calendar.length
    const sec = await s.crossSection('l3_sec_hr', T - 1)
    const stock = s.symbols.findIndex((m, i) => m.asset_type === 'stock' && !Number.isNaN(sec[i]))
    const h = await s.history(stock, ['l3_mkt_hr', 'l3_res_er', 'lstar_level', 'subsector_etf'])
    const row = await s.crossSection('l3_mkt_hr', T - 1)
    assert.ok(Object.is(row[stock], h.l3_mkt_hr[T - 1]))
    assert.ok(!Number.isNaN(h.l3_mkt_hr[T - 1]))
    assert.ok([1, 2, 3].includes(h.lstar_level[T - 1]))
    assert.ok(h.subsector_etf[T - 1] >= 0)
    const spy = s.resolve('SPY')
    assert.equal(s.symbols[spy].symbol, 'SPY')
    const e = await s.history(spy, ['returns_gross', 'l1_mkt_hr'])
    assert.ok(!Number.isNaN(e.returns_gross[T - 1]))
    assert.ok(Number.isNaN(e.l1_mkt_hr[T - 1]))
    assert.equal(s.resolve('NO_SUCH'), -1)
    const last = await s.latest(stock, ['l3_mkt_hr', 'lstar_level'])
    assert.equal(last.t, T - 1)
    assert.ok(Object.is(last.values.l3_mkt_hr, h.l3_mkt_hr[T - 1]))
    const xlk = await s.etfSeries('XLK')
    assert.ok(xlk && !Number.isNaN(xlk.returns[T - 1]) && xlk.close[T - 1] > 0)
    assert.equal(await s.etfSeries(s.symbols[stock].symbol), null)
    await s.close()
  })

  test('a failed build leaves CURRENT and the served build untouched', async () => {
    const before = await readFile(join(storeRoot, 'CURRENT'), 'utf8')
    await assert.rejects(buildStore({ dataset: join(dir, 'missing-dataset'), store: storeRoot }))
    await assert.rejects(
      buildStore({ dataset, store: storeRoot, params: { window: 0 } }),
      /window must be an integer/,
    )
    await assert.rejects(buildStore({ dataset, store: storeRoot, params: { minObs: 300 } }), /minObs must be/)
    assert.equal(await readFile(join(storeRoot, 'CURRENT'), 'utf8'), before)
    const builds = await readdir(join(storeRoot, 'builds'))
    assert.deepEqual(builds, [JSON.parse(before).build])
  })

  test('stores of another store or methodology version are refused', async () => {
    const s = await ModelStore.open(storeRoot)
    const file = join(s.dir, 'manifest.json')
    await s.close()
    const original = await readFile(file, 'utf8')
    try {
      await writeFile(file, JSON.stringify({ ...JSON.parse(original), store_version: 99 }))
      await assert.rejects(ModelStore.open(storeRoot), /store_version 99 is not supported/)
      await writeFile(file, JSON.stringify({ ...JSON.parse(original), methodology_version: 7 }))
      await assert.rejects(ModelStore.open(storeRoot), /methodology version 7 differs/)
    } finally {
      await writeFile(file, original)
    }
    await assert.rejects(ModelStore.open(join(dir, 'nowhere')), /no built store/)
  })

  test('export: CSV and Parquet carry the same numbers as the store, in the documented columns', async () => {
    const csv = join(dir, 'panel.csv')
    const pq = join(dir, 'panel.parquet')
    await exportTo(csv, { from: '2016-12-01' })
    await exportTo(pq, { from: '2016-12-01' })
    const rows = parse(await readFile(csv, 'utf8'), { columns: true }) as Record<string, string>[]
    assert.deepEqual(Object.keys(rows[0]), ['date', 'ticker', ...EXPORT_FIELDS])
    const s = await ModelStore.open(storeRoot)
    const T = s.calendar.length
    const sec = await s.crossSection('l3_sec_hr', T - 1)
    const stock = s.symbols.findIndex((m, i) => m.asset_type === 'stock' && !Number.isNaN(sec[i]))
    const ticker = s.symbols[stock].tickers.at(-1)?.ticker ?? ''
    const last = rows.find((r) => r.ticker === ticker && r.date === isoFromDay(s.calendar[T - 1]))
    assert.ok(last)
    const h = await s.history(stock, ['l3_sec_hr', 'lstar_level', 'subsector_etf'])
    assert.equal(Number(last.l3_sec_hr), h.l3_sec_hr[T - 1])
    assert.equal(Number(last.lstar_level), h.lstar_level[T - 1])
    assert.equal(last.subsector_etf, s.etfs[h.subsector_etf[T - 1]])
    const etfRow = rows.find((r) => r.ticker === 'SPY')
    assert.equal(etfRow?.l1_mkt_hr, '')
    await s.close()

    const db = await DuckDBInstance.create(':memory:')
    const con = await db.connect()
    const types = (
      await con.runAndReadAll(
        `select column_name, column_type from (describe select * from read_parquet('${pq}'))`,
      )
    ).getRowObjects()
    const typeOf = Object.fromEntries(types.map((r) => [String(r.column_name), String(r.column_type)]))
    assert.equal(typeOf.date, 'DATE')
    assert.equal(typeOf.ticker, 'VARCHAR')
    assert.equal(typeOf.l3_sec_hr, 'DOUBLE')
    assert.equal(typeOf.lstar_level, 'BIGINT')
    assert.equal(typeOf.subsector_etf, 'VARCHAR')
    const n = (await con.runAndReadAll(`select count(*) as n from read_parquet('${pq}')`)).getRowObjects()[0]
      .n
    assert.equal(Number(n), rows.length)
    const got = (
      await con.runAndReadAll(
        `select l3_sec_hr, lstar_level, subsector_etf, l1_mkt_hr from read_parquet('${pq}') where ticker = '${ticker}' order by date desc limit 1`,
      )
    ).getRowObjects()[0]
    assert.equal(got.l3_sec_hr, Number(last.l3_sec_hr))
    assert.equal(Number(got.lstar_level), Number(last.lstar_level))
    assert.equal(got.subsector_etf, last.subsector_etf)
    const spyNull = (
      await con.runAndReadAll(`select l1_mkt_hr from read_parquet('${pq}') where ticker = 'SPY' limit 1`)
    ).getRowObjects()[0]
    assert.equal(spyNull.l1_mkt_hr, null)
  })

  test('export is byte-stable across runs; filters and bad requests', async () => {
    for (const ext of ['csv', 'csv.gz', 'parquet']) {
      const a = join(dir, `a.${ext}`)
      const b = join(dir, `b.${ext}`)
      await exportTo(a, { tickers: ['SPY', 'XLK'], fields: ['l1_mkt_hr', 'returns_gross'] })
      await exportTo(b, { tickers: ['SPY', 'XLK'], fields: ['l1_mkt_hr', 'returns_gross'] })
      assert.ok((await readFile(a)).equals(await readFile(b)), ext)
    }
    const s = await ModelStore.open(storeRoot)
    assert.throws(() => planExport(s, { fields: ['nope'] }), /unknown field "nope"/)
    assert.throws(() => planExport(s, { tickers: ['ZZZZZ9'] }), /unknown ticker/)
    assert.throws(() => planExport(s, { from: '2016/01/01' }), /--from must be a date/)
    const plan = planExport(s, { from: '2016-06-01', to: '2016-06-30', tickers: ['spy'] })
    assert.equal(s.date(plan.from), '2016-06-01')
    assert.equal(s.date(plan.to - 1), '2016-06-30')
    await s.close()
  })
})
