import assert from 'node:assert/strict'
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { describe, test } from 'node:test'
import { buildStore } from '../../src/engine/build/index.ts'
import { readDataset } from '../../src/engine/data/dataset-reader.ts'
import { assembleDataset, MAX_SHARES_AGE_DAYS, readDataDirDataset } from '../../src/engine/update/assemble.ts'
import { writeBars } from '../../src/engine/update/data-dir.ts'
import { writeClassification, writeRates, writeShares } from '../../src/engine/update/dir-files.ts'
import { type IdentityRow, reconcileIdentity, writeIdentity } from '../../src/engine/update/identity.ts'
import { isoFromDay, parseIsoDay } from '../../src/platform/dates.ts'
import { exists, tempDir } from '../data/import-helpers.ts'
import { fakeBars, fakeMarket, fakeShares, fakeSource, listedSymbols } from './fake-source.ts'

const m = fakeMarket()
const src = fakeSource(m)
const cal = Array.from(m.ds.calendar, isoFromDay)
const DROPPED_SPY_DAY = cal[100]
const SATURDAY = '2020-06-13'
const UNCLASSIFIED = 'XX'
/** AAPL's hand-made filings: a restated older period filed late must not replace a newer count. */
const AAPL_SHARES = [
  { end: '2019-09-28', filed: '2019-10-30', shares: 1000 },
  { end: '2019-12-31', filed: '2020-02-18', shares: 1100 },
  { end: '2019-06-29', filed: '2020-03-02', shares: 999 },
]

async function makeDataDir(): Promise<{ dir: string; identity: IdentityRow[] }> {
  const dir = await tempDir('erm3-assemble-')
  const list = (await src.securities?.list()) ?? []
  let { rows } = reconcileIdentity([], list, [], cal[cal.length - 1])
  // META traded as FB until the end of June 2020: one symbol, two windows.
  rows = rows.flatMap((r) =>
    r.symbol === 'META'
      ? [
          { ...r, ticker: 'FB', validTo: '2020-06-30' },
          { ...r, validFrom: '2020-07-01' },
        ]
      : [r],
  )
  await writeIdentity(dir, rows)
  for (const s of listedSymbols(m)) {
    let bars = fakeBars(m, s, cal[0], null)
    if (s === 'SPY') bars = bars.filter((b) => b.date !== DROPPED_SPY_DAY)
    if (s === 'AMZN')
      bars = [...bars, { ...bars[0], date: SATURDAY }].sort((a, b) => a.date.localeCompare(b.date))
    await writeBars(dir, s, bars)
  }
  const stocks = m.ds.securities.filter((r) => r.assetType === 'stock' && r.symbol !== UNCLASSIFIED)
  await writeClassification(
    dir,
    stocks.map((r) => ({
      symbol: r.symbol,
      sector: r.sector ?? '',
      industry: r.industry,
      source: 'test',
      industryEtf: null,
    })),
  )
  for (const r of m.ds.securities) {
    if (r.cik === null) continue
    await writeShares(
      dir,
      r.cik,
      r.symbol === 'AAPL' ? AAPL_SHARES.map((p) => ({ ...p, cik: r.cik ?? 0 })) : fakeShares(m, r.cik),
    )
  }
  await writeRates(dir, (await src.rates?.tbill3m(cal[0], cal[cal.length - 1])) ?? [])
  return { dir, identity: rows }
}

const { dir } = await makeDataDir()
const ds = await readDataDirDataset(dir, { sources: ['tiingo'], fetchedAt: '2021-04-01T00:00:00Z' })
const col = (field: 'adj_close' | 'close' | 'volume' | 'shares_out', symbol: string) => {
  const panel = ds.prices[field]
  assert.ok(panel, field)
  return panel[ds.symbols.indexOf(symbol)]
}

