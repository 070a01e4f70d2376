/**
 * The update lease: a real PostgreSQL at DATABASE_URL (skipped without it; CI exports
 * DATABASE_URL=postgres://postgres@127.0.0.1:5432/test) and lease files in a temporary directory.
 */
import assert from 'node:assert/strict'
import { once } from 'node:events'
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, test } from 'node:test'
import pg from 'pg'
import { createFileLease, createPostgresLease } from '../../../src/services/updates/lease.ts'

const url = process.env.DATABASE_URL

describe('the PostgreSQL lease', { skip: url ? false : 'DATABASE_URL is not set' }, () => {
  const dbUrl = url ?? ''
  // A key of this run's own, so parallel runs of the suite do not contend.
  const key = 1_000_000 + Math.floor(Math.random() * 1_000_000_000)
  const admin = new pg.Client({ connectionString: dbUrl })
  const ready = admin.connect()
  after(() => admin.end())
  const holders = async () => {
    await ready
    const r = await admin.query<{ pid: number }>(
      "SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND classid = 0 AND objid = $1 AND granted",
      [key],
    )
    return r.rows.map((row) => row.pid)
  }

  test('two contenders: one takes it, the other after the release', async () => {
    const a = createPostgresLease(dbUrl, { key })
    const b = createPostgresLease(dbUrl, { key })
    const [ha, hb] = await Promise.all([a.acquire(), b.acquire()])
    assert.equal([ha, hb].filter((h) => h !== null).length, 1)
    const winner = ha ?? hb
    assert.ok(winner)
    assert.equal((await holders()).length, 1)
    assert.equal(await b.acquire(), null)
    await winner.release()
    assert.deepEqual(await holders(), [])
    const again = await b.acquire()
    assert.ok(again)
    await again.release()
  })

  test('a holder whose connection is killed loses the lease, and another node takes it', async () => {
    const a = await createPostgresLease(dbUrl, { key }).acquire()
    assert.ok(a)
    const [pid] = await holders()
    assert.match(a.holder, new RegExp(`backend ${pid}$`))
    const lost = once(a.lost, 'abort')
    await admin.query('SELECT pg_terminate_backend($1)', [pid])
    await lost
    const b = await createPostgresLease(dbUrl, { key }).acquire()
    assert.ok(b)
    await b.release()
    await a.release() // harmless after the loss
  })

  test('a hung holder (no heartbeat) is ended by idle_session_timeout', async () => {
    const a = await createPostgresLease(dbUrl, { key, ttlMs: 600 }).acquire()
    assert.ok(a)
    // Block this thread well past the ttl: no heartbeat can run, as in a stuck process.
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 2000)
    const b = await createPostgresLease(dbUrl, { key }).acquire()
    assert.ok(b, 'the lock of the silent session was freed')
    await b.release()
    await a.release()
  })
})

describe('the lease file', () => {
  const dirP = mkdtemp(join(tmpdir(), 'erm3-lease-'))
  after(async () => rm(await dirP, { recursive: true, force: true }))
  let n = 0
  const fresh = async () => join(await dirP, `lease-${n++}`)
  const record = (expires: number, token = 'old') =>
    JSON.stringify({
      holder: 'other:1',
      pid: 1,
      host: 'other',
      token,
      expires_at: new Date(expires).toISOString(),
    })

  test('two contenders: one takes it; the file names the holder; release removes it', async () => {
    const path = await fresh()
    const [ha, hb] = await Promise.all([createFileLease(path).acquire(), createFileLease(path).acquire()])
    assert.equal([ha, hb].filter((h) => h !== null).length, 1)
    const winner = ha ?? hb
    assert.ok(winner)
    const rec = JSON.parse(await readFile(path, 'utf8')) as Record<string, unknown>
    assert.equal(rec.pid, process.pid)
    assert.equal(rec.holder, winner.holder)
    assert.ok(Date.parse(String(rec.expires_at)) > Date.now())
    assert.equal(await createFileLease(path).acquire(), null)
    await winner.release()
    await assert.rejects(readFile(path), { code: 'ENOENT' })
  })

  test('a live lease is not taken; an expired one is taken over by exactly one contender', async () => {
    const path = await fresh()
    await writeFile(path, record(Date.now() + 60_000))
    assert.equal(await createFileLease(path).acquire(), null)
    await writeFile(path, record(Date.now() - 1000))
    const all = await Promise.all([1, 2, 3, 4].map(() => createFileLease(path).acquire()))
    const won = all.filter((h) => h !== null)
    assert.equal(won.length, 1)
    const rec = JSON.parse(await readFile(path, 'utf8')) as Record<string, unknown>
    assert.notEqual(rec.token, 'old')
    assert.equal(rec.holder, won[0]?.holder)
    await won[0]?.release()
  })

  test('an unreadable file counts as expired once older than the ttl', async () => {
    const path = await fresh()
    await writeFile(path, '')
    assert.equal(await createFileLease(path, { ttlMs: 60_000 }).acquire(), null)
    const later = createFileLease(path, { ttlMs: 60_000, now: () => Date.now() + 120_000 })
    const h = await later.acquire()
    assert.ok(h)
    await h.release()
  })

  test('a holder renews its lease and notices when it was taken over', async () => {
    const path = await fresh()
    const h = await createFileLease(path, { ttlMs: 300 }).acquire()
    assert.ok(h)
    const first = JSON.parse(await readFile(path, 'utf8')) as { expires_at: string; token: string }
    // Wait for a renewal (the expiry moves), then overwrite the file as a usurper would.
    for (;;) {
      await new Promise((r) => setTimeout(r, 50))
      const now = JSON.parse(await readFile(path, 'utf8')) as { expires_at: string }
      if (now.expires_at !== first.expires_at) break
    }
    const lost = once(h.lost, 'abort')
    await writeFile(path, record(Date.now() + 60_000, 'usurper'))
    // The renewal timer does not hold the process open (unref): this one does, until the loss.
    const keepAlive = setInterval(() => undefined, 1000)
    await lost.finally(() => clearInterval(keepAlive))
    await h.release()
    const rec = JSON.parse(await readFile(path, 'utf8')) as { token: string }
    assert.equal(rec.token, 'usurper', 'release leaves a lease that is no longer ours')
  })
})
