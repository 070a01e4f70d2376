import assert from 'node:assert/strict'
import type { RowContext, Tenor } from '../../src/model/fundamentals/index.ts'

/** Relative closeness (1e-12) for a hand-computed expectation; null must match null. */
export function close(actual: number | null | undefined, expected: number | null, what: string, rel = 1e-12) {
  if (expected === null) {
    assert.equal(actual, null, `${what}: expected null, got ${actual}`)
    return
  }
  assert.ok(
    typeof actual === 'number' && Number.isFinite(actual),
    `${what}: expected ${expected}, got ${actual}`,
  )
  const scale = Math.max(Math.abs(expected), 1e-300)
  assert.ok(Math.abs(actual - expected) <= rel * scale, `${what}: expected ${expected}, got ${actual}`)
}

export const TENOR_RATES: Record<Tenor, number> = {
  '3m': 0.04,
  '1y': 0.042,
  '2y': 0.039,
  '5y': 0.037,
  '10y': 0.041,
  '30y': 0.045,
}

/** A fixed market context: one beta set and one curve for every period end. */
export function constantContext(market: number | null = 1.2): RowContext {
  return {
    betas: () => ({ market, sector: 0.3, subsector: -0.1, source: 'in-universe' }),
    rate: (_pe, tenor) => TENOR_RATES[tenor],
  }
}

/** A context whose betas and rates vary with the period end (to catch mixed-up dates). */
export function varyingContext(): RowContext {
  return {
    betas: (pe) => ({
      market: 0.5 + (pe % 97) / 97,
      sector: (pe % 13) / 13,
      subsector: null,
      source: 'in-universe',
    }),
    rate: (pe, tenor) => TENOR_RATES[tenor] + (pe % 11) / 1000,
  }
}
