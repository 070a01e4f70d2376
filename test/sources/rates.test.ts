import assert from 'node:assert/strict'
import { existsSync, readFileSync } from 'node:fs'
import { after, before, test } from 'node:test'
import { fredFromEnv, fredSource } from '../../src/engine/sources/fred.ts'
import { SourceError } from '../../src/engine/sources/http.ts'
import { treasuryFromEnv, treasurySource } from '../../src/engine/sources/treasury.ts'
import type { SourceFinding } from '../../src/engine/sources/types.ts'
import { type FredObservation, startFredFake } from '../fakes/fred.ts'
import type { FakeServer } from '../fakes/ref-server.ts'
import { startTreasuryFake } from '../fakes/treasury.ts'
import { REAL } from '../helpers/real-data.ts'

const KEY = 'abcdefghijklmnopqrstuvwxyz012345'
const DTB3 = `${REAL}rates/DTB3_fred_2023-01-12_2026-08-12.csv`
const quick = { sleep: async () => {}, random: () => 0, maxRetries: 2 }

let treasury: FakeServer
let fred: FakeServer
let fredRows: FredObservation[] = [
  { date: '2024-01-02', value: '5.24' },
  { date: '2024-01-03', value: '.' },
  { date: '2024-01-04', value: 'n/a' },
  { date: '2024-01-05', value: '5.22' },
]
if (existsSync(DTB3)) {
  fredRows = readFileSync(DTB3, 'utf8')
    .trim()
    .split('\n')
    .slice(1)
    .map((l) => {
      const [date = '', v = ''] = l.split(',')
      return { date, value: v === '' ? '.' : v }
    })
}

before(async () => {
  treasury = await startTreasuryFake([
    { date: '2023-12-28', coupon13w: 5.4 },
    { date: '2023-12-29', coupon13w: 5.37 },
    { date: '2024-01-02', coupon13w: 5.41 },
    { date: '2024-01-03', coupon13w: null },
    { date: '2024-01-04', coupon13w: 5.39 },
    { date: '2024-13-45', coupon13w: 5.0 },
  ])
  fred = await startFredFake(KEY, fredRows)
})
after(async () => {
  await treasury.close()
  await fred.close()
})

test('treasury: the 13-week coupon equivalent across a year end, in fractions, oldest first', async () => {
  const findings: SourceFinding[] = []
  const t = treasurySource({ baseUrl: treasury.url, onFinding: (f) => findings.push(f), http: quick })
  const got = await t.rates?.tbill3m('2023-12-29', '2024-01-04')
  assert.deepEqual(got, [
    { date: '2023-12-29', value: 5.37 / 100 },
    { date: '2024-01-02', value: 5.41 / 100 },
    { date: '2024-01-04', value: 5.39 / 100 },
  ])
  assert.deepEqual(
    findings.map((f) => f.detail),
    ['bill rates 2024: row 2 skipped: unreadable date "13/45/2024"'],
  )
})

test('treasury: a year without a file is a finding; a 429 is retried; a bad range is refused', async () => {
  const findings: SourceFinding[] = []
  const t = treasurySource({ baseUrl: treasury.url, onFinding: (f) => findings.push(f), http: quick })
  treasury.fail({ status: 429, retryAfter: '1' })
  assert.deepEqual(await t.rates?.tbill3m('2022-12-30', '2023-12-28'), [
    { date: '2023-12-28', value: 5.4 / 100 },
  ])
  assert.deepEqual(
    findings.map((f) => f.detail),
    ['no daily bill rates file for 2022'],
  )
  await assert.rejects(t.rates?.tbill3m('2024-02-01', '2024-01-01') ?? Promise.resolve(), /from <= to/)
  assert.equal(treasuryFromEnv({ TREASURY_BASE_URL: treasury.url }).name, 'treasury')
})

test('treasury: a file without the 3-month column is an error naming the column', async () => {
  const other = await startTreasuryFake([])
  other.fail({ status: 200, body: 'Date,"3 Mo"\n01/02/2024,5.46\n', times: 1 })
  const t = treasurySource({ baseUrl: other.url, http: quick })
  await assert.rejects(
    t.rates?.tbill3m('2024-01-01', '2024-01-05') ?? Promise.resolve(),
    /13 WEEKS COUPON EQUIVALENT/,
  )
  await other.close()
})

test('fred: DTB3 in fractions, "." skipped, equal to a direct reading of the series', async () => {
  const findings: SourceFinding[] = []
  const f = fredSource({ apiKey: KEY, baseUrl: fred.url, onFinding: (x) => findings.push(x), http: quick })
  const from = fredRows[0]?.date ?? ''
  const to = fredRows.at(-1)?.date ?? ''
  const got = (await f.rates?.tbill3m(from, to)) ?? []
  const expected = fredRows
    .filter((r) => r.value !== '.' && !Number.isNaN(Number(r.value)))
    .map((r) => ({ date: r.date, value: Number(r.value) / 100 }))
  assert.ok(expected.length >= 2)
  assert.deepEqual(got, expected)
  assert.equal(
    findings.length,
    fredRows.filter((r) => r.value !== '.' && Number.isNaN(Number(r.value))).length,
  )
  assert.equal(
    new URL(fred.requests.at(-1)?.path ?? '', fred.url).searchParams.get('observation_start'),
    from,
  )
})

test('fred: a refused key is a SourceError that never shows the key; no key, no source', async () => {
  const f = fredSource({ apiKey: 'z'.repeat(32), baseUrl: fred.url, http: quick })
  const err = await f.rates?.tbill3m('2024-01-01', '2024-01-31').catch((e: unknown) => e)
  assert.ok(err instanceof SourceError)
  assert.equal(err.status, 400)
  assert.ok(!err.message.includes('z'.repeat(32)), err.message)
  assert.match(err.message, /fred: HTTP 400 from http:\/\/127\.0\.0\.1:\d+\/fred\/series\/observations/)
  assert.throws(() => fredFromEnv({}), /FRED_API_KEY is not set/)
  fred.fail({ status: 503, times: 3 })
  const down = await fredSource({ apiKey: KEY, baseUrl: fred.url, http: quick })
    .rates?.tbill3m('2024-01-01', '2024-01-31')
    .catch((e: unknown) => e)
  assert.ok(down instanceof SourceError && down.status === 503)
})
