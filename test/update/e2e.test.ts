/**
 * Real data end to end, against a fake Polygon on loopback speaking Polygon's wire format:
 * `erm3 data fetch` backfills N sessions, a node serves the published build, the vendor publishes
 * session N+1 with a 2-for-1 split, a rename and a bad price, `erm3 update` (the real CLI, in a
 * child process) runs, and the node answers with the new data_as_of without a restart. The split
 * stock's return is the vendor's new adjusted return, the rename continues one symbol, the bad
 * price is dropped and reported, and the incremental build equals a full build of the same data.
 */
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { pino } from 'pino'
import { buildStore } from '../../src/engine/build/index.ts'
import { readDataset } from '../../src/engine/data/dataset-reader.ts'
import type { Dataset } from '../../src/engine/data/format.ts'
import { synthesizeDataset } from '../../src/engine/data/synthesize.ts'
import { publishStore } from '../../src/engine/model-store/publish.ts'
import { type BuildSource, openBuildSource } from '../../src/engine/model-store/source.ts'
import { LocalBlobs } from '../../src/engine/object-store/index.ts'
import { assembleDataset } from '../../src/engine/update/assemble.ts'
import { writeClassification } from '../../src/engine/update/dir-files.ts'
import { readIdentity } from '../../src/engine/update/identity.ts'
import type { UpdateOutcome } from '../../src/engine/update/types.ts'
import { isoFromDay } from '../../src/platform/dates.ts'
import { type ModelReloader, startModelReload } from '../../src/services/model-reload.ts'
import { type FakePolygon, type FakePolygonMarket, startFakePolygon } from '../fakes/polygon.ts'
import { rawCall } from '../helpers/history-checks.ts'
import { startTestApp, type TestApp } from '../helpers/test-app.ts'
import { digests } from './market.ts'

const KEY = 'e2e-polygon-key'
const repo = join(import.meta.dirname, '..', '..')

/** Runs the real CLI; resolves with its exit code and output. */
function cli(
  args: string[],
  env: Record<string, string>,
): Promise<{ code: number; out: string; err: string }> {
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, ['--import', 'tsx', join(repo, 'src/cli/main.ts'), ...args], {
      cwd: repo,
      env: { ...process.env, ...env },
    })
    let out = ''
    let err = ''
    p.stdout.on('data', (d) => (out += d))
    p.stderr.on('data', (d) => (err += d))
    p.on('error', reject)
    p.on('close', (code) => resolve({ code: code ?? -1, out, err }))
  })
}

async function until(what: string, ok: () => boolean, ms = 30_000): Promise<void> {
  const end = Date.now() + ms
  while (!ok()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 25))
  }
}

interface World {
  ds: Dataset
  days: string[]
  stocks: { symbol: string; ticker: string; i: number }[]
}

/** The vendor's view of the synthetic market through session `last` (index), with the day-N+1 events. */
function vendorMarket(w: World, last: number, events: boolean): FakePolygonMarket {
  const [split, renamed, bad] = w.stocks
  const m: FakePolygonMarket = { bars: {}, splits: [], dividends: [], tickers: [], events: {} }
  const n1 = w.days.length - 1
  // One listing per security, under its latest ticker (the synthetic market has its own renames).
  const latest = new Map(w.ds.securities.filter((r) => r.validTo === null).map((r) => [r.symbol, r]))
  latest.forEach((r) => {
    const i = w.ds.symbols.indexOf(r.symbol)
    const figi = `BBG${String(1000 + i).padStart(9, '0')}`
    const cik = String(100_000 + i).padStart(10, '0')
    const bars: FakePolygonMarket['bars'][string] = []
    for (let t = 0; t <= last; t++) {
      const adj = w.ds.prices.adj_close[i][t]
      if (Number.isNaN(adj)) continue
      let close = 3 * adj
      if (events && t === n1 && r.symbol === split.symbol) close /= 2
      if (events && t === n1 && r.symbol === bad.symbol) close *= 100
      bars.push({ date: w.days[t], close, volume: 1e6 + i })
    }
    const type = r.assetType === 'etf' ? 'ETF' : 'CS'
    const exchange = r.assetType === 'etf' ? 'ARCX' : 'XNYS'
    const base = { name: r.name, primary_exchange: exchange, type, cik, composite_figi: figi }
    if (events && r.symbol === renamed.symbol) {
      m.bars[r.ticker] = bars.slice(0, -1)
      m.bars.NEWCO = bars.slice(-1)
      m.tickers.push({ ...base, ticker: r.ticker, active: false, delisted_utc: `${w.days[n1]}T00:00:00Z` })
      m.tickers.push({ ...base, ticker: 'NEWCO', active: true })
      m.events[figi] = [
        { date: w.days[0], ticker: r.ticker },
        { date: w.days[n1], ticker: 'NEWCO' },
      ]
      return
    }
    m.bars[r.ticker] = bars
    m.tickers.push({ ...base, ticker: r.ticker, active: true })
  })
  if (events) m.splits.push({ ticker: split.ticker, execution_date: w.days[n1], split_from: 1, split_to: 2 })
  return m
}

