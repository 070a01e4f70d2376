import assert from 'node:assert/strict'
import { test } from 'node:test'
import { INDUSTRIES } from '../../src/engine/data/synth/industries.ts'
import { builtInClassificationMap, classify, parseOverrides } from '../../src/engine/sources/classify.ts'
import { referenceSourceFromEnv } from '../../src/engine/sources/index.ts'
import { SIC_RULES, sicClassification } from '../../src/engine/sources/sic.ts'
import type { EtfHolding } from '../../src/engine/sources/types.ts'

const h = (etf: string, ticker: string, weight: number | null): EtfHolding => ({
  etf,
  ticker,
  weight,
  asOf: '2024-08-08',
})

const brief = (c: ReturnType<typeof classify>) =>
  c.map((x) => [x.ticker, x.sector, x.sectorFrom, x.industry, x.industryFrom])

test('holdings, then SIC, then nothing; overrides win over both', () => {
  const holdings = [
    h('XLK', 'NVDA', 0.12),
    h('SMH', 'NVDA', 0.2),
    h('SOXX', 'NVDA', 0.09),
    h('XLK', 'AMZN', 0.01),
    h('XLY', 'AMZN', 0.22), // two sector ETFs: the larger weight wins
    h('KRE', 'ZION', 0.02), // a subsector ETF alone gives the sector too
    h('XLF', 'ICE', 0.02),
    h('KCE', 'ICE', 0.03), // KCE stands for two industries: SIC picks one
    h('XLF', 'BLK', 0.03),
    h('KCE', 'BLK', 0.04), // no SIC: the first listed industry of KCE
    h('XLK', 'TIE', null),
    h('XLC', 'TIE', null), // unknown weights: the ETF listed first (XLC before XLK)
    h('XLE', 'XOM', 0.2),
    h('SMH', 'XOM', 0.01), // a subsector ETF of another sector is ignored
    h('SPY', 'AAPL', 0.07), // not a sector or subsector ETF
  ]
  const sic = new Map<string, number | null>([
    ['ICE', 6282],
    ['XOM', 2911],
    ['AAPL', 3571],
    ['TINY', 6022],
    ['ODD', 9995],
  ])
  const overrides = new Map([['AMZN', { sector: 'Consumer Discretionary', industry: 'Broadline Retail' }]])
  const tickers = ['NVDA', 'AMZN', 'ZION', 'ICE', 'BLK', 'TIE', 'XOM', 'AAPL', 'TINY', 'ODD', 'NONE']
  assert.deepEqual(brief(classify({ tickers, holdings, sic, overrides })), [
    ['NVDA', 'Information Technology', 'holdings:XLK', 'Semiconductors', 'holdings:SMH'],
    ['AMZN', 'Consumer Discretionary', 'override', 'Broadline Retail', 'override'],
    ['ZION', 'Financials', 'holdings:KRE', 'Regional Banks', 'holdings:KRE'],
    ['ICE', 'Financials', 'holdings:XLF', 'Asset Management & Custody Banks', 'holdings:KCE'],
    ['BLK', 'Financials', 'holdings:XLF', 'Financial Exchanges & Data', 'holdings:KCE'],
    ['TIE', 'Communication Services', 'holdings:XLC', null, null],
    ['XOM', 'Energy', 'holdings:XLE', 'Oil & Gas Refining & Marketing', 'sic:2911'],
    ['AAPL', 'Information Technology', 'sic:3571', 'Technology Hardware, Storage & Peripherals', 'sic:3571'],
    ['TINY', 'Financials', 'sic:6022', 'Regional Banks', 'sic:6022'],
    ['ODD', null, null, null, null],
    ['NONE', null, null, null, null],
  ])
  const without = classify({ tickers: ['AMZN'], holdings, sic })
  assert.deepEqual(brief(without), [['AMZN', 'Consumer Discretionary', 'holdings:XLY', null, null]])
})

test('a SIC industry outside the sector the holdings gave is not used', () => {
  // A pharma SIC code on a stock XLK holds: the sector stays IT, the industry stays unknown.
  const c = classify({ tickers: ['X'], holdings: [h('XLK', 'X', 0.01)], sic: new Map([['X', 2834]]) })
  assert.deepEqual(brief(c), [['X', 'Information Technology', 'holdings:XLK', null, null]])
})

test('SIC rules: every named industry is a built-in one of the named sector; the examples', () => {
  const known = new Set(INDUSTRIES.map((d) => `${d.sector}|${d.industry}`))
  for (const [lo, hi, sector, industry] of SIC_RULES) {
    assert.ok(lo <= hi, `${lo}..${hi}`)
    if (industry !== null) assert.ok(known.has(`${sector}|${industry}`), `${lo}: ${sector} / ${industry}`)
  }
  const at = (sic: number) => sicClassification(sic)
  assert.deepEqual(at(3674), { sector: 'Information Technology', industry: 'Semiconductors' })
  assert.deepEqual(at(7372), { sector: 'Information Technology', industry: 'Application Software' })
  assert.deepEqual(at(6022), { sector: 'Financials', industry: 'Regional Banks' })
  assert.deepEqual(at(2834), { sector: 'Health Care', industry: 'Pharmaceuticals' })
  assert.deepEqual(at(2836), { sector: 'Health Care', industry: 'Biotechnology' })
  assert.deepEqual(at(1311), { sector: 'Energy', industry: 'Oil & Gas Exploration & Production' })
  assert.deepEqual(at(2835), { sector: 'Health Care', industry: null })
  assert.deepEqual(at(2821), { sector: 'Materials', industry: null })
  assert.deepEqual(at(6798), { sector: 'Real Estate', industry: null })
  assert.equal(at(9995), null)
})

test('override CSV: checked against the classification map, errors name the line', () => {
  const map = builtInClassificationMap()
  const got = parseOverrides(
    'ticker,sector,industry\nbrk-b,Financials,\nNVDA,Information Technology,Semiconductors\n',
    'o.csv',
    map,
  )
  assert.deepEqual(
    [...got],
    [
      ['BRK.B', { sector: 'Financials', industry: null }],
      ['NVDA', { sector: 'Information Technology', industry: 'Semiconductors' }],
    ],
  )
  assert.throws(
    () => parseOverrides('ticker,sector\nX,Tech\n', 'o.csv'),
    /o\.csv:2: sector "Tech" is not one/,
  )
  assert.throws(
    () => parseOverrides('ticker,sector,industry\nX,Financials,Semiconductors\n', 'o.csv'),
    /o\.csv:2: industry "Semiconductors" is not an industry of Financials/,
  )
  assert.throws(
    () => parseOverrides('ticker,sector\nX,Energy\nX,Energy\n', 'o.csv'),
    /o\.csv:3: X given twice/,
  )
  assert.throws(() => parseOverrides('symbol,sector\n', 'o.csv'), /expected columns ticker,sector,industry/)
})

test('reference sources are built from the environment by name', () => {
  const env = { SEC_USER_AGENT: 'erm3 tests admin@example.com', FRED_API_KEY: 'k'.repeat(32) }
  const names = (['sec', 'treasury', 'fred', 'holdings'] as const).map(
    (n) => referenceSourceFromEnv(n, env).name,
  )
  assert.deepEqual(names, ['sec', 'treasury', 'fred', 'holdings'])
  assert.throws(() => referenceSourceFromEnv('sec', {}), /SEC_USER_AGENT/)
  assert.throws(() => referenceSourceFromEnv('nope' as 'sec', env), /unknown reference source "nope"/)
})
