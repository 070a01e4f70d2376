import assert from 'node:assert/strict'
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { test } from 'node:test'
import { parseOverrides } from '../../src/engine/sources/classify.ts'
import type { EtfHolding, FilerProfile, Source } from '../../src/engine/sources/types.ts'
import { readClassification } from '../../src/engine/update/dir-files.ts'
import { fetchData } from '../../src/engine/update/fetch.ts'
import { tempDir } from '../data/import-helpers.ts'
import { fakeMarket, fakeSource, listedSymbols } from './fake-source.ts'

const FROM = '2020-01-02'
const END = '2021-03-31'

test('the fetch classifies from ETF holdings, SIC codes and overrides, with provenance', async () => {
  const m = fakeMarket()
  const stocks = listedSymbols(m).filter((s) =>
    m.ds.securities.some((r) => r.symbol === s && r.assetType === 'stock'),
  )
  const cikOf = (s: string) => m.ds.securities.find((r) => r.symbol === s)?.cik ?? 0
  const [held, bySic, overridden, both] = stocks
  const asked: string[][] = []
  const holdings: EtfHolding[] = [
    { etf: 'XLK', ticker: held, weight: 0.05, asOf: END },
    { etf: 'SMH', ticker: held, weight: 0.08, asOf: END },
    // An override wins over holdings.
    { etf: 'XLK', ticker: overridden, weight: 0.02, asOf: END },
    { etf: 'XLF', ticker: both, weight: 0.01, asOf: END },
  ]
  const etfSource: Source = {
    name: 'holdings',
    classification: {
      async holdings(etfs) {
        asked.push([...etfs])
        return holdings.filter((h) => etfs.includes(h.etf))
      },
    },
  }
  const profile = (cik: number, sic: number | null): FilerProfile => ({
    cik,
    name: `Company ${cik}`,
    sic,
    sicDescription: sic === null ? null : 'STATE COMMERCIAL BANKS',
    tickers: [],
    exchanges: [],
    formerNames: [{ name: 'Old Name Inc', from: '2001-01-01', to: '2010-05-01' }],
  })
  const secLike: Source = {
    name: 'sec',
    filings: {
      // Regional banks by SIC: the sector of a stock XLF holds, the industry of one nothing else places.
      submissions: async (cik) =>
        cik === cikOf(bySic) || cik === cikOf(both)
          ? profile(cik, 6022)
          : cik === cikOf(held)
            ? profile(cik, null)
            : null,
      dailyIndex: async () => null,
    },
  }
  const overrides = parseOverrides(
    `ticker,sector,industry\n${overridden},Energy,Oil & Gas Exploration & Production\n`,
    'o.csv',
  )
  const dataDir = await tempDir('erm3-fetch-class-')
  const s = await fetchData({
    dataDir,
    sources: [fakeSource(m), etfSource, secLike],
    from: FROM,
    to: END,
    overrides,
  })
  assert.deepEqual(s.failed, [])
  // One holdings task per ETF of the map: sector SPDRs and subsector ETFs, each asked alone.
  assert.ok(asked.length > 20, `${asked.length} ETFs`)
  assert.ok(asked.every((a) => a.length === 1))
  for (const etf of ['XLK', 'XLF', 'SMH', 'KRE', 'XOP'])
    assert.ok(
      asked.some((a) => a[0] === etf),
      etf,
    )
  assert.equal(
    await readFile(join(dataDir, 'holdings', 'SMH.csv'), 'utf8'),
    `ticker,weight,as_of\r\n${held},0.08,${END}\r\n`,
  )
  const sub = JSON.parse(
    await readFile(join(dataDir, 'submissions', `CIK${String(cikOf(bySic)).padStart(10, '0')}.json`), 'utf8'),
  )
  assert.deepEqual(sub, {
    cik: cikOf(bySic),
    name: `Company ${cikOf(bySic)}`,
    sic: 6022,
    sicDescription: 'STATE COMMERCIAL BANKS',
    formerNames: [{ name: 'Old Name Inc', from: '2001-01-01', to: '2010-05-01' }],
  })
  const c = await readClassification(dataDir)
  const row = (sym: string) => {
    const r = c.get(sym)
    return r ? [r.sector, r.industry, r.source, r.industrySource] : null
  }
  assert.deepEqual(row(held), ['Information Technology', 'Semiconductors', 'holdings:XLK', 'holdings:SMH'])
  assert.deepEqual(row(bySic), ['Financials', 'Regional Banks', 'sic:6022', 'sic:6022'])
  assert.deepEqual(row(overridden), ['Energy', 'Oil & Gas Exploration & Production', 'override', 'override'])
  assert.deepEqual(row(both), ['Financials', 'Regional Banks', 'holdings:XLF', 'sic:6022'])
  // Every other stock is unclassified and reported as such.
  const rest = stocks.slice(4).sort()
  for (const sym of rest) assert.equal(c.get(sym), undefined, sym)
  assert.deepEqual(s.classification?.bySource, { holdings: 2, override: 1, sic: 1 })
  assert.equal(s.classification?.stocks, stocks.length)
  assert.deepEqual(s.classification?.unclassified, rest)
  assert.ok(s.dataset, s.datasetError ?? '')
})