describe('assembleDataset', () => {
  test('the calendar is the sessions on which SPY has a bar', () => {
    const want = cal.filter((d) => d !== DROPPED_SPY_DAY)
    assert.deepEqual(Array.from(ds.calendar, isoFromDay), want)
    assert.equal(ds.calendar.length, 313)
  })

  test('price panels equal the vendor bars day by day', () => {
    let checked = 0
    for (const s of listedSymbols(m)) {
      const k = m.ds.symbols.indexOf(s)
      ds.calendar.forEach((d, t) => {
        const u = m.ds.calendar.indexOf(d)
        const want = m.ds.prices.adj_close[k][u]
        const got = col('adj_close', s)[t]
        if (Number.isNaN(want)) assert.ok(Number.isNaN(got), `${s} ${isoFromDay(d)}`)
        else {
          assert.equal(got, want)
          assert.equal(col('close', s)[t], m.ds.prices.close?.[k][u])
          checked++
        }
      })
    }
    assert.ok(checked > 20_000, `${checked} values`)
    const amzn = ds.report?.findings.find((f) => f.kind === 'dropped_rows' && f.symbol === 'AMZN')
    assert.deepEqual([amzn?.from, amzn?.to], [DROPPED_SPY_DAY, SATURDAY])
    assert.match(amzn?.detail ?? '', /^2 bar\(s\)/)
  })

  test('shares outstanding are known from the filing date and expire after 400 days', () => {
    const aapl = col('shares_out', 'AAPL')
    const on = (iso: string) => aapl[ds.calendar.indexOf(parseIsoDay(iso) ?? -1)]
    assert.equal(on('2020-01-02'), 1000)
    assert.equal(on('2020-02-14'), 1000)
    assert.equal(on('2020-02-18'), 1100)
    assert.equal(on('2020-03-02'), 1100, 'an older period filed later does not win')
    assert.equal(MAX_SHARES_AGE_DAYS, 400)
    assert.equal(on('2021-02-03'), 1100, '2019-12-31 + 400 days')
    assert.ok(Number.isNaN(on('2021-02-04')), 'stale after 400 days')
    // Every other stock: the quarterly points, each from its filing day on (direct computation).
    const zgk = col('shares_out', 'ZGK')
    const k = m.ds.symbols.indexOf('ZGK')
    const points = fakeShares(m, 9000003)
    ds.calendar.forEach((d, t) => {
      const known = points.filter((p) => (parseIsoDay(p.filed) ?? 0) <= d)
      const want = known.length === 0 ? Number.NaN : known[known.length - 1].shares
      assert.ok(Object.is(zgk[t], want), `${isoFromDay(d)}: ${zgk[t]} vs ${want}`)
      if (!Number.isNaN(want)) assert.ok(!Number.isNaN(m.ds.prices.adj_close[k][m.ds.calendar.indexOf(d)]))
    })
  })

  test('securities carry the registry windows and the classification', () => {
    const meta = ds.securities.filter((r) => r.symbol === 'META')
    assert.deepEqual(
      meta.map((r) => [r.ticker, r.validFrom, r.validTo]),
      [
        ['FB', '2020-01-02', '2020-06-30'],
        ['META', '2020-07-01', null],
      ],
    )
    assert.equal(meta[1].sector, 'Communication Services')
    const xx = ds.securities.find((r) => r.symbol === UNCLASSIFIED)
    assert.equal(xx?.sector, null)
    assert.ok(
      ds.report?.findings.some(
        (f) => f.detail.includes('without a sector') && f.detail.includes(UNCLASSIFIED),
      ),
    )
    const nvda = ds.factors.find((f) => f.role === 'subsector' && f.code === 'Semiconductors')
    assert.equal(nvda?.ticker, 'SMH')
    assert.deepEqual(ds.factors[0], { role: 'market', code: 'MARKET', ticker: 'SPY', kind: 'etf' })
  })

  test('rates are the 3-month bill; the source says vendor data', () => {
    assert.deepEqual(ds.rates?.tenors, ['3m'])
    assert.ok((ds.rates?.days.length ?? 0) > 200)
    assert.deepEqual(ds.source, { kind: 'vendor', sources: ['tiingo'], fetched_at: '2021-04-01T00:00:00Z' })
  })

  test('the written dataset reads back and builds a model store', async () => {
    const { manifest } = await assembleDataset(dir, { sources: ['tiingo'] })
    assert.equal(manifest.source.kind, 'vendor')
    const back = await readDataset(join(dir, 'dataset'))
    assert.deepEqual(back.manifest.calendar, { first: cal[0], last: cal[cal.length - 1], days: 313 })
    const store = join(dir, 'store')
    const sm = await buildStore({ dataset: join(dir, 'dataset'), store })
    assert.equal(sm.dataset.kind, 'vendor')
    assert.equal(sm.data_as_of, cal[cal.length - 1])
    assert.ok(await exists(join(store, 'CURRENT')))
    const report = JSON.parse(await readFile(join(dir, 'dataset', 'import-report.json'), 'utf8'))
    assert.ok(report.summary.stocks >= 20)
  })

  test('no market ETF bars: a clear error, the previous dataset untouched', async () => {
    const empty = await tempDir('erm3-assemble-')
    await writeIdentity(empty, [])
    await assert.rejects(readDataDirDataset(empty), /no bars of the market ETF SPY/)
  })
})
