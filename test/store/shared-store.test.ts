import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { GetObjectCommand } from '@aws-sdk/client-s3'
import { publishStore } from '../../src/engine/model-store/publish.ts'
import type { ModelStore } from '../../src/engine/model-store/reader.ts'
import { type BuildSource, openBuildSource } from '../../src/engine/model-store/source.ts'
import { type BlobWriter, LocalBlobs, S3Blobs } from '../../src/engine/object-store/index.ts'
import { fixtureStores } from '../helpers/fixture-store.ts'
import { rawCall } from '../helpers/history-checks.ts'
import { modelledTickers } from '../helpers/portfolio-math.ts'
import {
  type LoopbackServer,
  loggingProxy,
  type S3Server,
  s3Server,
  staticServer,
} from '../helpers/store-servers.ts'
import { startTestApp, type TestApp } from '../helpers/test-app.ts'

/**
 * The model store on shared storage: a build published to a real S3-compatible
 * server on loopback (s3rver) and to a directory under a static HTTP server is served through the
 * real app with the same bytes as the local store; chunk reads are byte ranges (counted on the
 * server side), the remote cache keeps its bound, a store that is down answers 503, and a publish
 * that fails leaves CURRENT (and the nodes) on the old build.
 */

const BUCKET = 'erm3-models'
const PREFIX = 'prod/live'
const CREDS = { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' }

/** Every range request's length ("bytes=a-b"). */
function rangeLength(range: string): number {
  const m = /^bytes=(\d+)-(\d+)$/.exec(range)
  assert.ok(m, `a single range, got ${range}`)
  return Number(m[2]) - Number(m[1]) + 1
}

/** A body with what legitimately differs between two nodes' answers removed (none expected but ids). */
function comparable(text: string): unknown {
  return JSON.parse(text, (k, v) => (k === 'request_id' || k === 'latency_ms' ? undefined : v))
}

describe('shared model store on S3 and HTTP', () => {
  let fx: Awaited<ReturnType<typeof fixtureStores>>
  let s3: S3Server
  let proxy: Awaited<ReturnType<typeof loggingProxy>>
  let pubDir: string
  let http: LoopbackServer
  let http200: LoopbackServer
  const sources: BuildSource[] = []
  const apps: TestApp[] = []
  let local: TestApp
  let viaS3: TestApp
  let viaHttp: TestApp
  let viaHttp200: TestApp
  let s3Source: BuildSource
  let httpSource: BuildSource
  let liveBuild: string
  let tickers: string[]
  const keys = new Map<TestApp, string>()
  const s3Opts = () => ({
    endpoint: proxy.url,
    region: 'us-east-1',
    forcePathStyle: true,
    credentials: CREDS,
  })

  async function appOn(source: BuildSource | null): Promise<TestApp> {
    const t = await startTestApp()
    apps.push(t)
    if (source) {
      sources.push(source)
      t.ctx.models.replace('live', await source.open())
    }
    keys.set(t, await t.key(await t.account(500), { tier: 'premium' }))
    return t
  }

  before(async () => {
    fx = await fixtureStores()
    s3 = await s3Server(BUCKET)
    proxy = await loggingProxy(s3.endpoint)
    pubDir = await mkdtemp(join(tmpdir(), 'erm3-published-'))
    // The two publishes are independent (another target each): run them together.
    const [r] = await Promise.all([
      publishStore(fx.live, new S3Blobs(BUCKET, PREFIX, s3Opts())),
      publishStore(fx.live, new LocalBlobs(pubDir)),
    ])
    liveBuild = r.build
    http = await staticServer(pubDir)
    http200 = await staticServer(pubDir, { ignoreRange: true })
    const remote = (spec: string, cacheMb = 64) =>
      openBuildSource(spec, { s3: s3Opts(), timeoutMs: 10_000, cacheBytes: cacheMb * 2 ** 20 })
    s3Source = remote(`s3://${BUCKET}/${PREFIX}`)
    httpSource = remote(`${http.url}/`)
    // Four independent apps (own home and database each): started together.
    ;[local, viaS3, viaHttp, viaHttp200] = await Promise.all([
      appOn(null),
      appOn(s3Source),
      appOn(httpSource),
      appOn(remote(http200.url)),
    ])
    tickers = (await modelledTickers(local.ctx.models.store('live'))).slice(0, 6)
    assert.ok(tickers.length >= 4)
  })

  after(async () => {
    for (const t of apps) await t.close()
    for (const s of sources) s.close()
    await http?.close()
    await http200?.close()
    await proxy?.close()
    await s3?.close()
    if (pubDir) await rm(pubDir, { recursive: true, force: true })
  })

  test('publish uploads every file of the build, then the listing, then CURRENT; a re-publish uploads nothing', async () => {
    const cur = await s3.client.send(new GetObjectCommand({ Bucket: BUCKET, Key: `${PREFIX}/CURRENT` }))
    assert.deepEqual(
      JSON.parse(await (cur.Body as { transformToString(): Promise<string> }).transformToString()),
      {
        build: liveBuild,
      },
    )
    const localCurrent = JSON.parse(await readFile(join(fx.live, 'CURRENT'), 'utf8')) as { build: string }
    assert.equal(liveBuild, localCurrent.build)
    const listing = JSON.parse(
      await readFile(join(pubDir, 'builds', liveBuild, 'erm3-files.json'), 'utf8'),
    ) as {
      files: Record<string, number>
    }
    const want = await new LocalBlobs(join(fx.live, 'builds', liveBuild)).list('')
    assert.equal(Object.keys(listing.files).length, want.size)
    for (const [p, n] of want) assert.equal(listing.files[p], n, p)
    const before = proxy.log.length
    const again = await publishStore(fx.live, new S3Blobs(BUCKET, PREFIX, s3Opts()))
    assert.equal(again.uploaded, 0)
    assert.equal(again.skipped, want.size)
    assert.equal(again.build, liveBuild)
    const puts = proxy.log.slice(before).filter((l) => l.method === 'PUT')
    assert.deepEqual(
      puts.map((l) => l.path.replace(/\?.*$/, '')),
      [`/${BUCKET}/${PREFIX}/builds/${liveBuild}/erm3-files.json`, `/${BUCKET}/${PREFIX}/CURRENT`],
    )
  })

  test('S3 and HTTP nodes answer /metrics, /ticker-returns and /snapshot exactly as the local store does', async () => {
    const calls: [string, 'GET' | 'POST', string, unknown?][] = []
    for (const t of tickers.slice(0, 4)) {
      calls.push([`metrics ${t}`, 'GET', `/metrics/${t}`])
      calls.push([`ticker-returns ${t}`, 'GET', `/ticker-returns?ticker=${t}&years=3`])
    }
    calls.push([
      'snapshot',
      'POST',
      '/snapshot',
      {
        type: 'portfolio',
        portfolio: tickers.map((ticker, i) => ({ ticker, weight: i + 1 })),
        lookback_days: 252,
      },
    ])
    for (const [what, method, url, body] of calls) {
      const want = await rawCall(local, method, url, keys.get(local) as string, {}, body)
      assert.equal(want.status, 200, `${what}: ${want.text}`)
      for (const [name, t] of [
        ['s3', viaS3],
        ['http', viaHttp],
        ['http without ranges', viaHttp200],
      ] as const) {
        const got = await rawCall(t, method, url, keys.get(t) as string, {}, body)
        assert.equal(got.status, 200, `${what} via ${name}: ${got.text}`)
        assert.deepEqual(comparable(got.text), comparable(want.text), `${what} via ${name}`)
      }
    }
  })

  test('chunks are read by byte range, never whole files, on S3 and on HTTP', async () => {
    const listing = JSON.parse(
      await readFile(join(pubDir, 'builds', liveBuild, 'erm3-files.json'), 'utf8'),
    ) as {
      files: Record<string, number>
    }
    const t = tickers[5]
    for (const [name, log, app] of [
      ['http', http.log, viaHttp],
      ['s3', proxy.log, viaS3],
    ] as const) {
      const start = log.length
      const r = await rawCall(app, 'GET', `/ticker-returns?ticker=${t}&years=3`, keys.get(app) as string)
      assert.equal(r.status, 200)
      const chunkReads = log.slice(start).filter((l) => /\/c\.\d+\.\d+$/.test(l.path.replace(/\?.*$/, '')))
      assert.ok(chunkReads.length > 0, `${name}: chunks were read`)
      for (const l of chunkReads) {
        assert.ok(l.range, `${name}: ${l.path} was fetched whole`)
        const rel = l.path.replace(/\?.*$/, '').replace(/^.*\/builds\/[^/]+\//, '')
        const size = listing.files[rel]
        assert.ok(size, `${rel} is in the listing`)
        assert.ok(rangeLength(l.range) < size, `${name}: ${rel}: ${l.range} of ${size} bytes is a part`)
        assert.equal(l.status, 206, `${name}: ${rel}`)
      }
    }
  })

  test('the remote cache stays within its byte budget and evicts', async () => {
    const budget = 48 * 1024
    const src = openBuildSource(`${http.url}`, { s3: s3Opts(), timeoutMs: 10_000, cacheBytes: budget })
    sources.push(src)
    const store: ModelStore = await src.open()
    const remote = src.remote
    assert.ok(remote)
    for (let pass = 0; pass < 2; pass++) {
      for (let i = 0; i < store.symbols.length; i++) {
        await store.readColumn('fields/price_close', i, 0, 200)
        assert.ok(remote.bytes <= budget, `${remote.bytes} > ${budget}`)
      }
      // Drop the decoded-piece cache between passes so the second pass asks the remote cache again.
      await store.close()
    }
    const misses = remote.stats.misses
    assert.ok(misses > store.symbols.length, `evicted ranges were fetched again (${misses} misses)`)
  })

  test('S3 down: a request needing uncached data answers 503 UNAVAILABLE quickly, then recovers', async () => {
    const t = tickers[4]
    proxy.down = true
    try {
      const started = Date.now()
      const r = await rawCall(viaS3, 'GET', `/metrics/${t}`, keys.get(viaS3) as string)
      assert.equal(r.status, 503, r.text)
      const problem = JSON.parse(r.text) as { code: string; title: string }
      assert.equal(problem.code, 'UNAVAILABLE')
      assert.ok(r.headers['retry-after'], 'Retry-After is set')
      assert.ok(Date.now() - started < 8000, 'no hang')
    } finally {
      proxy.down = false
    }
    // Reads still in flight from the outage may fail a moment longer (later requests share them).
    const end = Date.now() + 5000
    let ok = await rawCall(viaS3, 'GET', `/metrics/${t}`, keys.get(viaS3) as string)
    while (ok.status === 503 && Date.now() < end) {
      await new Promise((r) => setTimeout(r, 100))
      ok = await rawCall(viaS3, 'GET', `/metrics/${t}`, keys.get(viaS3) as string)
    }
    assert.equal(ok.status, 200, ok.text)
  })

  test('HTTP server gone after the node opened the build: 503, not 500', async () => {
    const server = await staticServer(pubDir)
    const src = openBuildSource(server.url, { s3: s3Opts(), timeoutMs: 10_000, cacheBytes: 2 ** 20 })
    const t = await appOn(src)
    await server.close()
    const r = await rawCall(t, 'GET', `/metrics/${tickers[3]}`, keys.get(t) as string)
    assert.equal(r.status, 503, r.text)
    assert.equal((JSON.parse(r.text) as { code: string }).code, 'UNAVAILABLE')
    await assert.rejects(src.current(), (e: Error & { code?: string }) => e.code === 'UNAVAILABLE')
  })

  test('a store that stops answering (accepts, never replies): 503 after ERM3_STORE_TIMEOUT_MS, not a hang', async () => {
    let hang = false
    const server = await staticServer(pubDir, {
      hold: (path) => (hang && /\/c\.\d+\.\d+$/.test(path) ? new Promise<void>(() => {}) : null),
    })
    // The timeout covers every read, opening the store too: long enough for a busy machine to open it.
    const src = openBuildSource(server.url, { s3: s3Opts(), timeoutMs: 1500, cacheBytes: 2 ** 20 })
    try {
      const t = await appOn(src)
      hang = true
      const started = Date.now()
      const r = await rawCall(t, 'GET', `/metrics/${tickers[2]}`, keys.get(t) as string)
      assert.equal(r.status, 503, r.text)
      assert.equal((JSON.parse(r.text) as { code: string }).code, 'UNAVAILABLE')
      const took = Date.now() - started
      assert.ok(took >= 1400 && took < 8000, `answered after ${took} ms`)
    } finally {
      await server.close()
    }
  })

  test('erm3 publish (the CLI) takes the endpoint, region, keys and path style from the AWS variables', async () => {
    const bin = fileURLToPath(new URL('../../bin/erm3.js', import.meta.url))
    // Asynchronously: s3rver runs in this process and must keep answering.
    const run = (args: string[], env: Record<string, string> = {}) =>
      promisify(execFile)(process.execPath, [bin, ...args], {
        env: { ...process.env, ...env },
        encoding: 'utf8',
        timeout: 120_000,
      }).then(
        (r) => ({ code: 0, stdout: r.stdout, stderr: r.stderr }),
        (e: { code: number; stdout: string; stderr: string }) => e,
      )
    // The refused publish touches nothing: it runs alongside the real one.
    const [r, bad] = await Promise.all([
      run(['publish', fx.live, `s3://${BUCKET}/cli/live`], {
        AWS_ENDPOINT_URL_S3: s3.endpoint,
        AWS_REGION: 'eu-west-1',
        AWS_ACCESS_KEY_ID: 'S3RVER',
        AWS_SECRET_ACCESS_KEY: 'S3RVER',
        ERM3_S3_FORCE_PATH_STYLE: 'true',
      }),
      run(['publish', fx.live, 's3://x']),
    ])
    assert.equal(r.code, 0, r.stderr)
    assert.match(r.stdout, new RegExp(`published build ${liveBuild} .* CURRENT switched`))
    const src = openBuildSource(`s3://${BUCKET}/cli/live`, {
      s3: { ...s3Opts(), endpoint: s3.endpoint },
      timeoutMs: 10_000,
      cacheBytes: 2 ** 20,
    })
    sources.push(src)
    assert.equal(await src.current(), liveBuild)
    assert.notEqual(bad.code, 0)
    assert.match(bad.stderr, /s3:\/\/bucket\/prefix/)
  })

  test('a publish that fails part-way leaves CURRENT on the old build, and nodes keep serving it', async () => {
    let puts = 0
    const inner = new S3Blobs(BUCKET, PREFIX, s3Opts())
    const failing: BlobWriter = {
      url: inner.url,
      list: (p) => inner.list(p),
      get: (k) => inner.get(k),
      copy: (from, to) => inner.copy(from, to),
      async put(key, body) {
        if (++puts === 7) throw new Error('injected upload failure')
        await inner.put(key, body)
      },
    }
    // The sandbox fixture is another build (another id and seed): publish it over the live one.
    await assert.rejects(publishStore(fx.sandbox, failing), /injected upload failure/)
    assert.equal(await s3Source.current(), liveBuild)
    const r = await rawCall(viaS3, 'GET', `/metrics/${tickers[0]}`, keys.get(viaS3) as string)
    assert.equal(r.status, 200)
    assert.equal(viaS3.ctx.models.store('live').buildId, liveBuild)
    // Re-running the publish completes it, uploading only what the failed run had not.
    const done = await publishStore(fx.sandbox, inner)
    assert.ok(done.skipped >= 5, `${done.skipped} files were already there`)
    assert.equal(await s3Source.current(), done.build)
    // Put the live build back for any later test.
    await publishStore(fx.live, inner)
    assert.equal(await s3Source.current(), liveBuild)
  })
})
