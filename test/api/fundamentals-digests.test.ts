import assert from 'node:assert/strict'
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { gunzipSync } from 'node:zlib'
import pino from 'pino'
import { readDataset } from '../../src/engine/data/dataset-reader.ts'
import type { Dataset } from '../../src/engine/data/format.ts'
import { parseCompanyFacts } from '../../src/engine/data/fundamentals/index.ts'
import { STORE_FILES } from '../../src/engine/model-store/layout.ts'
import { publishStore } from '../../src/engine/model-store/publish.ts'
import { ModelStore } from '../../src/engine/model-store/reader.ts'
import { currentBuild } from '../../src/engine/model-store/writer.ts'
import { LocalBlobs } from '../../src/engine/object-store/index.ts'
import { type FixtureStores, fixtureStores } from '../helpers/fixture-store.ts'
import { startTestApp, type TestApp } from '../helpers/test-app.ts'

/**
 * The parsed SEC fundamentals digests (STORE_FILES.fundamentals) are gzip-compressed JSON: the
 * build writes `fundamentals/CIK##########.json.gz` that inflates to the filings' parsed quarters;
 * GET /fundamentals answers from them exactly as from a store written before the compression
 * (plain `.json` digests), which still reads, locally and published; a corrupt digest is a 500
 * logged with the file's name, and the server goes on answering.
 */

const GZ = /^CIK\d{10}\.json\.gz$/

interface Stock {
  ticker: string
  cik: number
}

async function buildDir(root: string): Promise<string> {
  const id = await currentBuild(root)
  assert.ok(id, `${root} has a CURRENT build`)
  return join(root, STORE_FILES.builds, id)
}

/** A copy of `root` whose digests are plain JSON under the names the previous code gave them. */
async function oldLayoutCopy(root: string, to: string): Promise<string> {
  cpSync(root, to, { recursive: true })
  const dir = join(await buildDir(to), 'fundamentals')
  for (const name of readdirSync(dir)) {
    writeFileSync(join(dir, name.replace(/\.gz$/, '')), gunzipSync(readFileSync(join(dir, name))))
    rmSync(join(dir, name))
  }
  return to
}

/** The body of an answer without what differs between two apps (billing, request metadata). */
function answer(body: Record<string, unknown>): Record<string, unknown> {
  const { _agent, _metadata, ...rest } = body
  return rest
}

