import assert from 'node:assert/strict'
import { existsSync, readFileSync } from 'node:fs'
import { after, before, test } from 'node:test'
import { gunzipSync } from 'node:zlib'
import { SourceError } from '../../src/engine/sources/http.ts'
import { secFromEnv, secSource } from '../../src/engine/sources/sec.ts'
import { dailyShares, sharesFromFacts } from '../../src/engine/sources/sec-shares.ts'
import type { SourceFinding } from '../../src/engine/sources/types.ts'
import { parseIsoDay } from '../../src/platform/dates.ts'
import type { FakeServer } from '../fakes/ref-server.ts'
import { startSecFake } from '../fakes/sec.ts'
import { REAL } from '../helpers/real-data.ts'

const UA = 'erm3 tests admin@example.com'
const APPLE_FACTS = `${REAL}fundamentals/companyfacts/CIK0000320193.json.gz`
const ALPHABET_FACTS = `${REAL}fundamentals/companyfacts/CIK0001652044.json.gz`

const fact = (end: string, val: number, filed: string, accn: string) => ({
  end,
  val,
  filed,
  accn,
  form: '10-Q',
})
const factsDoc = (cik: number, shares: unknown[]) => ({
  cik,
  entityName: 'TEST CO',
  facts: { dei: { EntityCommonStockSharesOutstanding: { units: { shares } } } },
})
const MULTI = factsDoc(42, [
  fact('2024-01-31', 100, '2024-02-10', 'a1'),
  fact('2024-01-31', 30, '2024-02-10', 'a1'), // class B of the same filing: summed
  fact('2024-04-30', 140, '2024-05-09', 'a2'),
  fact('2024-01-31', 135, '2024-06-01', 'a3'), // an amendment of the January period
  { end: 'soon', val: 1, filed: '2024-06-01', accn: 'a4' }, // malformed: skipped
  fact('2024-07-31', -5, '2024-08-09', 'a5'), // not a count: skipped
])

let sec: FakeServer
const sleeps: number[] = []
const quick = { sleep: async (ms: number) => void sleeps.push(ms), random: () => 0, maxRetries: 2 }

before(async () => {
  sec = await startSecFake({
    tickers: [
      [320193, 'Apple Inc.', 'AAPL', 'Nasdaq'],
      [1067983, 'BERKSHIRE HATHAWAY INC', 'BRK-B', 'NYSE'],
      [70858, 'BANK OF AMERICA CORP /DE/', 'BAC-PL', 'NYSE'],
      [1000, 'SMALL CO', 'SMCO', 'NYSE American'],
      [2000, 'PINK CO', 'PNKC', 'OTC'],
      [3000, 'CBOE LISTED', 'CBX', 'CBOE'],
      [4000, 'NO EXCHANGE', 'NOEX', null],
      ['x', 'BROKEN', 7, 'NYSE'],
    ],
    submissions: {
      320193: {
        cik: '320193',
        name: 'Apple Inc.',
        sic: '3571',
        sicDescription: 'Electronic Computers',
        tickers: ['AAPL'],
        exchanges: ['Nasdaq'],
        formerNames: [
          { name: 'APPLE INC', from: '2007-01-10T00:00:00.000Z', to: '2019-08-05T00:00:00.000Z' },
          { name: 'APPLE COMPUTER INC', from: '1994-01-26T00:00:00.000Z', to: '2007-01-04T00:00:00.000Z' },
        ],
      },
    },
    companyFacts: {
      42: MULTI,
      43: factsDoc(44, []), // names another CIK
      45: '{"cik": 45, "facts": {',
      ...(existsSync(APPLE_FACTS)
        ? { 320193: JSON.parse(gunzipSync(readFileSync(APPLE_FACTS)).toString()) }
        : {}),
    },
  })
})
after(() => sec.close())

const source = (extra: Partial<Parameters<typeof secSource>[0]> = {}) =>
  secSource({ userAgent: UA, wwwBaseUrl: sec.url, dataBaseUrl: sec.url, http: quick, ...extra })

