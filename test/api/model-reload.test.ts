import assert from 'node:assert/strict'
import { cp, mkdtemp, readdir, rm, truncate, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { pino } from 'pino'
import { buildStore } from '../../src/engine/build/index.ts'
import { synthesizeDataset } from '../../src/engine/data/synthesize.ts'
import { publishStore } from '../../src/engine/model-store/publish.ts'
import { type BuildSource, openBuildSource } from '../../src/engine/model-store/source.ts'
import { LocalBlobs } from '../../src/engine/object-store/index.ts'
import { serve } from '../../src/main/server.ts'
import type { ServiceContext } from '../../src/services/context.ts'
import { type ModelReloader, startModelReload } from '../../src/services/model-reload.ts'
import { ModelRegistry } from '../../src/services/models.ts'
import { fixtureStores } from '../helpers/fixture-store.ts'
import { rawCall } from '../helpers/history-checks.ts'
import { modelledTickers } from '../helpers/portfolio-math.ts'
import { type LoopbackServer, staticServer } from '../helpers/store-servers.ts'
import { startTestApp, type TestApp } from '../helpers/test-app.ts'

/**
 * New builds without restarts. Two nodes serve one published store — node 1 over
 * HTTP (a static server on loopback), node 2 from the same directory on disk — sharing one
 * database (PostgreSQL when DATABASE_URL is set, else the SQLite file). Build B is published
 * while a request on build A is held mid-flight; both nodes switch within the poll interval, the
 * held request completes on A, model.updated is enqueued exactly once; a broken build C is
 * refused, /health says so, and B keeps serving.
 */

const POLL_MS = 150
const DB = process.env.DATABASE_URL ? ('postgres' as const) : ('sqlite' as const)

interface Entry {
  msg?: string
  data_as_of?: string
  build?: string
}

function capturingLogger(lines: Entry[]) {
  return pino({ level: 'info' }, { write: (s: string) => void lines.push(JSON.parse(s) as Entry) })
}

async function until(what: string, ok: () => boolean, ms = 30_000): Promise<void> {
  const end = Date.now() + ms
  while (!ok()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 20))
  }
}

/** A body without what differs between calls (ids, timings, the caller's balance). */
function comparable(text: string): unknown {
  return JSON.parse(text, (k, v) =>
    k === 'request_id' || k === 'latency_ms' || k === 'balance_usd' ? undefined : v,
  )
}

