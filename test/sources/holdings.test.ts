import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import {
  holdingsFromEnv,
  holdingsSource,
  issuerOf,
  parseProducts,
} from '../../src/engine/sources/holdings.ts'
import { issuerDate } from '../../src/engine/sources/holdings-files.ts'
import type { SourceFinding } from '../../src/engine/sources/types.ts'
import { readXlsxFirstSheet, sharedStrings, sheetRows } from '../../src/engine/sources/xlsx.ts'
import { ISHARES_PATH, SSGA_PATH, ssgaXlsx, startHoldingsFake } from '../fakes/holdings.ts'
import type { FakeServer } from '../fakes/ref-server.ts'

const quick = { sleep: async () => {}, random: () => 0, maxRetries: 1 }
const XLK = {
  etf: 'XLK',
  name: 'Technology Select Sector SPDR® Fund',
  asOf: '2024-08-08',
  rows: [
    { ticker: 'AAPL', name: 'APPLE INC', weight: 14.52 },
    { ticker: 'MSFT', name: 'MICROSOFT CORP & CO <A>', weight: 13.1 },
    { ticker: 'BRK/B', weight: 0.5 },
    { ticker: '-', name: 'US DOLLAR', weight: 0.08 },
    { ticker: 'NOWT', weight: '' },
  ],
}
const SOXX = {
  etf: 'SOXX',
  name: 'iShares Semiconductor ETF',
  product: '239705',
  asOf: '2024-08-07',
  rows: [
    { ticker: 'NVDA', weight: '9.12' },
    { ticker: 'AVGO', weight: '8.50' },
    { ticker: 'XTSLA', name: 'BLK CSH FND TREASURY SL AGENCY', weight: '0.30', assetClass: 'Money Market' },
    { ticker: 'USD', name: 'USD CASH', weight: '0.01', assetClass: 'Cash' },
  ],
}

let h: FakeServer
before(async () => {
  h = await startHoldingsFake({
    ssga: [XLK],
    ishares: [
      SOXX,
      {
        etf: 'IGV',
        name: 'iShares Core S&P 500 ETF',
        product: '111',
        asOf: '2024-08-07',
        rows: [{ ticker: 'AAPL', weight: '7' }],
      },
    ],
    csv: [
      {
        etf: 'SMH',
        asOf: '2024-08-07',
        rows: [
          { ticker: 'TSM', weight: 12.5 },
          { ticker: 'NVDA', weight: 20 },
        ],
      },
    ],
  })
})
after(() => h.close())

const source = (findings: SourceFinding[], extra = {}) =>
  holdingsSource({
    ssgaUrl: `${h.url}${SSGA_PATH}`,
    isharesUrl: `${h.url}${ISHARES_PATH}`,
    isharesProducts: { IGV: '111' },
    csvUrl: `${h.url}/holdings/{etf}.csv`,
    today: () => '2024-08-09',
    onFinding: (f) => findings.push(f),
    http: quick,
    ...extra,
  })

test('the xlsx reader follows the workbook to its first sheet, shared and inline strings, numbers', async () => {
  const rows = await readXlsxFirstSheet(await ssgaXlsx(XLK))
  assert.deepEqual(rows.slice(0, 6), [
    ['Fund Name:', 'Technology Select Sector SPDR® Fund'],
    ['Ticker Symbol:', 'XLK'],
    ['Holdings:', 'As of 08-Aug-2024'],
    [],
    ['Name', 'Ticker', 'Identifier', 'SEDOL', 'Weight', 'Sector', 'Shares Held', 'Local Currency'],
    ['APPLE INC', 'AAPL', '000000000', '0000000', '14.52', '-', '1000', 'USD'],
  ])
  assert.equal(rows[6]?.[0], 'MICROSOFT CORP & CO <A>')
  await assert.rejects(readXlsxFirstSheet(new TextEncoder().encode('Ticker,Weight')), /not an xlsx file/)
})

test('sheet XML details: rich-text runs joined, gaps between cells, entities', () => {
  const strings = sharedStrings(
    '<sst><si><r><t>Ab</t></r><r><t xml:space="preserve">c &amp; d</t></r></si><si><t>x&#233;</t></si></sst>',
  )
  assert.deepEqual(strings, ['Abc & d', 'xé'])
  const rows = sheetRows(
    '<sheetData><row r="2"><c r="A2" t="s"><v>1</v></c><c r="C2"><v>3.5</v></c><c r="D2" t="str"><f>A1</f><v>y</v></c></row></sheetData>',
    strings,
  )
  assert.deepEqual(rows, [[], ['xé', '', '3.5', 'y']])
})