test('the source is refused without a User-Agent naming a contact e-mail', () => {
  assert.throws(() => secFromEnv({}), /SEC_USER_AGENT must name the requester and a contact e-mail.*not set/)
  assert.throws(
    () => secSource({ userAgent: 'erm3' }),
    /SEC_USER_AGENT must name the requester and a contact e-mail/,
  )
  assert.throws(() => secSource({ userAgent: UA, ratePerSecond: 12 }), /rate must be in \(0, 10\]/)
  const s = secFromEnv({ SEC_USER_AGENT: UA, SEC_WWW_BASE_URL: 'https://sec.example/' })
  assert.equal(s.name, 'sec')
})

test('like the SEC, the fake refuses a client that does not declare itself', async () => {
  const res = await fetch(`${sec.url}/files/company_tickers_exchange.json`)
  assert.equal(res.status, 403)
})

test('company_tickers_exchange.json becomes listings; malformed rows are findings', async () => {
  const findings: SourceFinding[] = []
  const list = await source({ onFinding: (f) => findings.push(f) }).securities?.list()
  const brief = list?.map((l) => [l.ticker, l.exchange, l.assetType, l.cik, l.active])
  assert.deepEqual(brief, [
    ['AAPL', 'NASDAQ', 'stock', 320193, true],
    ['BRK.B', 'NYSE', 'stock', 1067983, true],
    ['BAC-PL', 'NYSE', 'other', 70858, true],
    ['SMCO', 'NYSE American', 'stock', 1000, true],
    ['PNKC', 'OTC', 'other', 2000, true],
    ['CBX', 'BATS', 'other', 3000, true],
    ['NOEX', 'other', 'other', 4000, true],
  ])
  assert.equal(list?.[0]?.name, 'Apple Inc.')
  assert.equal(findings.length, 1)
  assert.match(findings[0]?.detail ?? '', /row 8 skipped/)
  const last = sec.requests.at(-1)
  assert.equal(last?.headers['user-agent'], UA)
})

test('submissions: SIC, tickers and former names oldest first', async () => {
  const s = await source().filings.submissions(320193)
  assert.deepEqual(s, {
    cik: 320193,
    name: 'Apple Inc.',
    sic: 3571,
    sicDescription: 'Electronic Computers',
    tickers: ['AAPL'],
    exchanges: ['Nasdaq'],
    formerNames: [
      { name: 'APPLE COMPUTER INC', from: '1994-01-26', to: '2007-01-04' },
      { name: 'APPLE INC', from: '2007-01-10', to: '2019-08-05' },
    ],
  })
  assert.equal(await source().filings.submissions(999), null)
  await assert.rejects(source().filings.submissions(-1), /CIK must be a positive integer/)
})

test('shares: classes of one filing summed, amendments kept, bad facts skipped, one download', async () => {
  const s = source()
  const before = sec.requests.length
  const points = await s.shares?.shares(42)
  assert.deepEqual(points, [
    { cik: 42, end: '2024-01-31', filed: '2024-02-10', shares: 130 },
    { cik: 42, end: '2024-04-30', filed: '2024-05-09', shares: 140 },
    { cik: 42, end: '2024-01-31', filed: '2024-06-01', shares: 135 },
  ])
  const facts = await s.fundamentals?.companyFacts(42)
  assert.equal(sec.requests.length - before, 1)
  assert.deepEqual(JSON.parse(gunzipSync(facts?.gzipped ?? new Uint8Array()).toString()), MULTI)
  assert.deepEqual(await s.shares?.shares(77), [])
  assert.equal(await s.fundamentals?.companyFacts(77), null)
})

test('company facts that name another CIK, or are cut off, are errors naming the file', async () => {
  await assert.rejects(source().fundamentals?.companyFacts(43) ?? Promise.resolve(), /CIK0000000043\.json/)
  await assert.rejects(source().shares?.shares(45) ?? Promise.resolve(), /unreadable company facts of CIK 45/)
})