describe(`new builds without restarts (two nodes, ${DB})`, () => {
  let root: string
  let pubDir: string
  let storeB: string
  let http: LoopbackServer
  let node1: TestApp
  let ref: TestApp
  let refB: TestApp
  let node2: ServiceContext
  let source1: BuildSource
  let source2: BuildSource
  const reloaders: ModelReloader[] = []
  const log1: Entry[] = []
  const log2: Entry[] = []
  let buildA: string
  let buildB: string
  let dataAsOfB: string
  let key: string
  let refKey: string
  let refBKey: string
  let tickers: string[]
  /** While set, the static server holds every request for build A's files until it resolves. */
  let holdA: { promise: Promise<void>; release: () => void } | null = null
  let heldA = 0

  before(async () => {
    const fx = await fixtureStores()
    root = await mkdtemp(join(tmpdir(), 'erm3-reload-'))
    // Build B: the fixture's market two months longer (a new data_as_of).
    const dataset = join(root, 'dataset-b')
    storeB = join(root, 'store-b')
    await synthesizeDataset(dataset, { seed: 101, stocks: 25, start: '2019-01-02', end: '2022-02-28' })
    await buildStore({ dataset, store: storeB })
    pubDir = join(root, 'published')
    buildA = (await publishStore(fx.live, new LocalBlobs(pubDir))).build
    http = await staticServer(pubDir, {
      hold: (path) => {
        if (!holdA || !path.includes(`/builds/${buildA}/`)) return null
        heldA++
        return holdA.promise
      },
    })
    const opts = { s3: { endpoint: null, region: 'us-east-1', forcePathStyle: true, credentials: null } }
    source1 = openBuildSource(http.url, { ...opts, timeoutMs: 10_000, cacheBytes: 32 * 2 ** 20 })
    source2 = openBuildSource(pubDir, { ...opts, timeoutMs: 10_000, cacheBytes: 0 })
    node1 = await startTestApp({ db: DB })
    node1.ctx.models.replace('live', await source1.open())
    // Node 2: another process's view of the same database, serving the directory itself.
    node2 = {
      ...node1.ctx,
      accounts: node1.anotherStore(),
      models: new ModelRegistry(await source2.open(), null, node1.ctx.config.publicUrl),
    }
    key = await node1.key(await node1.account(100), { tier: 'premium' })
    ref = await startTestApp()
    refKey = await ref.key(await ref.account(100), { tier: 'premium' })
    refB = await startTestApp({ liveStore: storeB })
    refBKey = await refB.key(await refB.account(100), { tier: 'premium' })
    dataAsOfB = refB.ctx.models.store('live').dataAsOf
    assert.notEqual(dataAsOfB, ref.ctx.models.store('live').dataAsOf)
    tickers = await modelledTickers(ref.ctx.models.store('live'))
    reloaders.push(
      startModelReload(node1.ctx, source1, { intervalMs: POLL_MS, log: capturingLogger(log1) }),
      startModelReload(node2, source2, { intervalMs: POLL_MS, log: capturingLogger(log2) }),
    )
  })

  after(async () => {
    holdA?.release()
    for (const r of reloaders) await r.stop()
    await node2?.accounts.close()
    await node2?.models.close()
    await node1?.close()
    await ref?.close()
    await refB?.close()
    source1?.close()
    source2?.close()
    await http?.close()
    if (root) await rm(root, { recursive: true, force: true })
  })

  test('build B published while A serves: both nodes switch, a request in flight on A completes on A, model.updated once', async () => {
    const ticker = tickers[2]
    const wantA = await rawCall(ref, 'GET', `/metrics/${ticker}`, refKey)
    assert.equal(wantA.status, 200)
    let release = () => {}
    holdA = { promise: new Promise<void>((r) => (release = r)), release: () => release() }
    const inFlight = rawCall(node1, 'GET', `/metrics/${ticker}`, key)
    await until('the request on A to reach the store', () => heldA > 0)
    const storeA = node1.ctx.models.store('live')
    assert.equal(storeA.buildId, buildA)

    const published = await publishStore(storeB, new LocalBlobs(pubDir))
    buildB = published.build
    const t0 = Date.now()
    await until('node 1 to serve B', () => node1.ctx.models.peek('live')?.buildId === buildB)
    await until('node 2 to serve B', () => node2.models.peek('live')?.buildId === buildB)
    // A poll every 150 ms (the default is 30 s): seconds at most, even on a busy machine.
    assert.ok(Date.now() - t0 < 15_000, `switched in ${Date.now() - t0} ms`)

    // The old store is closed under the held request (sooner than the 30 s a real node waits):
    // its remaining reads must still complete on A.
    await storeA.close()
    holdA.release()
    holdA = null
    const gotA = await inFlight
    assert.equal(gotA.status, 200, gotA.text)
    assert.deepEqual(comparable(gotA.text), comparable(wantA.text))

    const wantB = await rawCall(refB, 'GET', `/metrics/${ticker}`, refBKey)
    const gotB = await rawCall(node1, 'GET', `/metrics/${ticker}`, key)
    assert.equal(gotB.status, 200, gotB.text)
    assert.deepEqual(comparable(gotB.text), comparable(wantB.text))
    assert.equal(
      (JSON.parse(gotB.text) as { _metadata: { data_as_of: string } })._metadata.data_as_of,
      dataAsOfB,
    )

    const isAnnounce = (l: Entry) => l.msg === 'model.updated enqueued'
    // Logged once the record is written, which can come just after the switch.
    await until('model.updated to be enqueued', () => [...log1, ...log2].some(isAnnounce))
    const announced = [...log1, ...log2].filter(isAnnounce)
    assert.equal(announced.length, 1, JSON.stringify(announced))
    assert.equal(announced[0].data_as_of, dataAsOfB)
    // The record is shared: a third node finds it taken.
    assert.equal(
      await node1.ctx.accounts.webhooks().recordModelBuild(dataAsOfB, 'x', Date.now()),
      false,
      'model.updated for B is recorded once in the shared database',
    )
  })

  test('a broken build C is refused by both nodes; B keeps serving and /health reports the refusal', async () => {
    assert.ok(buildB, 'runs after the switch to B')
    const buildC = `${buildB}-broken`
    const dirB = join(pubDir, 'builds', buildB)
    const dirC = join(pubDir, 'builds', buildC)
    await cp(dirB, dirC, { recursive: true })
    // Every chunk of price_close cut short (an upload that lost its tails), listing unchanged.
    const array = join(dirC, 'fields', 'price_close')
    for (const name of await readdir(array)) if (name.startsWith('c.')) await truncate(join(array, name), 100)
    const before = [log1.length, log2.length]
    await writeFile(join(pubDir, 'CURRENT'), `${JSON.stringify({ build: buildC })}\n`)
    await until('node 1 to refuse C', () => node1.ctx.models.lastReloadFailure?.build === buildC)
    await until('node 2 to refuse C', () => node2.models.lastReloadFailure?.build === buildC)
    assert.equal(node1.ctx.models.peek('live')?.buildId, buildB)
    assert.equal(node2.models.peek('live')?.buildId, buildB)

    const health = await node1.app.fastify.inject({ method: 'GET', url: '/health' })
    assert.equal(health.statusCode, 200)
    const model = (JSON.parse(health.body) as { model: Record<string, unknown> }).model
    assert.equal(model.build_id, buildB)
    assert.equal(model.data_as_of, dataAsOfB)
    assert.ok(typeof model.loaded_at === 'string' && !Number.isNaN(Date.parse(model.loaded_at)))
    const failure = model.last_reload_failure as { build: string; error: string; at: string }
    assert.equal(failure.build, buildC)
    assert.match(failure.error, /shorter than the chunk shape|price_close/)
    assert.ok(!Number.isNaN(Date.parse(failure.at)))

    const r = await rawCall(node1, 'GET', `/metrics/${tickers[3]}`, key)
    assert.equal(r.status, 200, r.text)
    assert.equal(
      (JSON.parse(r.text) as { _metadata: { data_as_of: string } })._metadata.data_as_of,
      dataAsOfB,
    )
    // Refused once, not reloaded at every poll; no model.updated for C.
    await new Promise((res) => setTimeout(res, 3 * POLL_MS))
    const later = [...log1.slice(before[0]), ...log2.slice(before[1])]
    assert.equal(later.filter((l) => l.msg?.includes('refused')).length, 2)
    assert.equal(later.filter((l) => l.msg === 'model.updated enqueued').length, 0)

    // Publishing a good build again (B's successor: A republished) is picked up.
    await publishStore(storeB, new LocalBlobs(pubDir))
    assert.equal(await source1.current(), buildB)
  })

  test('erm3 serve with ERM3_STORE=http://…: serves the published build, /health names it, the poll picks up a new CURRENT', async () => {
    const home = join(root, 'serve-home')
    // The node's own sandbox store (test keys), as a first start would have built it.
    await cp((await fixtureStores()).sandbox, join(home, 'sandbox', 'store'), { recursive: true })
    const server = await serve(
      {
        ERM3_HOME: home,
        ERM3_STORE: http.url,
        ERM3_STORE_POLL_SECONDS: '1',
        PORT: '0',
        DATABASE_URL: '',
        REDIS_URL: '',
      },
      { log: pino({ level: 'silent' }) },
    )
    try {
      const health = async () =>
        ((await (await fetch(`${server.url}/health`)).json()) as { model: Record<string, unknown> }).model
      const served = await source1.current()
      assert.equal((await health()).build_id, served)
      // A back to CURRENT (the same files, already there: only the listing and CURRENT are written).
      const again = await publishStore((await fixtureStores()).live, new LocalBlobs(pubDir))
      assert.equal(again.uploaded, 0)
      const end = Date.now() + 30_000
      let model = await health()
      while (model.build_id !== buildA && Date.now() < end) {
        await new Promise((r) => setTimeout(r, 100))
        model = await health()
      }
      assert.equal(model.build_id, buildA)
      assert.equal(model.data_as_of, ref.ctx.models.store('live').dataAsOf)
    } finally {
      await server.close()
    }
  })
})