describe('fundamentals digests: gzip in the store, old plain stores still read', () => {
  let fx: FixtureStores
  let ds: Dataset
  let work: string
  let ciks: number[]
  /** Listed stocks with filings. */
  let withFilings: Stock[]

  before(async () => {
    fx = await fixtureStores()
    ds = (await readDataset(join(fx.root, 'live-dataset'), { fundamentals: true })).dataset
    work = mkdtempSync(join(tmpdir(), 'erm3-digests-'))
    ciks = ds.fundamentals.map((f) => f.cik)
    const store = await ModelStore.open(fx.live)
    const have = new Set(ciks)
    withFilings = store.symbols.flatMap((m) => {
      const ticker = m.tickers.find((w) => w.to === null)?.ticker
      return m.asset_type === 'stock' && ticker && m.cik !== null && have.has(m.cik)
        ? [{ ticker, cik: m.cik }]
        : []
    })
    await store.close()
    assert.ok(withFilings.length >= 5, `${withFilings.length} stocks with filings`)
  })
  after(() => rmSync(work, { recursive: true, force: true }))

  test('the build writes every digest as gzip that inflates to the parsed filings', async () => {
    const dir = join(await buildDir(fx.live), 'fundamentals')
    const names = readdirSync(dir).sort()
    assert.equal(names.length, ds.fundamentals.length)
    for (const name of names) assert.match(name, GZ)
    for (const f of ds.fundamentals) {
      const bytes = readFileSync(join(await buildDir(fx.live), STORE_FILES.fundamentals(f.cik)))
      assert.deepEqual([bytes[0], bytes[1]], [0x1f, 0x8b], 'gzip magic')
      const stored = JSON.parse(gunzipSync(bytes).toString('utf8')) as unknown
      const parsed = parseCompanyFacts(JSON.parse(gunzipSync(f.gzipped).toString('utf8')))
      assert.deepEqual(stored, JSON.parse(JSON.stringify(parsed)), `CIK ${f.cik}`)
      assert.ok(bytes.length < JSON.stringify(parsed).length / 4, `CIK ${f.cik} compressed`)
    }
  })

  test('a store with plain .json digests (the previous layout) reads the same documents, local and published', async () => {
    const old = await oldLayoutCopy(fx.live, join(work, 'old'))
    const pubNew = join(work, 'pub-new')
    const pubOld = join(work, 'pub-old')
    await publishStore(fx.live, new LocalBlobs(pubNew))
    await publishStore(old, new LocalBlobs(pubOld))
    const stores = await Promise.all([
      ModelStore.open(fx.live),
      ModelStore.open(old),
      ModelStore.openRemote(new LocalBlobs(pubNew)),
      ModelStore.openRemote(new LocalBlobs(pubOld)),
    ])
    try {
      for (const cik of ciks) {
        const [want, ...others] = await Promise.all(
          stores.map((s) => s.document(STORE_FILES.fundamentals(cik))),
        )
        assert.ok(want !== null && typeof want === 'object', `CIK ${cik}`)
        for (const got of others) assert.deepEqual(got, want, `CIK ${cik}`)
      }
      // A company without filings reads as null in both layouts (no digest under either name).
      for (const s of stores) assert.equal(await s.document(STORE_FILES.fundamentals(999_999_999)), null)
      const rates = await stores[0].document(STORE_FILES.rates)
      for (const s of stores) assert.deepEqual(await s.document(STORE_FILES.rates), rates)
    } finally {
      await Promise.all(stores.map((s) => s.close()))
    }
  })

  test('GET /fundamentals answers the same from gzip digests as from the previous layout', async () => {
    const old = await oldLayoutCopy(fx.live, join(work, 'old-app'))
    const apps: TestApp[] = [await startTestApp(), await startTestApp({ liveStore: old })]
    try {
      const keys = await Promise.all(apps.map(async (a) => a.key(await a.account(5))))
      for (const { ticker } of withFilings) {
        const query = { periods: '40', grid: 'true' }
        const [gz, plain] = await Promise.all(
          apps.map((a, i) =>
            a.client.call('getFundamentals', { key: keys[i], params: { ticker }, query } as never),
          ),
        )
        const body = gz.ok() as unknown as Record<string, unknown>
        assert.ok((body.periods_returned as number) > 0, ticker)
        assert.deepEqual(answer(body), answer(plain.ok() as unknown as Record<string, unknown>), ticker)
      }
    } finally {
      await Promise.all(apps.map((a) => a.close()))
    }
  })

  test('a corrupt digest (gzip or plain) is a logged 500 naming the file; the server goes on', async () => {
    const root = join(work, 'corrupt')
    cpSync(fx.live, root, { recursive: true })
    const dir = await buildDir(root)
    const [bad, badPlain, good] = withFilings as [Stock, Stock, Stock]
    // A truncated gzip digest, and a previous-layout digest whose JSON is cut short.
    const gz = join(dir, STORE_FILES.fundamentals(bad.cik))
    writeFileSync(gz, readFileSync(gz).subarray(0, 200))
    const plainGz = join(dir, STORE_FILES.fundamentals(badPlain.cik))
    writeFileSync(plainGz.replace(/\.gz$/, ''), gunzipSync(readFileSync(plainGz)).subarray(0, 200))
    rmSync(plainGz)

    const store = await ModelStore.open(root)
    await assert.rejects(
      store.document(STORE_FILES.fundamentals(bad.cik)),
      /CIK\d{10}\.json\.gz is corrupt \(.+\); rebuild the store/,
    )
    await assert.rejects(
      store.document(STORE_FILES.fundamentals(badPlain.cik)),
      /CIK\d{10}\.json is corrupt \(.+\); rebuild the store/,
    )
    await store.close()

    const lines: string[] = []
    const t = await startTestApp({
      liveStore: root,
      log: pino({ level: 'info' }, { write: (s: string) => void lines.push(s) }),
    })
    try {
      const key = await t.key(await t.account(5))
      const get = (ticker: string) =>
        t.client.call('getFundamentals', { key, params: { ticker }, query: {} } as never)
      for (const { ticker, cik } of [bad, badPlain, bad]) {
        const r = await get(ticker)
        assert.equal(r.status, 500, ticker)
        assert.match(r.text, /internal error/i)
        const padded = String(cik).padStart(10, '0')
        assert.ok(
          lines.some((l) => l.includes(`CIK${padded}.json`) && l.includes('is corrupt')),
          `the log names CIK${padded}`,
        )
      }
      assert.equal((await get(good.ticker)).status, 200)
    } finally {
      await t.close()
    }
  })
})
