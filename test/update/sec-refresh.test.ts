import assert from 'node:assert/strict'
import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, test } from 'node:test'
import { buildStore } from '../../src/engine/build/index.ts'
import { readDataset } from '../../src/engine/data/dataset-reader.ts'
import { secSource } from '../../src/engine/sources/sec.ts'
import { assembleDataset } from '../../src/engine/update/assemble.ts'
import { DATA_DIR_FILES, readFetchState } from '../../src/engine/update/data-dir.ts'
import { afterClose } from '../../src/engine/update/days.ts'
import { readShares, writeShares } from '../../src/engine/update/dir-files.ts'
import { runUpdate } from '../../src/engine/update/run.ts'
import { isoFromDay } from '../../src/platform/dates.ts'
import { startSecFake } from '../fakes/sec.ts'
import { fakeVendor, makeDataDir, makeMarket } from './market.ts'

const dir = await mkdtemp(join(tmpdir(), 'erm3-sec-refresh-'))
const sec = await startSecFake({})
after(async () => {
  await sec.close()
  await rm(dir, { recursive: true, force: true })
})
const m = await makeMarket(dir)
const dataDir = join(dir, 'data')
const store = join(dir, 'store')
const [d0701, d0705, d0706] = m.days.slice(-3)
await makeDataDir(m, dataDir, d0701)

// Two listed stocks with a CIK: one files a 10-Q on 2016-07-05, the other only an 8-K.
const listed = m.ds.symbols.filter(
  (s) => m.latest.get(s)?.assetType === 'stock' && m.latest.get(s)?.validTo === null,
)
const [filer, other] = listed.map((s) => m.latest.get(s)?.cik ?? null).filter((c): c is number => c !== null)
const symbol = listed.find((s) => m.latest.get(s)?.cik === filer) as string
const OLD = { cik: filer, end: '2016-03-31', filed: '2016-04-28', shares: 1_000_000 }
const NEW = { cik: filer, end: '2016-06-30', filed: d0705, shares: 1_250_000 }
await writeShares(dataDir, filer, [OLD])
await assembleDataset(dataDir)
await buildStore({ dataset: join(dataDir, DATA_DIR_FILES.dataset), store })
const before = (await readDataset(join(dataDir, DATA_DIR_FILES.dataset))).dataset

/** A companyfacts document whose cover page gives these counts (SEC's wire format). */
const facts = (points: (typeof OLD)[]) => ({
  cik: filer,
  entityName: 'Filer Inc.',
  facts: {
    dei: {
      EntityCommonStockSharesOutstanding: {
        label: 'Entity Common Stock, Shares Outstanding',
        units: {
          shares: points.map((p, i) => ({
            end: p.end,
            val: p.shares,
            accn: `0000950170-16-00000${i}`,
            fy: 2016,
            fp: 'Q',
            form: '10-Q',
            filed: p.filed,
          })),
        },
      },
    },
  },
})

const sources = () => [
  fakeVendor(m).source,
  secSource({ userAgent: 'Test admin@example.com', wwwBaseUrl: sec.url, dataBaseUrl: sec.url }),
]

describe('erm3 update keeps SEC shares and facts current', () => {
  test("a filer's 10-Q in the daily index refreshes its shares: the new day only, the build stays incremental", async () => {
    const fake = await startSecFake({
      companyFacts: { [filer]: facts([OLD, NEW]), [other]: facts([]) },
      dailyIndex: {
        [d0705]: [
          { cik: filer, company: 'FILER INC', form: '10-Q' },
          { cik: other, company: 'OTHER CORP', form: '8-K' },
          { cik: 99_999_999, company: 'NOT IN THE UNIVERSE', form: '10-K' },
        ],
      },
    })
    after(() => fake.close())
    const secOf = secSource({
      userAgent: 'Test admin@example.com',
      wwwBaseUrl: fake.url,
      dataBaseUrl: fake.url,
    })
    const o = await runUpdate({
      dataDir,
      store,
      sources: [sources()[0], secOf],
      now: afterClose(d0705),
      settings: { maxShrink: 0.1 },
    })
    assert.equal(o.outcome, 'updated', o.message)
    assert.deepEqual(o.days, [d0705])
    assert.equal(o.build_kind, 'incremental', o.build_note ?? '')
    // The index of Monday 2016-07-04 (Independence Day) does not exist; that of 07-05 names the filer.
    const paths = fake.requests.map((r) => r.path)
    assert.deepEqual(
      paths.filter((p) => p.includes('daily-index')),
      [
        '/Archives/edgar/daily-index/2016/QTR3/master.20160704.idx',
        '/Archives/edgar/daily-index/2016/QTR3/master.20160705.idx',
      ],
    )
    const cikPath = `/api/xbrl/companyfacts/CIK${String(filer).padStart(10, '0')}.json`
    assert.deepEqual(
      paths.filter((p) => p.includes('companyfacts')),
      [cikPath],
      'only the filer of a report in the universe',
    )
    assert.deepEqual(await readShares(dataDir, filer), [OLD, NEW])
    assert.ok(o.findings.some((f) => f.kind === 'filings' && f.detail.includes(String(filer))))
    assert.equal((await readFetchState(dataDir)).tasks['sec:filings']?.through, d0705)
    // The dataset: the new day has the new count; every earlier day is what it was.
    const { dataset: ds } = await readDataset(join(dataDir, DATA_DIR_FILES.dataset))
    const k = ds.symbols.indexOf(symbol)
    const shares = ds.prices.shares_out?.[k] as Float64Array
    const T = ds.calendar.length
    assert.equal(isoFromDay(ds.calendar[T - 1]), d0705)
    assert.equal(shares[T - 1], NEW.shares)
    assert.equal(shares[T - 2], OLD.shares)
    for (const [j, col] of (ds.prices.shares_out ?? []).entries())
      assert.deepEqual(
        Array.from(col.subarray(0, T - 1)),
        Array.from(before.prices.shares_out?.[j] ?? []),
        ds.symbols[j],
      )
    const report = JSON.parse(await readFile(join(dataDir, 'reports', `${d0705}.json`), 'utf8'))
    assert.equal(report.build_kind, 'incremental')
  })

  test('a day without an index is asked again by the next run; nothing is downloaded', async () => {
    const o = await runUpdate({
      dataDir,
      store,
      sources: sources(),
      now: afterClose(d0706),
      settings: { maxShrink: 0.1 },
    })
    assert.equal(o.outcome, 'updated', o.message)
    assert.equal(o.build_kind, 'incremental', o.build_note ?? '')
    const paths = sec.requests.map((r) => r.path)
    assert.deepEqual(paths, ['/Archives/edgar/daily-index/2016/QTR3/master.20160706.idx'])
    assert.equal((await readFetchState(dataDir)).tasks['sec:filings']?.through, d0705)
    assert.deepEqual(await readShares(dataDir, filer), [OLD, NEW])
  })
})
