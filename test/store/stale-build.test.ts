/**
 * A node that outlives its build: a build pruned from under a reader
 * fails the read with a retryable 503 instead of answering fill values as data, and a corrected
 * rebuild with the same data_as_of is not answered from the response cache of the old one.
 */
import assert from 'node:assert/strict'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { buildStore } from '../../src/engine/build/index.ts'
import { synthesizeDataset } from '../../src/engine/data/synthesize.ts'
import { ModelStore } from '../../src/engine/model-store/reader.ts'
import { FilePool } from '../../src/engine/zarr/files.ts'
import { fixtureStores } from '../helpers/fixture-store.ts'
import { startTestApp, type TestApp } from '../helpers/test-app.ts'

describe('a missing chunk file', () => {
  let dir: string
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'erm3-pool-'))
  })
  after(() => rmSync(dir, { recursive: true, force: true }))

  test('is an absent chunk while the store exists, and a 503 once the store is gone', async () => {
    const sentinel = join(dir, 'zarr.json')
    writeFileSync(sentinel, '{}')
    writeFileSync(join(dir, 'present'), 'abc')
    const pool = new FilePool(4, sentinel)
    assert.equal(await pool.use(join(dir, 'absent-1'), async () => 'read'), undefined, 'absent: fill value')
    assert.equal(await pool.use(join(dir, 'present'), async () => 'read'), 'read')
    rmSync(sentinel)
    await assert.rejects(
      pool.use(join(dir, 'absent-2'), async () => 'read'),
      (e: Error & { code?: string; retryAfterSeconds?: number }) =>
        e.code === 'UNAVAILABLE' && e.retryAfterSeconds === 1 && /removed/.test(e.message),
    )
    // A file opened before the removal stays readable (POSIX keeps open files), as does a known absence.
    assert.equal(await pool.use(join(dir, 'present'), async () => 'read'), 'read')
    assert.equal(await pool.use(join(dir, 'absent-1'), async () => 'read'), undefined)
    await pool.close()
  })

  test('without a sentinel (a bare zarr reader) a missing chunk is always absent', async () => {
    const pool = new FilePool(4)
    assert.equal(await pool.use(join(dir, 'nothing-here'), async () => 'read'), undefined)
    await pool.close()
  })
})

describe('a rebuild with the same data_as_of', () => {
  let t: TestApp
  let root: string
  let rebuilt: string
  before(async () => {
    const fx = await fixtureStores()
    t = await startTestApp()
    root = mkdtempSync(join(tmpdir(), 'erm3-rebuild-'))
    // The fixture's calendar with another seed: the same data_as_of, other numbers (a correction).
    await synthesizeDataset(join(root, 'dataset'), {
      seed: 9_001,
      stocks: 25,
      start: '2019-01-02',
      end: '2021-12-31',
      fundamentals: false,
    })
    rebuilt = join(root, 'store')
    await buildStore({ dataset: join(root, 'dataset'), store: rebuilt })
    void fx
  })
  after(async () => {
    await t?.close()
    rmSync(root, { recursive: true, force: true })
  })

  // Pay once (docs/decisions/money.md): the account paid for this request on this data_as_of, so
  // the corrected answer is computed from the new build, never served from the old one's cache,
  // and free.
  test('is computed afresh, not served from the old build’s cache, and free (paid on this data_as_of)', async () => {
    const key = await t.key(await t.account(10))
    const old = t.ctx.models.store('live')
    const next = await ModelStore.open(rebuilt)
    assert.equal(next.dataAsOf, old.dataAsOf, 'the rebuild keeps the date')
    assert.notEqual(next.buildId, old.buildId)
    const ticker = 'AAPL'
    const first = await t.client.call('getMetrics', { key, params: { ticker } })
    assert.equal(first.status, 200, first.text)
    const repeat = await t.client.call('getMetrics', { key, params: { ticker } })
    assert.equal(repeat.headers['x-cache-status'], 'HIT')
    t.ctx.models.replace('live', next)
    const after = await t.client.call('getMetrics', { key, params: { ticker } })
    assert.equal(after.status, 200, after.text)
    assert.equal(after.headers['x-cache-status'], 'HIT', 'already paid on this data_as_of')
    assert.equal(after.headers['x-api-cost-usd'], '0')
    const other = await t.key(await t.account(11))
    const fresh = await t.client.call('getMetrics', { key: other, params: { ticker } })
    assert.equal(fresh.headers['x-cache-status'], 'MISS', 'another account: a new build is a new cache entry')
    assert.equal(fresh.headers['x-api-cost-usd'], '0.001')
    const strip = (s: string) => JSON.parse(s, (k, v) => (k === '_agent' ? undefined : v)) as unknown
    assert.notDeepEqual(strip(after.text), strip(first.text), 'the corrected numbers are served')
  })
})

describe('pruning superseded builds', () => {
  let root: string
  before(() => {
    root = mkdtempSync(join(tmpdir(), 'erm3-prune-'))
  })
  after(() => rmSync(root, { recursive: true, force: true }))

  test('a build goes only once it was superseded longer ago than the grace period', async () => {
    const { mkdirSync, utimesSync, existsSync } = await import('node:fs')
    const { pruneBuilds } = await import('../../src/engine/model-store/writer.ts')
    const now = Date.UTC(2026, 10, 25, 12)
    const min = 60_000
    // committed at: a −60 min, b −30 min, c −5 min, d −1 min (current); e has no manifest.
    const builds: [string, number | null][] = [
      ['a', -60],
      ['b', -30],
      ['c', -5],
      ['d', -1],
      ['e', null],
    ]
    for (const [id, at] of builds) {
      mkdirSync(join(root, 'builds', id), { recursive: true })
      if (at !== null) {
        const f = join(root, 'builds', id, 'manifest.json')
        writeFileSync(f, '{}')
        utimesSync(f, (now + at * min) / 1000, (now + at * min) / 1000)
      }
    }
    utimesSync(join(root, 'builds', 'e'), (now - 2 * min) / 1000, (now - 2 * min) / 1000)
    const removed = await pruneBuilds(root, new Set(['d']), now, 10 * min)
    // a was superseded by b 30 min ago and b by c 5 min ago: only a is past the 10 min grace;
    // c (superseded 1 min ago) stays, and so does e (an unfinished build touched 2 min ago).
    assert.deepEqual(removed, ['a'])
    for (const id of ['b', 'c', 'd', 'e']) assert.ok(existsSync(join(root, 'builds', id)), id)
    assert.deepEqual((await pruneBuilds(root, new Set(['d']), now + 30 * min, 10 * min)).sort(), [
      'b',
      'c',
      'e',
    ])
    assert.ok(existsSync(join(root, 'builds', 'd')), 'the kept build stays')
  })
})
