import assert from 'node:assert/strict'
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { hostname, tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, test } from 'node:test'
import { describeUpdate, UPDATE_EXIT_CODES, updateCommand } from '../../src/cli/commands/update.ts'
import { buildStore } from '../../src/engine/build/index.ts'
import { readManifest } from '../../src/engine/data/dataset-reader.ts'
import { LocalBlobs } from '../../src/engine/object-store/local.ts'
import type { DailyBar } from '../../src/engine/sources/types.ts'
import { assembleDataset } from '../../src/engine/update/assemble.ts'
import { DATA_DIR_FILES, readBars } from '../../src/engine/update/data-dir.ts'
import { afterClose } from '../../src/engine/update/days.ts'
import { runUpdate, type UpdateOptions } from '../../src/engine/update/run.ts'
import { readUpdateStatus } from '../../src/engine/update/status.ts'
import { digests, fakeVendor, makeDataDir, makeMarket } from './market.ts'

const dir = await mkdtemp(join(tmpdir(), 'erm3-update-'))
after(() => rm(dir, { recursive: true, force: true }))
const m = await makeMarket(dir)
const dataDir = join(dir, 'data')
const store = join(dir, 'store')
const published = join(dir, 'published')
const vendor = fakeVendor(m)
const [d0701, d0705, d0706] = m.days.slice(-3)
assert.deepEqual([d0701, d0705, d0706], ['2016-07-01', '2016-07-05', '2016-07-06'])
await makeDataDir(m, dataDir, d0701)
await assembleDataset(dataDir)
await buildStore({ dataset: join(dataDir, DATA_DIR_FILES.dataset), store })

const stocks = m.ds.symbols.filter(
  (s) => m.latest.get(s)?.assetType === 'stock' && m.latest.get(s)?.validTo === null,
)
const opts = (now: string, extra: Partial<UpdateOptions> = {}): UpdateOptions => ({
  dataDir,
  store,
  sources: [vendor.source],
  now: new Date(now),
  settings: { maxShrink: 0.1 },
  ...extra,
})
const current = async (root: string) =>
  JSON.parse(await readFile(join(root, 'CURRENT'), 'utf8')).build as string
const everything = async () => new Map([...(await digests(store)), ...(await digests(dataDir))])
const vendorCalls = () => vendor.calls.day.length + vendor.calls.history.length

/** The dataset the run assembled (from the bars it held) equals one assembled from the files. */
async function assertAssembledFromDisk(): Promise<void> {
  const fromDisk = await assembleDataset(dataDir, { out: join(dir, 'dataset-from-disk') })
  const inRun = await readManifest(join(dataDir, DATA_DIR_FILES.dataset))
  assert.equal(inRun.digest, fromDisk.manifest.digest)
  await rm(join(dir, 'dataset-from-disk'), { recursive: true })
}

/** Every file of the current build of `a` equals `b`'s (manifest aside: it records timings). */
async function assertSameBuild(a: string, b: string): Promise<void> {
  const da = await digests(join(a, 'builds', await current(a)))
  const db = await digests(join(b, 'builds', await current(b)))
  da.delete('manifest.json')
  db.delete('manifest.json')
  assert.ok(da.size > 50, `${da.size} files`)
  assert.deepEqual(da, db)
}

