/**
 * The one conformance suite every LimitsBackend passes (in-process, Redis, fallback). Times are
 * driven by the suite (the interface takes `now`), except cache TTLs, which run on the real clock.
 * Keys are fresh per case, so one backend serves the whole suite and Redis runs can share a server.
 */
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { after, before, describe, it } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import type { LimitsBackend, RateDecision, RateRule } from '../../src/store/limits/types.ts'
import * as fc from '../helpers/fc.ts'
import { referenceBucket } from './limits-reference.ts'

export const T0 = 1_700_000_000_000
export const PER_MINUTE: RateRule = { limit: 60, periodMs: 60_000, burst: 100 }
export const PREMIUM: RateRule = { limit: 300, periodMs: 60_000, burst: 500 }
export const REGISTRATION: RateRule = { limit: 3, periodMs: 86_400_000, burst: 3 }

let seq = 0
export const freshKey = (tag: string) => `${tag}-${++seq}-${randomUUID().slice(0, 8)}`

/** `n` takes at one instant, in order; returns the decisions. */
export async function drain(b: LimitsBackend, key: string, rule: RateRule, now: number, n: number) {
  const out: RateDecision[] = []
  for (let i = 0; i < n; i++) out.push(await b.rate.take(key, rule, now))
  return out
}

/**
 * `n` takes sent in one turn, in order (ioredis pipelines them): with a frozen test clock, a
 * bucket's expiry (the real TTL Redis counts from the frozen now) cannot pass between two takes.
 */
async function drainAtOnce(b: LimitsBackend, key: string, rule: RateRule, now: number, n: number) {
  return Promise.all(Array.from({ length: n }, () => b.rate.take(key, rule, now)))
}

