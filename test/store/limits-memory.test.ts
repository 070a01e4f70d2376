/** In-process limits: the shared conformance suite plus the memory bounds only this backend has. */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import {
  createMemoryCache,
  createMemoryConcurrencyLimiter,
  createMemoryLimits,
  createMemoryRateLimiter,
} from '../../src/store/limits/memory.ts'
import { limitsConformance, T0 } from './limits-conformance.ts'

limitsConformance('memory', async () => createMemoryLimits())

describe('memory limits: bounded memory', () => {
  it('the cache evicts least recently used entries to stay within its byte bound', async () => {
    let now = 0
    const cache = createMemoryCache({ cacheMaxBytes: 1000, clock: () => now })
    const kb = (c: string) => Buffer.alloc(299, c) // + 1 byte of key = 300 counted
    for (const k of ['a', 'b', 'c']) await cache.set(k, kb(k), 10_000)
    assert.equal(cache.bytes, 900)
    assert.ok(await cache.get('a')) // a is now the most recently used
    await cache.set('d', kb('d'), 10_000)
    assert.equal(await cache.get('b'), null, 'b was least recently used')
    assert.deepEqual(
      await Promise.all(['a', 'c', 'd'].map(async (k) => (await cache.get(k))?.[0])),
      [97, 99, 100],
    )
    assert.equal(cache.bytes, 900)
    await cache.set('big', Buffer.alloc(1000), 10_000)
    assert.equal(await cache.get('big'), null, 'a value larger than the bound is not cached')
    assert.equal(cache.bytes, 900)
    now = 10_000
    assert.equal(await cache.get('a'), null, 'TTL on the injected clock')
    assert.equal(cache.bytes, 600)
  })

  it('the cache keeps a value in memory of its own, never a slice pinning a shared slab', async () => {
    const cache = createMemoryCache({ cacheMaxBytes: 1000 })
    const slab = Buffer.from('xxxxvaluexxxx')
    await cache.set('k', slab.subarray(4, 9), 10_000)
    slab.fill(0)
    const kept = await cache.get('k')
    assert.equal(kept?.toString(), 'value')
    assert.equal(kept?.buffer.byteLength, 5)
    assert.equal(cache.bytes, 6)
  })

  it('idle buckets and lease sets are swept lazily: state stays proportional to busy keys', async () => {
    const rate = createMemoryRateLimiter()
    const rule = { limit: 60, periodMs: 60_000, burst: 5 }
    for (let i = 0; i < 5000; i++) await rate.take(`k${i}`, rule, T0)
    assert.equal(rate.size, 5000)
    // An hour later every one of those buckets is full again, i.e. indistinguishable from absent:
    // a sweep (when the map has doubled) drops them, so 10,000 busy keys cost < 15,000 entries.
    for (let i = 0; i < 10_000; i++) await rate.take(`n${i}`, rule, T0 + 3_600_000)
    assert.ok(rate.size < 15_000, `size ${rate.size}`)

    const conc = createMemoryConcurrencyLimiter()
    for (let i = 0; i < 5000; i++) await conc.acquire(`k${i}`, 10, 1000, T0)
    for (let i = 0; i < 10_000; i++) await conc.acquire(`n${i}`, 10, 1000, T0 + 5000)
    assert.ok(conc.size < 15_000, `size ${conc.size}`)
    // A swept (expired) key behaves as new.
    assert.deepEqual((await conc.acquire('k1', 1, 1000, T0 + 5000)).active, 1)

    // A released key's emptied entry stays for its next request, and is swept like an expired one.
    const back = createMemoryConcurrencyLimiter()
    const cycle = async (key: string, now: number) => {
      const d = await back.acquire(key, 10, 1000, now)
      await back.release(key, d.leaseId as string)
    }
    for (let i = 0; i < 5000; i++) await cycle(`k${i}`, T0)
    assert.ok(back.size <= 5000, `size ${back.size}`)
    for (let i = 0; i < 10_000; i++) await cycle(`n${i}`, T0 + 1)
    assert.ok(back.size < 15_000, `size ${back.size}`)
    assert.equal((await back.acquire('k1', 1, 1000, T0 + 2)).active, 1, 'a released slot is free again')
  })
})
