/**
 * Random small inputs for the cross-sectional property tests: calendars with month boundaries
 * every few weeks (and now and then a whole month without trading days), symbols listed and
 * delisted mid-sample, NaN days, and values drawn from a small set often enough to force ties;
 * plus the shared seed arbitrary and float comparison of the cross tests.
 */
import assert from 'node:assert/strict'
import type { Panel } from '../../src/engine/model/panel.ts'
import { Rng } from '../../src/engine/model/random.ts'
import * as fc from '../helpers/fc.ts'

export interface WorldShape {
  symbols: number
  days: number
  /** Probability that a value is drawn from a small discrete set (forcing ties). */
  tieRate: number
}

export class WorldGen {
  readonly rng: Rng
  readonly listed: { from: number; to: number; nanRate: number }[]

  constructor(
    seed: number,
    readonly shape: WorldShape,
  ) {
    this.rng = new Rng(seed)
    const { symbols, days } = shape
    const rates = [0, 0, 0.002, 0.05, 0.3]
    this.listed = Array.from({ length: symbols }, () => {
      const from = this.rng.chance(0.6) ? 0 : this.rng.int(0, Math.floor(days * 0.6))
      const to = this.rng.chance(0.8) ? days : this.rng.int(from, days)
      return { from, to, nanRate: rates[this.rng.int(0, rates.length - 1)] }
    })
  }

  calendar(): Int32Array {
    const out = new Int32Array(this.shape.days)
    let d = 10_000 + this.rng.int(0, 400)
    for (let t = 0; t < out.length; t++) {
      out[t] = d
      d += this.rng.chance(0.01) ? 35 : this.rng.chance(0.2) ? this.rng.int(2, 3) : 1
    }
    return out
  }

  /** A panel of draws: `draw()` when listed and not a NaN day, else NaN. */
  panel(draw: () => number, discrete: readonly number[]): Panel {
    return this.listed.map(({ from, to, nanRate }) => {
      const a = new Float64Array(this.shape.days).fill(Number.NaN)
      for (let t = from; t < to; t++) {
        if (this.rng.chance(nanRate)) continue
        a[t] = this.rng.chance(this.shape.tieRate) ? discrete[this.rng.int(0, discrete.length - 1)] : draw()
      }
      return a
    })
  }

  returns(): Panel {
    return this.panel(() => this.rng.normal() * 0.02, [-0.01, 0, 0.01, 0.02])
  }

  fraction(): Panel {
    return this.panel(() => this.rng.uniform(), [0, 0.25, 0.5, 1])
  }

  caps(): Panel {
    return this.panel(() => Math.exp(this.rng.normal() * 3 + 20), [0, 1e9, 5e9])
  }

  /** Small-integer groups per symbol and day, -1 for none, changing now and then. */
  groups(count: number): Int16Array[] {
    return this.listed.map(() => {
      const a = new Int16Array(this.shape.days)
      let g = this.rng.int(-1, count - 1)
      for (let t = 0; t < a.length; t++) {
        if (this.rng.chance(0.02)) g = this.rng.int(-1, count - 1)
        a[t] = g
      }
      return a
    })
  }

  mask(p: number): Uint8Array[] {
    return this.listed.map(() =>
      Uint8Array.from({ length: this.shape.days }, () => (this.rng.chance(p) ? 1 : 0)),
    )
  }
}

export const seeds = fc.integer({ min: 1, max: 2 ** 31 - 1 })

/**
 * `actual` equals `expected` to `rel` of `scale`: the magnitude of the terms that were summed or
 * multiplied to make the value (by default |expected|). A value that cancelled to near 0 (a
 * compounded return, a mean of signed terms) carries the rounding of its terms, not of itself,
 * so such comparisons must pass the terms' scale; there is no absolute floor to hide behind.
 */
export function close(
  actual: number,
  expected: number,
  rel = 1e-12,
  what = '',
  scale = Math.abs(expected),
): void {
  if (Number.isNaN(expected)) {
    assert.ok(Number.isNaN(actual), `${what}: ${actual} should be NaN`)
    return
  }
  const tol = rel * Math.max(Math.abs(expected), scale)
  assert.ok(Math.abs(actual - expected) <= tol, `${what}: ${actual} vs ${expected} (scale ${scale})`)
}