describe('real data end to end: fetch, serve, update, hot swap', () => {
  let root: string
  let w: World
  let polygon: FakePolygon
  let app: TestApp
  let source: BuildSource
  let reloader: ModelReloader
  let key: string
  let env: Record<string, string>
  let dataDir: string
  let store: string
  let published: string
  let outcome: UpdateOutcome

  before(async () => {
    root = await mkdtemp(join(tmpdir(), 'erm3-e2e-'))
    const synth = join(root, 'synth')
    await synthesizeDataset(synth, {
      seed: 11,
      stocks: 20,
      start: '2015-01-02',
      end: '2016-03-31',
      fundamentals: false,
    })
    const { dataset: ds } = await readDataset(synth)
    const days = Array.from(ds.calendar, isoFromDay)
    const last = days.length - 1
    const stocks = ds.securities
      .filter((r) => r.assetType === 'stock' && r.validTo === null)
      .map((r) => ({ symbol: r.symbol, ticker: r.ticker, i: ds.symbols.indexOf(r.symbol) }))
      .filter((s) => ds.prices.adj_close[s.i].every((v) => !Number.isNaN(v)))
    w = { ds, days, stocks }
    polygon = await startFakePolygon({ market: vendorMarket(w, last - 1, false), key: KEY })
    dataDir = join(root, 'data')
    store = join(root, 'store')
    published = join(root, 'published')
    env = {
      POLYGON_API_KEY: KEY,
      POLYGON_BASE_URL: polygon.url,
      POLYGON_RATE_PER_MINUTE: '1000000',
      ERM3_HOME: root,
      ERM3_DATA_DIR: dataDir,
    }
    const fetched = await cli(
      ['data', 'fetch', '--source', 'polygon', '--from', days[0], '--to', days[last - 1]],
      env,
    )
    assert.equal(fetched.code, 0, `${fetched.out}\n${fetched.err}`)
    // The sector and industry of each stock, as a user's override would give them.
    const identity = await readIdentity(dataDir)
    const symbolOf = new Map(identity.map((r) => [r.ticker, r.symbol]))
    await writeClassification(
      dataDir,
      ds.securities
        .filter((r) => r.assetType === 'stock' && r.validTo === null && symbolOf.has(r.ticker))
        .map((r) => ({
          symbol: symbolOf.get(r.ticker) as string,
          sector: r.sector ?? '',
          industry: r.industry,
          source: 'override',
          industryEtf: null,
        })),
    )
    await assembleDataset(dataDir)
    await buildStore({ dataset: join(dataDir, 'dataset'), store })
    await publishStore(store, new LocalBlobs(published))
    const opts = { s3: { endpoint: null, region: 'us-east-1', forcePathStyle: true, credentials: null } }
    source = openBuildSource(published, { ...opts, timeoutMs: 10_000, cacheBytes: 0 })
    app = await startTestApp()
    app.ctx.models.replace('live', await source.open())
    key = await app.key(await app.account(100), { tier: 'premium' })
    reloader = startModelReload(app.ctx, source, { intervalMs: 100, log: pino({ level: 'silent' }) })
    assert.equal(app.ctx.models.store('live').dataAsOf, days[last - 1])

    // The vendor publishes session N+1; erm3 update runs as cron would run it.
    polygon.setMarket(vendorMarket(w, last, true))
    const u = await cli(
      ['update', '--source', 'polygon', '--date', days[last], '--publish', published, '--json'],
      env,
    )
    assert.equal(u.code, 0, `${u.out}\n${u.err}`)
    outcome = JSON.parse(u.out) as UpdateOutcome
  })

  after(async () => {
    await reloader?.stop()
    await app?.close()
    source?.close()
    await polygon?.close()
    if (root) await rm(root, { recursive: true, force: true })
  })

  test('the update appends the session and the node serves it without a restart', async () => {
    const n1 = w.days[w.days.length - 1]
    assert.equal(outcome.outcome, 'updated', outcome.message)
    assert.deepEqual(outcome.days, [n1])
    assert.equal(outcome.data_as_of, n1)
    await until('the node to serve the new build', () => app.ctx.models.peek('live')?.dataAsOf === n1)
    const ticker = w.stocks[5].ticker
    const r = await rawCall(app, 'GET', `/metrics/${ticker}`, key)
    assert.equal(r.status, 200, r.text)
    const body = JSON.parse(r.text) as { _metadata: { data_as_of: string; dataset: { kind: string } } }
    assert.equal(body._metadata.data_as_of, n1)
    assert.equal(body._metadata.dataset.kind, 'vendor')
    const status = JSON.parse(
      await readFile(join(published, 'status', 'update.json'), 'utf8'),
    ) as UpdateOutcome
    assert.equal(status.outcome, 'updated')
    assert.equal(status.data_as_of, n1)
  })

  test('the bad price is dropped and reported; the split stock returns the vendor adjusted return', async () => {
    const [split, , bad] = w.stocks
    const { dataset } = await readDataset(join(dataDir, 'dataset'))
    const n = dataset.calendar.length
    assert.equal(isoFromDay(dataset.calendar[n - 1]), w.days[w.days.length - 1])
    const col = (sym: string) => dataset.prices.adj_close[dataset.symbols.indexOf(sym)]
    const finding = outcome.findings.find((f) => f.kind === 'large_move')
    assert.ok(finding, JSON.stringify(outcome.findings))
    assert.equal(finding.symbol, bad.symbol)
    assert.equal(finding.action, 'dropped')
    assert.ok(Number.isNaN(col(bad.symbol)[n - 1]))
    // The vendor's new adjusted history divides every pre-split close by 2: its last return is
    // (3·adj[N+1]/2) / (3·adj[N]/2) − 1, the market's own.
    const a = w.ds.prices.adj_close[split.i]
    const want = a[a.length - 1] / a[a.length - 2]
    const got = col(split.symbol)[n - 1] / col(split.symbol)[n - 2]
    assert.ok(Math.abs(got - want) <= 1e-12 * want, `${got} vs ${want}`)
    assert.ok(Math.abs(col(split.symbol)[n - 2] / (3 * a[a.length - 2]) - 1) < 1e-12, 'stored history kept')
  })

  test('the renamed stock continues one symbol, and its old ticker answers for it', async () => {
    const renamed = w.stocks[1]
    const identity = await readIdentity(dataDir)
    const windows = identity.filter((r) => r.symbol === renamed.symbol)
    assert.deepEqual(
      windows.map((r) => [r.ticker, r.validTo]),
      [
        [renamed.ticker, w.days[w.days.length - 2]],
        ['NEWCO', null],
      ],
    )
    assert.ok(outcome.findings.some((f) => f.kind === 'rename' && f.ticker === 'NEWCO'))
    const { dataset } = await readDataset(join(dataDir, 'dataset'))
    const col = dataset.prices.adj_close[dataset.symbols.indexOf(renamed.symbol)]
    const a = w.ds.prices.adj_close[renamed.i]
    const n = col.length
    assert.ok(Math.abs(col[n - 1] / col[n - 2] - a[a.length - 1] / a[a.length - 2]) < 1e-12)
    const now = await rawCall(app, 'GET', '/metrics/NEWCO', key)
    assert.equal(now.status, 200, now.text)
    const old = await rawCall(app, 'GET', `/metrics/${renamed.ticker}`, key)
    assert.equal(old.status, 200, old.text)
    const sym = (t: string) => (JSON.parse(t) as { symbol: string }).symbol
    assert.equal(sym(now.text), renamed.symbol)
    assert.equal(sym(old.text), renamed.symbol)
  })

  test('every number equals a full build from scratch of the same data', async () => {
    const full = join(root, 'store-full')
    await buildStore({ dataset: join(dataDir, 'dataset'), store: full })
    const current = async (r: string) =>
      (JSON.parse(await readFile(join(r, 'CURRENT'), 'utf8')) as { build: string }).build
    const a = await digests(join(store, 'builds', await current(store)))
    const b = await digests(join(full, 'builds', await current(full)))
    a.delete('manifest.json')
    b.delete('manifest.json')
    assert.ok(a.size > 50, `${a.size} files`)
    assert.deepEqual(a, b)
  })

  test('a second update for the same day changes nothing', async () => {
    const before = await digests(store)
    const u = await cli(['update', '--source', 'polygon', '--date', w.days[w.days.length - 1], '--json'], env)
    assert.equal(u.code, 0, u.err)
    assert.equal((JSON.parse(u.out) as UpdateOutcome).outcome, 'unchanged')
    assert.deepEqual(await digests(store), before)
  })
})
