/**
 * Redis limits against a real server (REDIS_URL; CI exports redis://127.0.0.1:6379): the shared
 * conformance suite, then what only a shared backend can show — two client instances ("nodes")
 * share one bucket and one lease set. Each run uses a random key prefix (test files run in
 * parallel); every key the backend writes carries a PEXPIRE/PX, so nothing outlives the run long.
 */
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { after, before, describe, it, test } from 'node:test'
import { createFallbackLimits } from '../../src/store/limits/fallback.ts'
import { createMemoryLimits } from '../../src/store/limits/memory.ts'
import { createRedisLimits } from '../../src/store/limits/redis.ts'
import type { LimitsBackend } from '../../src/store/limits/types.ts'
import { drain, freshKey, limitsConformance, T0 } from './limits-conformance.ts'

const url = process.env.REDIS_URL
if (!url) {
  test('Redis limits backend', {
    skip: 'REDIS_URL is not set (CI exports REDIS_URL=redis://127.0.0.1:6379)',
  }, () => {})
} else {
  const prefix = `erm3test:${randomUUID()}:`
  limitsConformance('redis', async () => createRedisLimits(url, { prefix }))

  describe('redis limits: two nodes share state', () => {
    let nodeA: LimitsBackend
    let nodeB: LimitsBackend
    before(() => {
      nodeA = createRedisLimits(url, { prefix })
      nodeB = createRedisLimits(url, { prefix })
    })
    after(async () => {
      await Promise.all([nodeA.close(), nodeB.close()])
    })

    it('one bucket: takes alternating between nodes see one budget', async () => {
      const key = freshKey('shared')
      const rule = { limit: 60, periodMs: 60_000, burst: 10 }
      const ds = []
      for (let i = 0; i < 12; i++) ds.push(await (i % 2 ? nodeA : nodeB).rate.take(key, rule, T0))
      assert.deepEqual(
        ds.map((d) => d.allowed),
        [...Array(10).fill(true), false, false],
      )
      assert.deepEqual(
        ds.slice(0, 10).map((d) => d.remaining),
        [9, 8, 7, 6, 5, 4, 3, 2, 1, 0],
      )
      // Concurrent takes from both nodes after one refill interval: exactly one more.
      const more = await Promise.all(
        Array.from({ length: 40 }, (_, i) => (i % 2 ? nodeA : nodeB).rate.take(key, rule, T0 + 1000)),
      )
      assert.equal(more.filter((d) => d.allowed).length, 1)
    })

    it('one lease set: 200 concurrent acquires across two nodes with max 10 → exactly 10', async () => {
      const key = freshKey('herd2')
      const ds = await Promise.all(
        Array.from({ length: 200 }, (_, i) =>
          (i % 2 ? nodeA : nodeB).concurrency.acquire(key, 10, 60_000, T0),
        ),
      )
      const granted = ds.filter((d) => d.ok)
      assert.equal(granted.length, 10)
      // A lease taken on one node can be released on the other (a request may finish anywhere).
      await nodeB.concurrency.release(key, String(granted[0]?.leaseId))
      assert.deepEqual((await nodeA.concurrency.acquire(key, 10, 60_000, T0)).active, 10)
    })

    it('a fallback over a healthy Redis is not degraded and uses the shared state', async () => {
      const fb = createFallbackLimits(createRedisLimits(url, { prefix }), createMemoryLimits())
      try {
        const key = freshKey('fbshared')
        const rule = { limit: 60, periodMs: 60_000, burst: 3 }
        await drain(nodeA, key, rule, T0, 3)
        assert.equal((await fb.rate.take(key, rule, T0)).allowed, false)
        assert.deepEqual(await fb.health(), { ok: true, degraded: false, detail: 'redis' })
      } finally {
        await fb.close()
      }
    })
  })
}
