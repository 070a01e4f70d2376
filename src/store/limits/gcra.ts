/**
 * GCRA arithmetic shared by the in-process limiter and (line for line) by the Redis script in
 * redis.ts. State is one number per key: the theoretical arrival time (TAT).
 *
 * Units: integer "ticks" of 1/scale ms, with scale = limit / gcd(periodMs, limit), so the
 * emission interval periodMs/limit is a whole number of ticks. Everything stays an exact
 * integer in a double — no drift between nodes, and Lua and JS agree bit for bit. For the
 * service's rules (60/min, 300/min, 3/day) scale is 1 and a tick is a millisecond.
 */
import type { RateDecision, RateRule } from './types.ts'

export interface GcraParams {
  /** Ticks per millisecond. */
  scale: number
  /** Ticks per request (emission interval). */
  interval: number
  /** Ticks a full bucket can absorb at once (burst × interval). */
  tolerance: number
  /** `now` in ticks. */
  nowTicks: number
  /** Ticks this request adds (cost × interval). */
  increment: number
}

function gcd(a: number, b: number): number {
  while (b) [a, b] = [b, a % b]
  return a
}

function positiveInt(v: number, what: string): void {
  if (!Number.isSafeInteger(v) || v < 1) throw new RangeError(`${what} must be a positive integer, got ${v}`)
}

/**
 * Validates a rule and request and converts them to ticks. Throws RangeError (a caller bug, not
 * a backend failure) on a malformed rule, a cost above the burst (it could never be allowed) or
 * times too large to stay exact.
 */
export function gcraParams(rule: RateRule, now: number, cost: number): GcraParams {
  positiveInt(rule.limit, 'limit')
  positiveInt(rule.periodMs, 'periodMs')
  positiveInt(rule.burst, 'burst')
  positiveInt(cost, 'cost')
  if (cost > rule.burst) throw new RangeError(`cost ${cost} exceeds burst ${rule.burst}`)
  if (!Number.isFinite(now) || now < 0) throw new RangeError(`now must be a non-negative time, got ${now}`)
  const g = gcd(rule.periodMs, rule.limit)
  const scale = rule.limit / g
  const interval = rule.periodMs / g
  const nowTicks = Math.floor(now) * scale
  const tolerance = rule.burst * interval
  // A TAT never exceeds now + tolerance, so this bounds every intermediate value.
  if (nowTicks + 2 * tolerance > Number.MAX_SAFE_INTEGER) {
    throw new RangeError(`rate rule ${rule.limit}/${rule.periodMs}ms too fine-grained to stay exact`)
  }
  return { scale, interval, tolerance, nowTicks, increment: cost * interval }
}

/**
 * One GCRA step. `storedTat` is the key's TAT in ticks of this scale (null: no state, i.e. a
 * full bucket). Returns whether the request fits and the key's TAT afterwards (unchanged when
 * refused). The Redis script is this function in Lua.
 */
export function gcraStep(storedTat: number | null, p: GcraParams): { allowed: boolean; tat: number } {
  const tat = Math.max(storedTat ?? p.nowTicks, p.nowTicks)
  const newTat = tat + p.increment
  return newTat - p.tolerance <= p.nowTicks ? { allowed: true, tat: newTat } : { allowed: false, tat }
}

/** The caller-facing decision from a step's outcome (`tat` as returned by gcraStep). */
export function gcraDecision(allowed: boolean, tat: number, p: GcraParams): RateDecision {
  return {
    allowed,
    remaining: Math.max(0, Math.floor((p.nowTicks + p.tolerance - tat) / p.interval)),
    // The bucket is full again once the TAT has passed.
    resetAt: Math.ceil(tat / p.scale),
    // Refused: this request fits once now reaches tat + increment - tolerance.
    retryAfterMs: allowed ? 0 : Math.ceil((tat + p.increment - p.tolerance - p.nowTicks) / p.scale),
  }
}

/** Rescales a TAT stored under another scale (a key whose rule changed), rounding against the caller. */
export function rescaleTat(tat: number, fromScale: number, toScale: number): number {
  return fromScale === toScale ? tat : Math.ceil((tat * toScale) / fromScale)
}