export function limitsConformance(name: string, make: () => Promise<LimitsBackend>): void {
  describe(`limits conformance: ${name}`, () => {
    let b: LimitsBackend
    before(async () => {
      b = await make()
    })
    after(async () => {
      await b.close()
    })

    describe('rate (GCRA)', () => {
      it('a full bucket allows exactly burst at one instant, then refuses for one interval', async () => {
        for (const [rule, interval] of [
          [PER_MINUTE, 1000],
          [PREMIUM, 200],
          [REGISTRATION, 28_800_000],
        ] as const) {
          const key = freshKey('burst')
          const ds = await drainAtOnce(b, key, rule, T0, rule.burst + 2)
          ds.slice(0, rule.burst).forEach((d, i) => {
            assert.deepEqual(d, {
              allowed: true,
              remaining: rule.burst - 1 - i,
              resetAt: T0 + (i + 1) * interval,
              retryAfterMs: 0,
            })
          })
          for (const d of ds.slice(rule.burst)) {
            assert.deepEqual(d, {
              allowed: false,
              remaining: 0,
              resetAt: T0 + rule.burst * interval,
              retryAfterMs: interval,
            })
          }
        }
      })

      it('concurrent takes at one instant: exactly burst allowed', async () => {
        const key = freshKey('par')
        const rule = { limit: 60, periodMs: 60_000, burst: 20 }
        const ds = await Promise.all(Array.from({ length: 60 }, () => b.rate.take(key, rule, T0)))
        assert.equal(ds.filter((d) => d.allowed).length, 20)
        assert.equal(new Set(ds.filter((d) => d.allowed).map((d) => d.remaining)).size, 20)
      })

      it('refills at exactly the sustained rate', async () => {
        const key = freshKey('refill')
        const rule = { limit: 60, periodMs: 60_000, burst: 5 }
        await drain(b, key, rule, T0, 5)
        for (let k = 1; k <= 30; k++) {
          const t = T0 + 1000 * k
          const early = await b.rate.take(key, rule, t - 1)
          assert.deepEqual([early.allowed, early.retryAfterMs], [false, 1], `1 ms early at step ${k}`)
          const on = await b.rate.take(key, rule, t)
          assert.deepEqual(
            on,
            { allowed: true, remaining: 0, resetAt: t + 5000, retryAfterMs: 0 },
            `step ${k}`,
          )
          assert.equal((await b.rate.take(key, rule, t)).allowed, false, `second take at step ${k}`)
        }
        // Idle for 2.5 intervals: two whole tokens back, the half does not count.
        const t = T0 + 30_000 + 2500
        const ds = await drain(b, key, rule, t, 3)
        assert.deepEqual(
          ds.map((d) => [d.allowed, d.remaining, d.resetAt - t, d.retryAfterMs]),
          [
            [true, 1, 3500, 0],
            [true, 0, 4500, 0],
            [false, 0, 4500, 500],
          ],
        )
      })

      it('remaining and resetAt track the bucket (reset = full again)', async () => {
        const key = freshKey('reset')
        const rule = { limit: 60, periodMs: 60_000, burst: 10 }
        await drain(b, key, rule, T0, 3)
        assert.deepEqual(await b.rate.take(key, rule, T0 + 1500), {
          allowed: true,
          remaining: 7, // 3 spent, 1.5 refilled, 1 more spent: 7.5 of 10 left, 7 whole
          resetAt: T0 + 4000,
          retryAfterMs: 0,
        })
        // At resetAt the bucket is full: burst takes allowed again.
        const ds = await drain(b, key, rule, T0 + 4000, 11)
        assert.equal(ds.filter((d) => d.allowed).length, 10)
        assert.equal(ds[0]?.remaining, 9)
      })

      it('cost > 1 takes several tokens; retryAfter waits for all of them', async () => {
        const key = freshKey('cost')
        const rule = { limit: 60, periodMs: 60_000, burst: 10 }
        assert.equal((await b.rate.take(key, rule, T0, 4)).remaining, 6)
        assert.equal((await b.rate.take(key, rule, T0, 4)).remaining, 2)
        assert.deepEqual(await b.rate.take(key, rule, T0, 4), {
          allowed: false,
          remaining: 2,
          resetAt: T0 + 8000,
          retryAfterMs: 2000,
        })
        assert.deepEqual(await b.rate.take(key, rule, T0, 2), {
          allowed: true,
          remaining: 0,
          resetAt: T0 + 10_000,
          retryAfterMs: 0,
        })
        await assert.rejects(b.rate.take(key, rule, T0, 11), RangeError)
      })

      it('keys are independent', async () => {
        const [a, c] = [freshKey('a'), freshKey('c')]
        const rule = { limit: 60, periodMs: 60_000, burst: 3 }
        await drain(b, a, rule, T0, 4)
        assert.equal((await b.rate.take(a, rule, T0)).allowed, false)
        assert.deepEqual(await b.rate.take(c, rule, T0), {
          allowed: true,
          remaining: 2,
          resetAt: T0 + 1000,
          retryAfterMs: 0,
        })
      })

      it('matches a reference leaky-bucket model on random request sequences', async () => {
        // Intervals of ≥ 2.9 s keep Redis's real-time PEXPIRE from ending a bucket mid-run;
        // periods off round numbers exercise rules whose interval is not a whole millisecond.
        const ruleArb = fc.record({
          limit: fc.integer({ min: 1, max: 20 }),
          periodMs: fc.integer({ min: 58_000, max: 61_000 }),
          burst: fc.integer({ min: 1, max: 8 }),
        })
        const stepsArb = fc.array(
          fc.record({ dt: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 20_000 })), cost: fc.nat() }),
          { minLength: 1, maxLength: 25 },
        )
        await fc.assert(
          fc.asyncProperty(ruleArb, stepsArb, async (rule, steps) => {
            const key = freshKey('model')
            const model = referenceBucket(rule)
            let now = T0
            for (const { dt, cost: c } of steps) {
              now += dt
              const cost = 1 + (c % rule.burst)
              assert.deepEqual(await b.rate.take(key, rule, now, cost), model.take(now, cost))
            }
          }),
          { numRuns: 60 },
        )
      })
    })

    describe('concurrency leases', () => {
      it('grants max leases, refuses the next, frees on release; double release is harmless', async () => {
        const key = freshKey('lease')
        const ds = []
        for (let i = 0; i < 4; i++) ds.push(await b.concurrency.acquire(key, 3, 60_000, T0))
        assert.deepEqual(
          ds.map((d) => [d.ok, d.active]),
          [
            [true, 1],
            [true, 2],
            [true, 3],
            [false, 3],
          ],
        )
        assert.equal(ds[3]?.leaseId, null)
        const ids = ds.slice(0, 3).map((d) => d.leaseId)
        assert.equal(new Set(ids).size, 3)
        const first = String(ids[0])
        await b.concurrency.release(key, first)
        await b.concurrency.release(key, first)
        await b.concurrency.release(key, 'lse_unknown')
        await b.concurrency.release(freshKey('none'), first)
        const again = await b.concurrency.acquire(key, 3, 60_000, T0 + 1)
        assert.deepEqual([again.ok, again.active], [true, 3])
        // The double release freed one slot, not two.
        assert.deepEqual(await b.concurrency.acquire(key, 3, 60_000, T0 + 2), {
          ok: false,
          leaseId: null,
          active: 3,
        })
      })

      it('expired leases free their slot (a crashed holder never pins it)', async () => {
        const key = freshKey('expire')
        await b.concurrency.acquire(key, 2, 60_000, T0)
        await b.concurrency.acquire(key, 2, 60_000, T0 + 10_000)
        assert.equal((await b.concurrency.acquire(key, 2, 60_000, T0 + 59_999)).ok, false)
        const d = await b.concurrency.acquire(key, 2, 60_000, T0 + 60_000)
        assert.deepEqual([d.ok, d.active], [true, 2])
        assert.equal((await b.concurrency.acquire(key, 2, 60_000, T0 + 60_001)).ok, false)
      })

      it('renew keeps a live lease past its TTL; an expired or released lease is not renewed', async () => {
        const key = freshKey('renew')
        const held = await b.concurrency.acquire(key, 1, 60_000, T0)
        const id = String(held.leaseId)
        assert.equal(await b.concurrency.renew(key, id, 60_000, T0 + 50_000), true)
        // Without the renewal the lease would have expired at T0 + 60 s; now it lasts to T0 + 110 s.
        assert.equal((await b.concurrency.acquire(key, 1, 60_000, T0 + 100_000)).ok, false)
        assert.equal((await b.concurrency.acquire(key, 1, 60_000, T0 + 109_999)).ok, false)
        // Expired at T0 + 110 s: no longer held, so not renewed (another may hold the slot now).
        assert.equal(await b.concurrency.renew(key, id, 60_000, T0 + 110_000), false)
        const next = await b.concurrency.acquire(key, 1, 60_000, T0 + 110_000)
        assert.equal(next.ok, true)
        await b.concurrency.release(key, String(next.leaseId))
        assert.equal(await b.concurrency.renew(key, String(next.leaseId), 60_000, T0 + 110_001), false)
        assert.equal(await b.concurrency.renew(freshKey('none'), id, 60_000, T0), false)
      })

      it('50 concurrent acquires with max 10: exactly 10 granted; keys independent', async () => {
        const key = freshKey('herd')
        const ds = await Promise.all(
          Array.from({ length: 50 }, () => b.concurrency.acquire(key, 10, 60_000, T0)),
        )
        assert.equal(ds.filter((d) => d.ok).length, 10)
        assert.ok(ds.filter((d) => !d.ok).every((d) => d.active === 10 && d.leaseId === null))
        assert.equal((await b.concurrency.acquire(freshKey('other'), 10, 60_000, T0)).ok, true)
      })
    })

    describe('response cache', () => {
      it('round-trips bytes, overwrites, misses unknown keys', async () => {
        const key = freshKey('cache')
        assert.equal(await b.cache.get(key), null)
        const bytes = Buffer.from([0, 255, 10, 13, 0x7b, 0])
        await b.cache.set(key, bytes, 60_000)
        assert.deepEqual(await b.cache.get(key), bytes)
        await b.cache.set(key, Buffer.from('{"b":2}'), 60_000)
        assert.equal(String(await b.cache.get(key)), '{"b":2}')
      })

      it('expires entries after their TTL', async () => {
        const key = freshKey('ttl')
        await b.cache.set(key, Buffer.from('x'), 1000)
        assert.equal(String(await b.cache.get(key)), 'x')
        // Gone once the TTL has passed (asked until then: a busy machine only delays the asking).
        const deadline = Date.now() + 10_000
        let got = await b.cache.get(key)
        while (got !== null && Date.now() < deadline) {
          await sleep(50)
          got = await b.cache.get(key)
        }
        assert.equal(got, null)
      })
    })
  })
}