describe('erm3 update', () => {
  test('a holiday is a no-op without vendor calls', async () => {
    const before = await everything()
    // 2016-07-04 20:00 in New York: Independence Day, after the weekend.
    const o = await runUpdate(opts('2016-07-05T00:00:00Z'))
    assert.equal(o.outcome, 'unchanged', o.message)
    assert.equal(vendorCalls(), 0)
    assert.deepEqual(await everything(), before)
  })

  test('before the close + grace of a session it is not fetched yet', async () => {
    // 2016-07-05 17:30 in New York (EDT, UTC−4): closed at 16:00, grace 2 h not over.
    const o = await runUpdate(opts('2016-07-05T21:30:00Z'))
    assert.equal(o.outcome, 'unchanged')
    assert.equal(vendorCalls(), 0)
  })

  test('one update appends a day; the incremental build equals a full build', async () => {
    const o = await runUpdate({
      ...opts(afterClose(d0705).toISOString()),
      publish: new LocalBlobs(published),
    })
    assert.equal(o.outcome, 'updated', o.message)
    assert.deepEqual(o.days, [d0705])
    assert.equal(o.data_as_of_before, d0701)
    assert.equal(o.data_as_of, d0705)
    assert.equal(o.build_kind, 'incremental', o.build_note ?? '')
    assert.equal(o.assemble_note, null, 'the dataset was appended to')
    assert.deepEqual(vendor.calls.day, [d0705])
    const stages = ['read', 'fetch', 'gate', 'append', 'sec', 'assemble', 'build', 'publish']
    assert.deepEqual(Object.keys(o.timings_s ?? {}), stages)
    for (const k of stages) assert.ok((o.timings_s?.[k] ?? -1) >= 0, k)
    await assertAssembledFromDisk()
    assert.equal((await readBars(dataDir, 'SPY')).at(-1)?.date, d0705)
    // A stock's appended adjusted close carries the vendor's close-to-close return.
    const i = m.ds.symbols.indexOf(stocks[0])
    const bars = await readBars(dataDir, stocks[0])
    const [p, q] = bars.slice(-2)
    const want = m.ds.prices.adj_close[i].at(-2) as number
    const prev = m.ds.prices.adj_close[i].at(-3) as number
    assert.ok(Math.abs(q.adjClose / p.adjClose - want / prev) < 1e-12)
    const full = join(dir, 'store-full')
    await buildStore({ dataset: join(dataDir, DATA_DIR_FILES.dataset), store: full })
    await assertSameBuild(store, full)
    assert.equal(o.build, await current(store))
    assert.equal(await current(published), o.build)
    assert.deepEqual(await readUpdateStatus(store), o)
    assert.deepEqual(await readUpdateStatus(new LocalBlobs(published)), o)
    assert.deepEqual(JSON.parse(await readFile(join(dataDir, 'reports', `${d0705}.json`), 'utf8')), o)
  })

  test('running twice changes nothing', async () => {
    const before = await everything()
    const calls = vendorCalls()
    const o = await runUpdate(opts(afterClose(d0705).toISOString()))
    assert.equal(o.outcome, 'unchanged', o.message)
    assert.equal(vendorCalls(), calls)
    assert.deepEqual(await everything(), before)
  })

  const now = afterClose(d0706).toISOString()
  const [bad, split] = [stocks[1], stocks[2]]
  const badTicker = m.latest.get(bad)?.ticker ?? ''
  const splitTicker = m.latest.get(split)?.ticker ?? ''

  test('a vendor down fails the run, the previous build keeps serving', async () => {
    const build = await current(store)
    const bars = await digests(join(dataDir, 'bars'))
    vendor.down = true
    const o = await runUpdate(opts(now))
    vendor.down = false
    assert.equal(o.outcome, 'failed')
    assert.match(o.error ?? '', /503/)
    assert.equal(await current(store), build)
    assert.deepEqual(await digests(join(dataDir, 'bars')), bars)
    assert.equal((await readUpdateStatus(store))?.outcome, 'failed')
  })

  test('policy quarantine: a bad price holds the day back, the previous build keeps serving', async () => {
    vendor.override.set(badTicker, badHistory(bad))
    const build = await current(store)
    const bars = await digests(join(dataDir, 'bars'))
    const o = await runUpdate({ ...opts(now), policy: 'quarantine' })
    assert.equal(o.outcome, 'quarantined', o.message)
    assert.deepEqual(o.days, [])
    const f = o.findings.find((x) => x.kind === 'nonpositive')
    assert.equal(f?.symbol, bad)
    assert.equal(f?.action, 'quarantined')
    assert.equal(await current(store), build)
    assert.deepEqual(await digests(join(dataDir, 'bars')), bars)
    assert.equal((await readUpdateStatus(store))?.outcome, 'quarantined')
  })

  test('policy drop: the bad price is dropped; a split re-downloads that stock', async () => {
    const i = m.ds.symbols.indexOf(split)
    const vendorAdj = splitHistory(i)
    vendor.override.set(splitTicker, vendorAdj)
    const storedBefore = await readBars(dataDir, split)
    const histCalls = vendor.calls.history.length
    const o = await runUpdate(opts(now))
    assert.equal(o.outcome, 'updated', o.message)
    assert.deepEqual(o.days, [d0706])
    const dropped = o.findings.find((x) => x.kind === 'nonpositive')
    assert.equal(dropped?.symbol, bad)
    assert.equal(dropped?.action, 'dropped')
    assert.equal((await readBars(dataDir, bad)).at(-1)?.date, d0705)
    // The split stock's history was downloaded again, kept (a constant rescaling), and its new
    // return is the vendor's new adjusted return.
    assert.deepEqual(vendor.calls.history.slice(histCalls), [splitTicker])
    assert.ok(o.findings.some((x) => x.kind === 'corporate_action' && x.symbol === split))
    assert.ok(!o.findings.some((x) => x.kind === 'restated'))
    const after = await readBars(dataDir, split)
    assert.deepEqual(after.slice(0, -1), storedBefore)
    const [v1, v2] = vendorAdj.slice(-2)
    const [s1, s2] = after.slice(-2)
    assert.equal(s2.date, d0706)
    assert.equal(s2.splitFactor, 2)
    assert.ok(Math.abs(s2.adjClose / s1.adjClose - v2.adjClose / v1.adjClose) < 1e-12)
    assert.equal(o.build_kind, 'incremental', o.build_note ?? '')
    assert.equal(o.assemble_note, null, 'a kept scale is still an append')
    await assertAssembledFromDisk()
    const full = join(dir, 'store-full-2')
    await buildStore({ dataset: join(dataDir, DATA_DIR_FILES.dataset), store: full })
    await assertSameBuild(store, full)
  })

  test('the lock: a live holder fails the run at once; a stale one is taken over', async () => {
    const lock = join(dataDir, DATA_DIR_FILES.lock)
    const holder = { pid: process.pid, host: hostname(), started_at: new Date().toISOString() }
    await writeFile(lock, JSON.stringify(holder))
    const busy = await runUpdate(opts(now))
    assert.equal(busy.outcome, 'failed')
    assert.match(busy.error ?? '', /another update holds .*update\.lock/)
    await writeFile(lock, JSON.stringify({ ...holder, started_at: '2016-07-01T00:00:00Z' }))
    const stale = await runUpdate(opts(now))
    assert.equal(stale.outcome, 'unchanged', stale.message)
    await assert.rejects(readFile(lock), /ENOENT/)
  })

  test('the CLI: --date, the summary, exit codes, bad options named', async () => {
    const o = await updateCommand({ dataDir, store, date: d0706 }, [vendor.source], {})
    assert.equal(o.outcome, 'unchanged', o.message)
    assert.equal(UPDATE_EXIT_CODES[o.outcome], 0)
    assert.equal(UPDATE_EXIT_CODES.quarantined, 3)
    assert.equal(UPDATE_EXIT_CODES.failed, 1)
    assert.match(describeUpdate(o), /^update unchanged: up to date: no session has closed since 2016-07-06\n/)
    await assert.rejects(
      updateCommand({ dataDir, store, policy: 'lenient' }, [], {}),
      /--policy must be drop or quarantine/,
    )
    await assert.rejects(
      updateCommand({ dataDir, store }, [], { ERM3_UPDATE_POLICY: 'x' }),
      /ERM3_UPDATE_POLICY must be drop/,
    )
    await assert.rejects(
      updateCommand({ dataDir, store, date: '2016-02-30' }, [], {}),
      /--date must be YYYY-MM-DD/,
    )
  })
})