test('429 with Retry-After and 5xx are retried; a persistent 503 is a SourceError', async () => {
  sleeps.length = 0
  sec.fail({ status: 429, retryAfter: '3', match: /submissions/ })
  sec.fail({ status: 502, match: /submissions/ })
  const first = sec.requests.length
  assert.equal((await source().filings.submissions(320193))?.sic, 3571)
  assert.equal(sec.requests.length - first, 3)
  // The sleeps are the pacing's and the backoff's (jitter drawn as 0) and Retry-After's 3 s.
  assert.ok(sleeps.includes(3000), `sleeps ${sleeps}`)
  sec.fail({ status: 503, times: 3, match: /submissions/ })
  const err = await source()
    .filings.submissions(320193)
    .catch((e: unknown) => e)
  assert.ok(err instanceof SourceError)
  assert.equal(err.status, 503)
  assert.match(err.message, /gave up after 3 attempts/)
})

test('requests stay under the configured rate across both hosts', async () => {
  const s = secSource({ userAgent: UA, wwwBaseUrl: sec.url, dataBaseUrl: sec.url, ratePerSecond: 10 })
  const first = sec.requests.length
  await Promise.all([
    s.securities?.list(),
    s.filings.submissions(320193),
    s.filings.submissions(1),
    s.shares?.shares(42),
    s.securities?.list(),
  ])
  const at = sec.requests.slice(first).map((r) => r.at)
  assert.equal(at.length, 5)
  // Starts are spaced 100 ms apart; arrival adds a little latency on each side.
  assert.ok(at[4] - at[0] >= 400 - 40, `5 requests at 10/s took ${at[4] - at[0]} ms`)
})

test('real Apple company facts: stored gzip round-trips, shares equal a direct reading', {
  skip: !existsSync(APPLE_FACTS) && 'real data absent',
}, async () => {
  const doc = JSON.parse(gunzipSync(readFileSync(APPLE_FACTS)).toString())
  const facts = await source().fundamentals?.companyFacts(320193)
  assert.deepEqual(JSON.parse(gunzipSync(facts?.gzipped ?? new Uint8Array()).toString()), doc)
  const points = (await source().shares?.shares(320193)) ?? []
  const raw = doc.facts.dei.EntityCommonStockSharesOutstanding.units.shares as {
    end: string
    filed: string
    val: number
  }[]
  // Apple has one class: every fact is one point.
  assert.equal(points.length, raw.length)
  const last = [...raw].sort((a, b) => a.filed.localeCompare(b.filed) || a.end.localeCompare(b.end)).at(-1)
  assert.deepEqual(points.at(-1), { cik: 320193, end: last?.end, filed: last?.filed, shares: last?.val })
})

test('real Alphabet: class counts carry a dimension, so companyfacts has none', {
  skip: !existsSync(ALPHABET_FACTS) && 'real data absent',
}, () => {
  const doc = JSON.parse(gunzipSync(readFileSync(ALPHABET_FACTS)).toString())
  assert.deepEqual(sharesFromFacts(doc, 1652044), [])
})

test('daily shares: known from the filing date, latest period wins, NaN past the maximum age', () => {
  const points = [
    { cik: 1, end: '2024-01-31', filed: '2024-02-10', shares: 130 },
    { cik: 1, end: '2024-04-30', filed: '2024-05-09', shares: 140 },
    { cik: 1, end: '2024-01-31', filed: '2024-06-01', shares: 135 },
  ]
  const iso = [
    '2024-02-09',
    '2024-02-10',
    '2024-05-08',
    '2024-05-09',
    '2024-06-03',
    '2024-11-16',
    '2024-11-17',
  ]
  const days = iso.map((d) => parseIsoDay(d) ?? 0)
  const got = [...dailyShares(points, days, 200)]
  // 2024-11-16 is 200 days after 2024-04-30, 2024-11-17 is 201.
  assert.deepEqual(got, [Number.NaN, 130, 130, 140, 140, 140, Number.NaN])
})