test('issuer dates and issuers', () => {
  assert.equal(issuerDate('08-Aug-2024'), '2024-08-08')
  assert.equal(issuerDate('Aug 07, 2024'), '2024-08-07')
  assert.equal(issuerDate('31-Feb-2024'), null)
  assert.deepEqual(['XLK', 'KRE', 'SOXX', 'SMH', 'ZZZZ'].map(issuerOf), [
    'ssga',
    'ssga',
    'ishares',
    'other',
    'other',
  ])
})

test('SPDR xlsx, iShares CSV and a plain CSV become holdings in fractions', async () => {
  const findings: SourceFinding[] = []
  const got = await source(findings).classification?.holdings(['XLK', 'SOXX', 'SMH'])
  assert.deepEqual(got, [
    { etf: 'XLK', ticker: 'AAPL', weight: 14.52 / 100, asOf: '2024-08-08' },
    { etf: 'XLK', ticker: 'MSFT', weight: 13.1 / 100, asOf: '2024-08-08' },
    { etf: 'XLK', ticker: 'BRK.B', weight: 0.5 / 100, asOf: '2024-08-08' },
    { etf: 'XLK', ticker: 'NOWT', weight: null, asOf: '2024-08-08' },
    { etf: 'SOXX', ticker: 'NVDA', weight: 9.12 / 100, asOf: '2024-08-07' },
    { etf: 'SOXX', ticker: 'AVGO', weight: 8.5 / 100, asOf: '2024-08-07' },
    { etf: 'SMH', ticker: 'TSM', weight: 12.5 / 100, asOf: '2024-08-09' },
    { etf: 'SMH', ticker: 'NVDA', weight: 20 / 100, asOf: '2024-08-09' },
  ])
  assert.deepEqual(findings, [])
})

test('unavailable, misidentified and unconfigured files are findings, not failures', async () => {
  const findings: SourceFinding[] = []
  h.fail({ status: 503, times: 2, match: /xlk/ })
  const got = await source(findings, { csvUrl: null }).classification?.holdings([
    'XLK',
    'KRE',
    'IGV',
    'IBB',
    'SMH',
    'SOXX',
  ])
  assert.deepEqual([...new Set(got?.map((x) => x.etf))], ['SOXX'])
  const details = findings.map((f) => f.detail)
  assert.equal(details.length, 5)
  assert.match(
    details[0] ?? '',
    /^XLK: holdings file unavailable \(holdings: HTTP 503 .*gave up after 2 attempts/,
  )
  assert.match(
    details[1] ?? '',
    /^KRE: holdings file unavailable \(HTTP 404 from http:\/\/127\.0\.0\.1:\d+\/us\/en\/.*holdings-daily-us-en-kre\.xlsx\)/,
  )
  assert.match(
    details[2] ?? '',
    /^IGV: holdings file unreadable: the file is of "iShares Core S&P 500 ETF", not of iShares Expanded Tech-Software Sector ETF/,
  )
  assert.match(details[3] ?? '', /^IBB: holdings file unavailable \(HTTP 404/)
  assert.match(details[4] ?? '', /^SMH: no holdings file configured/)
})

test('a 429 with Retry-After is retried', async () => {
  const findings: SourceFinding[] = []
  h.fail({ status: 429, retryAfter: '2', match: /fileName=SOXX/ })
  const got = await source(findings).classification?.holdings(['SOXX'])
  assert.equal(got?.length, 2)
  assert.deepEqual(findings, [])
})

test('configuration: product ids are ETF=id, and every variable is read', () => {
  assert.deepEqual(parseProducts('soxx=1, IGV=2'), { SOXX: '1', IGV: '2' })
  assert.throws(
    () => parseProducts('SOXX:1'),
    /ERM3_HOLDINGS_ISHARES_PRODUCTS must be ETF=id.*"SOXX:1" is not/,
  )
  assert.equal(holdingsFromEnv({ ERM3_HOLDINGS_CSV_URL: 'https://example.com/{etf}.csv' }).name, 'holdings')
})