/** The vendor's history of symbol `s` with a zero close on the last day. */
function badHistory(s: string): DailyBar[] {
  const i = m.ds.symbols.indexOf(s)
  const out = m.days.map((_, t) => ({
    date: m.days[t],
    close: m.ds.prices.adj_close[i][t],
    adjClose: m.ds.prices.adj_close[i][t],
    volume: 1000 + t,
    splitFactor: 1,
    dividend: 0,
  }))
  out[out.length - 1] = { ...out[out.length - 1], close: 0, adjClose: 0 }
  return out.filter((b) => !Number.isNaN(b.close))
}

/**
 * A 2-for-1 split on the last day: the close halves from then on, and the vendor rescales its
 * whole adjusted history so that the latest adjusted close equals the close.
 */
function splitHistory(i: number): DailyBar[] {
  const adj = m.ds.prices.adj_close[i]
  const T = m.days.length
  const lastClose = (3 * adj[T - 1]) / 2
  const k = lastClose / adj[T - 1]
  return m.days
    .map((date, t) => ({
      date,
      close: t === T - 1 ? (3 * adj[t]) / 2 : 3 * adj[t],
      adjClose: adj[t] * k,
      volume: 1000 + t,
      splitFactor: t === T - 1 ? 2 : 1,
      dividend: 0,
    }))
    .filter((b) => !Number.isNaN(b.close))
}
