/**
 * Reference rate limiter for the conformance property: a continuous leaky bucket in exact BigInt
 * arithmetic, written independently of src/store/limits/gcra.ts (different formulation, different
 * units). A request of cost c pours c·periodMs units in; the bucket drains `limit` units per ms
 * and holds burst·periodMs. GCRA is this bucket seen through its emptying time.
 */
import type { RateDecision, RateRule } from '../../src/store/limits/types.ts'

const ceilDiv = (a: bigint, b: bigint) => (a + b - 1n) / b

export function referenceBucket(rule: RateRule): { take(now: number, cost: number): RateDecision } {
  const drain = BigInt(rule.limit)
  const per = BigInt(rule.periodMs)
  const capacity = BigInt(rule.burst) * per
  let level = 0n
  let last: bigint | null = null
  return {
    take(now, cost) {
      const t = BigInt(now)
      if (last !== null && t > last) level = level > (t - last) * drain ? level - (t - last) * drain : 0n
      if (last === null || t > last) last = t
      const need = BigInt(cost) * per
      const allowed = level + need <= capacity
      if (allowed) level += need
      return {
        allowed,
        remaining: Number((capacity - level) / per),
        resetAt: Number(t + ceilDiv(level, drain)),
        retryAfterMs: allowed ? 0 : Number(ceilDiv(level + need - capacity, drain)),
      }
    },
  }
}
