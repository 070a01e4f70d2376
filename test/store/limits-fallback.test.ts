/**
 * The fallback backend. No Redis server needed: the dead primary is a Redis URL on a closed port
 * (and a socket that accepts but never answers), so this runs everywhere. Proves that with the
 * primary down requests are still limited — by the local backend, passing the whole conformance
 * suite — /health says degraded, nothing hangs, and the primary is used again once it is back.
 */
import assert from 'node:assert/strict'
import { createServer, type Socket } from 'node:net'
import { describe, it } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { createFallbackLimits } from '../../src/store/limits/fallback.ts'
import { createMemoryLimits } from '../../src/store/limits/memory.ts'
import { createRedisLimits } from '../../src/store/limits/redis.ts'
import type { LimitsBackend } from '../../src/store/limits/types.ts'
import { drain, freshKey, limitsConformance, T0 } from './limits-conformance.ts'

const DEAD = 'redis://127.0.0.1:1'
const DEGRADED = { ok: true, degraded: true, detail: 'redis unreachable: using local limits' }
const rule = { limit: 60, periodMs: 60_000, burst: 5 }

limitsConformance('fallback over a dead Redis', async () =>
  createFallbackLimits(createRedisLimits(DEAD), createMemoryLimits()),
)

/** A memory backend whose every operation throws while `down` is set. */
function switchable(): { backend: LimitsBackend; down: boolean } {
  const inner = createMemoryLimits()
  const state = { down: false, backend: inner }
  const guard =
    <A extends unknown[], R>(f: (...a: A) => Promise<R>) =>
    async (...a: A): Promise<R> => {
      if (state.down) throw new Error('connection refused')
      return f(...a)
    }
  state.backend = {
    backend: 'redis',
    rate: { take: guard(inner.rate.take) },
    concurrency: {
      acquire: guard(inner.concurrency.acquire),
      release: guard(inner.concurrency.release),
      renew: guard(inner.concurrency.renew),
    },
    cache: { get: guard(inner.cache.get), set: guard(inner.cache.set) },
    health: async () => (state.down ? { ok: false, degraded: false, detail: 'down' } : inner.health()),
    close: inner.close,
  }
  return state
}

describe('fallback limits', () => {
  it('a closed Redis port: still limited, degraded in /health, and fast', async () => {
    const logs: string[] = []
    const fb = createFallbackLimits(createRedisLimits(DEAD), createMemoryLimits(), (m) => logs.push(m))
    try {
      const started = performance.now()
      const ds = await drain(fb, freshKey('dead'), rule, T0, 7)
      assert.deepEqual(
        ds.map((d) => d.allowed),
        [true, true, true, true, true, false, false],
      )
      assert.deepEqual(await fb.health(), DEGRADED)
      assert.equal(fb.degraded, true)
      const lease = await fb.concurrency.acquire('k', 1, 60_000, T0)
      assert.equal((await fb.concurrency.acquire('k', 1, 60_000, T0)).ok, false)
      await fb.concurrency.release('k', String(lease.leaseId))
      assert.equal(
        (await fb.concurrency.acquire('k', 1, 60_000, T0)).ok,
        true,
        'local lease released locally',
      )
      // Each of the takes waiting out the 1 s command timeout would take 6 s or more.
      assert.ok(performance.now() - started < 4000, `took ${performance.now() - started} ms`)
      assert.equal(logs.length, 1, 'one log line on the transition, not one per request')
    } finally {
      await fb.close()
    }
  })

  it('a Redis that accepts but never answers: bounded by the connect timeout, then local', async () => {
    const sockets: Socket[] = []
    const silent = createServer((s) => sockets.push(s))
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r))
    const address = silent.address()
    const port = typeof address === 'object' && address ? address.port : 0
    const fb = createFallbackLimits(
      createRedisLimits(`redis://127.0.0.1:${port}`, { connectTimeoutMs: 300 }),
      createMemoryLimits(),
    )
    try {
      const started = performance.now()
      const ds = await drain(fb, freshKey('silent'), rule, T0, 6)
      assert.deepEqual(ds.filter((d) => d.allowed).length, 5)
      // Each of the takes waiting out the 1 s command timeout would take 6 s or more.
      assert.ok(performance.now() - started < 4000, `took ${performance.now() - started} ms`)
      assert.deepEqual(await fb.health(), DEGRADED)
    } finally {
      await fb.close()
      for (const s of sockets) s.destroy()
      silent.close()
    }
  })

  it('probes the primary after a back-off and returns to it once it is back', async () => {
    const primary = switchable()
    const logs: string[] = []
    const fb = createFallbackLimits(primary.backend, createMemoryLimits(), (m) => logs.push(m))
    const key = freshKey('flaky')
    await drain(fb, key, rule, T0, 2) // shared state: 2 taken
    primary.down = true
    // Calls in flight when the outage begins all fail; that must not stretch the back-off.
    const local = await Promise.all(Array.from({ length: 6 }, () => fb.rate.take(key, rule, T0)))
    assert.equal(local.filter((d) => d.allowed).length, 5, 'the local bucket starts full')
    assert.deepEqual(await fb.health(), DEGRADED)
    primary.down = false
    // Within the back-off the local backend still serves (its bucket is empty).
    assert.equal((await fb.rate.take(key, rule, T0)).allowed, false)
    await sleep(600)
    const back = await fb.rate.take(key, rule, T0)
    assert.deepEqual([back.allowed, back.remaining], [true, 2], 'primary again: its 2 taken + this one')
    assert.deepEqual(await fb.health(), { ok: true, degraded: false, detail: 'in-process limits' })
    assert.equal(logs.length, 2)
    await fb.close()
  })

  it('a malformed rule is the caller’s error, not an outage', async () => {
    const fb = createFallbackLimits(switchable().backend, createMemoryLimits())
    await assert.rejects(fb.rate.take('k', { limit: 0, periodMs: 1000, burst: 1 }, T0), RangeError)
    assert.equal(fb.degraded, false)
  })
})
