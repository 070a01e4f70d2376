import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import {
  averageRanks,
  type CorrelationMethod,
  correlation,
  correlations,
  createCorrelationScratch,
  MIN_PAIRS,
  pairedWindow,
  pearson,
  spearman,
} from '../../src/engine/model/correlation.ts'
import { Rng } from '../../src/engine/model/random.ts'
import * as fc from '../helpers/fc.ts'

const NAN = Number.NaN
const EPS = Number.EPSILON

// ---- Direct computations (share no code with src/engine/model/correlation.ts) ----

/** Every paired day in order, then the last `windowDays` of them. */
function naivePairs(x: ArrayLike<number>, y: ArrayLike<number>, end: number, windowDays: number) {
  const days: number[] = []
  for (let t = 0; t <= end && t < x.length && t < y.length; t++)
    if (Number.isFinite(x[t]) && Number.isFinite(y[t])) days.push(t)
  const kept = days.slice(Math.max(0, days.length - windowDays))
  return { days: kept, xs: kept.map((t) => x[t]), ys: kept.map((t) => y[t]) }
}

/** Textbook Pearson, plus the rounding tolerance scaled by the size of its terms. */
function naivePearson(xs: number[], ys: number[]): { r: number | null; tol: number } {
  const n = xs.length
  if (n < 2 || new Set(xs).size === 1 || new Set(ys).size === 1) return { r: null, tol: 0 }
  const mx = xs.reduce((s, v) => s + v, 0) / n
  const my = ys.reduce((s, v) => s + v, 0) / n
  let sxx = 0
  let syy = 0
  let sxy = 0
  let sAbs = 0
  for (let i = 0; i < n; i++) {
    const dx = xs[i] - mx
    const dy = ys[i] - my
    sxx += dx * dx
    syy += dy * dy
    sxy += dx * dy
    sAbs += Math.abs(dx * dy)
  }
  const norm = Math.sqrt(sxx * syy)
  // Each sum rounds by ≤ n·eps relative to the sum of its |terms|; the means add an error of the
  // order of the terms' magnitude too. sAbs/norm ≥ |r| bounds the relative size of the terms.
  const scale = Math.max(Math.abs(mx), Math.abs(my), 1)
  return { r: sxy / norm, tol: 64 * n * EPS * (sAbs / norm + 1) * scale }
}

/** Average rank of each value by counting: (#less + 1 + #less-or-equal) / 2. */
function naiveRanks(xs: number[]): number[] {
  return xs.map((v) => {
    const less = xs.filter((u) => u < v).length
    const equal = xs.filter((u) => u === v).length
    return less + (equal + 1) / 2
  })
}

function naive(method: CorrelationMethod, xs: number[], ys: number[]) {
  return method === 'pearson' ? naivePearson(xs, ys) : naivePearson(naiveRanks(xs), naiveRanks(ys))
}

function assertClose(actual: number | null, expected: number | null, tol: number, what = '') {
  if (expected === null) return assert.equal(actual, null, what)
  assert.ok(actual !== null, `${what}: expected ${expected}, got null`)
  assert.ok(Math.abs(actual - expected) <= tol, `${what}: ${actual} vs ${expected} (tol ${tol})`)
}

// ---- Generators ----

/** A daily return, null, or (for ties) one of a few repeated values. */
const cell = (nullRate: number, tieRate: number) =>
  fc.oneof(
    { weight: Math.round(nullRate * 100), arbitrary: fc.constant(NAN) },
    { weight: Math.round(tieRate * 100), arbitrary: fc.constantFrom(-0.01, 0, 0.005, 0.02) },
    {
      weight: 100 - Math.round((nullRate + tieRate) * 100),
      arbitrary: fc.double({ min: -0.3, max: 0.3, noNaN: true }),
    },
  )

const seriesPair = fc
  .record({
    days: fc.integer({ min: 0, max: 400 }),
    nullRate: fc.constantFrom(0, 0.1, 0.5),
    tie: fc.constantFrom(0, 0.3),
  })
  .chain(({ days, nullRate, tie }) =>
    fc.tuple(
      fc.array(cell(nullRate, tie), { minLength: days, maxLength: days }),
      fc.array(cell(nullRate, tie), { minLength: days, maxLength: days }),
    ),
  )

function noisyLine(seed: number, days: number, slope: number, noise: number) {
  const rng = new Rng(seed)
  const x = Float64Array.from({ length: days }, () => 0.01 * rng.normal())
  const y = x.map((v) => slope * v + noise * 0.01 * rng.normal())
  return { x, y }
}

// ---- Tests ----

describe('pairedWindow', () => {
  test('counts paired days back from end, inclusive, in day order', () => {
    const x = Float64Array.of(1, NAN, 3, 4, 5, 6, NAN, 8)
    const y = Float64Array.of(1, 2, NAN, 4, 5, 6, 7, 8)
    const w = pairedWindow(x, y, 7, 3)
    assert.equal(w.pairs, 3)
    assert.equal(w.first, 4)
    assert.deepEqual([...w.xs], [5, 6, 8])
    assert.deepEqual([...w.ys], [5, 6, 8])
    const all = pairedWindow(x, y, 5, 100)
    assert.equal(all.pairs, 4)
    assert.equal(all.first, 0)
    assert.deepEqual([...all.xs], [1, 4, 5, 6])
  })

  test('days past either series and ±∞ count as missing; no pairs → first -1', () => {
    const x = Float64Array.of(1, 2, Number.POSITIVE_INFINITY, 4)
    const y = Float64Array.of(1, 2, 3)
    assert.deepEqual([...pairedWindow(x, y, 10, 5).xs], [1, 2])
    const none = pairedWindow(x, y, -1, 5)
    assert.equal(none.pairs, 0)
    assert.equal(none.first, -1)
  })

  test('matches the direct filter on random series (property)', () => {
    fc.assert(
      fc.property(seriesPair, fc.nat(), fc.integer({ min: 1, max: 300 }), ([x, y], e, windowDays) => {
        const end = x.length ? e % (x.length + 5) : 0
        const scratch = createCorrelationScratch(1)
        const w = pairedWindow(x, y, end, windowDays, scratch)
        const n = naivePairs(x, y, end, windowDays)
        assert.equal(w.pairs, n.days.length)
        assert.equal(w.first, n.days.length ? n.days[0] : -1)
        assert.deepEqual([...w.xs], n.xs)
        assert.deepEqual([...w.ys], n.ys)
      }),
      { numRuns: 200 },
    )
  })
})

describe('pearson and spearman', () => {
  test('average ranks: ties get the mean of their positions', () => {
    const out = new Float64Array(6)
    averageRanks(Float64Array.of(3, 1, 3, 2, 3, -0), 6, out, createCorrelationScratch(1))
    assert.deepEqual([...out], [5, 2, 5, 3, 5, 1])
    const out2 = new Float64Array(4)
    averageRanks(Float64Array.of(0, -0, 0, 7), 4, out2, createCorrelationScratch(0))
    assert.deepEqual([...out2], [2, 2, 2, 4])
  })

  test('hand-computed values', () => {
    assert.equal(pearson([1, 2, 3], [2, 4, 6]), 1)
    assert.equal(pearson([1, 2, 3], [6, 4, 2]), -1)
    assertClose(pearson([1, 2, 3, 4], [1, 3, 2, 4]), 0.8, 1e-15)
    // Ranks of [1,2,2,3] are [1,2.5,2.5,4]; of [1,3,2,4] the values themselves.
    assertClose(
      spearman(Float64Array.of(1, 2, 2, 3), Float64Array.of(1, 3, 2, 4)),
      4.5 / Math.sqrt(4.5 * 5),
      1e-15,
    )
  })

  test('null with fewer than two values or a constant side', () => {
    assert.equal(pearson([1], [2]), null)
    assert.equal(pearson([0.1, 0.1, 0.1, 0.1], [1, 2, 3, 4]), null)
    assert.equal(pearson([1, 2, 3, 4], [0.3, 0.3, 0.3, 0.3]), null)
    assert.equal(spearman(Float64Array.of(5, 5, 5), Float64Array.of(1, 2, 3)), null)
  })

  test('|r| ≤ 1 on exact and near-exact lines (clamped rounding)', () => {
    fc.assert(
      fc.property(
        fc.array(fc.double({ min: -1, max: 1, noNaN: true }), { minLength: 2, maxLength: 300 }),
        fc.double({ min: 1e-6, max: 1e6, noNaN: true }),
        fc.double({ min: -1, max: 1, noNaN: true }),
        (values, a, b) => {
          const xs = Float64Array.from(values)
          for (const ys of [xs, xs.map((v) => a * v + b), xs.map((v) => -a * v + b)])
            for (const r of [pearson(xs, ys), spearman(xs, ys)])
              if (r !== null) assert.ok(Math.abs(r) <= 1, `${r}`)
        },
      ),
      { numRuns: 300 },
    )
  })
})

describe('correlation', () => {
  test('equals the direct computation on random series with nulls and ties (property)', () => {
    const scratch = createCorrelationScratch(4)
    fc.assert(
      fc.property(
        seriesPair,
        fc.nat(),
        fc.integer({ min: 20, max: 300 }),
        fc.constantFrom<CorrelationMethod>('pearson', 'spearman'),
        ([x, y], e, windowDays, method) => {
          const end = x.length ? e % x.length : 0
          const got = correlation(x, y, end, { windowDays, method, scratch })
          const n = naivePairs(x, y, end, windowDays)
          assert.equal(got.pairs, n.days.length)
          const want = n.days.length < MIN_PAIRS ? { r: null, tol: 0 } : naive(method, n.xs, n.ys)
          assertClose(got.value, want.r, want.tol, method)
          if (got.value !== null) assert.ok(Math.abs(got.value) <= 1)
          // A fresh scratch (the default) gives the same bits as the reused one.
          assert.equal(correlation(x, y, end, { windowDays, method }).value, got.value)
        },
      ),
      { numRuns: 300 },
    )
  })

  test('spearman on tie-heavy series equals Pearson of naive average ranks', () => {
    const rng = new Rng(7)
    const x = Float64Array.from({ length: 200 }, () => Math.floor(rng.uniform() * 5) / 100)
    const y = x.map((v) => (rng.uniform() < 0.3 ? NAN : v + Math.floor(rng.uniform() * 3) / 100))
    const got = correlation(x, y, 199, { windowDays: 120, method: 'spearman' })
    const n = naivePairs(x, y, 199, 120)
    const want = naive('spearman', n.xs, n.ys)
    assert.equal(got.pairs, 120)
    assertClose(got.value, want.r, want.tol)
  })

  test('short overlap: 29 pairs → null, 30 → a value; minPairs overrides', () => {
    const { x, y } = noisyLine(1, 100, 1, 1)
    const late = y.map((v, t) => (t < 100 - 29 ? NAN : v)) // a factor that starts late
    const short = correlation(x, late, 99, { windowDays: 252, method: 'pearson' })
    assert.deepEqual(short, { value: null, pairs: 29 })
    const enough = correlation(
      x,
      y.map((v, t) => (t < 70 ? NAN : v)),
      99,
      { windowDays: 252, method: 'pearson' },
    )
    assert.equal(enough.pairs, 30)
    assert.ok(enough.value !== null)
    assert.ok(correlation(x, late, 99, { windowDays: 252, method: 'spearman', minPairs: 20 }).value !== null)
  })

  test('constant side over the window → null (even when it varied before)', () => {
    const { x } = noisyLine(2, 300, 1, 1)
    const y = Float64Array.from({ length: 300 }, (_, t) => (t < 200 ? x[t] : 0.001))
    for (const method of ['pearson', 'spearman'] as const) {
      assert.deepEqual(correlation(x, y, 299, { windowDays: 100, method }), { value: null, pairs: 100 })
      assert.ok(correlation(x, y, 299, { windowDays: 101, method }).value !== null)
    }
  })

  test('a window shorter than the history ignores older days', () => {
    const { x, y } = noisyLine(3, 600, 0.5, 1)
    const before = correlation(x, y, 599, { windowDays: 252, method: 'pearson' })
    const y2 = y.slice()
    for (let t = 0; t < 600 - 252; t++) y2[t] = -y[t] * 10
    assert.deepEqual(correlation(x, y2, 599, { windowDays: 252, method: 'pearson' }), before)
    assert.equal(before.value, pearson(x.subarray(348), y.subarray(348)))
  })

  test('sign convention: y = a·x + noise correlates with the sign of a', () => {
    for (let seed = 1; seed <= 20; seed++)
      for (const method of ['pearson', 'spearman'] as const) {
        const up = noisyLine(seed, 300, 0.8, 1)
        const down = noisyLine(seed, 300, -0.8, 1)
        assert.ok((correlation(up.x, up.y, 299, { windowDays: 252, method }).value ?? 0) > 0.3)
        assert.ok((correlation(down.x, down.y, 299, { windowDays: 252, method }).value ?? 0) < -0.3)
      }
  })

  test('Pearson is invariant to positive affine maps, flips sign under negative ones (property)', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 1e6 }),
        fc.double({ min: 1e-3, max: 1e3, noNaN: true }),
        fc.double({ min: -1e3, max: 1e3, noNaN: true }),
        fc.double({ min: 1e-3, max: 1e3, noNaN: true }),
        (seed, a, b, c) => {
          const { x, y } = noisyLine(seed, 120, 0.3, 1)
          const r = pearson(x, y)
          assert.ok(r !== null)
          const ax = x.map((v) => a * v + b)
          const cy = y.map((v) => c * v - b)
          // Rounding a·x + b loses eps·|b| against deviations of size a·σx (σ ≈ 0.01): the terms are
          // |b|/(a·σx) times larger than what the correlation sees, and likewise for c·y − b.
          const tol = 1e3 * EPS * (1 + Math.abs(b) / (Math.min(a, c) * 0.01))
          assertClose(pearson(ax, cy), r, tol, 'positive')
          assertClose(
            pearson(
              ax.map((v) => -v),
              cy,
            ),
            -r,
            tol,
            'negative',
          )
        },
      ),
      { numRuns: 200 },
    )
  })

  test('Spearman is invariant to strictly monotone maps (property)', () => {
    fc.assert(
      fc.property(
        // Values a thousandth apart stay distinct under the maps below.
        fc.array(fc.tuple(fc.integer({ min: -500, max: 500 }), fc.integer({ min: -500, max: 500 })), {
          minLength: MIN_PAIRS,
          maxLength: 300,
        }),
        (pairs) => {
          const x = Float64Array.from(pairs, ([a]) => a / 1000)
          const y = Float64Array.from(pairs, ([, b]) => b / 1000)
          const r = correlation(x, y, x.length - 1, { windowDays: 252, method: 'spearman' }).value
          const fx = x.map((v) => Math.exp(5 * v))
          const fy = y.map((v) => v * v * v + v)
          assert.equal(correlation(fx, fy, x.length - 1, { windowDays: 252, method: 'spearman' }).value, r)
        },
      ),
      { numRuns: 200 },
    )
  })

  test('correlations (one stock, many factors, shared ranks) equals correlation per factor (property)', () => {
    const factorSet = fc.array(
      fc.record({ from: fc.nat({ max: 300 }), gaps: fc.boolean(), seed: fc.integer({ min: 1, max: 1e6 }) }),
      { minLength: 1, maxLength: 8 },
    )
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 1e6 }),
        factorSet,
        fc.integer({ min: 20, max: 300 }),
        fc.constantFrom<CorrelationMethod>('pearson', 'spearman'),
        fc.nat({ max: 64 }),
        (seed, specs, windowDays, method, capacity) => {
          const { x } = noisyLine(seed, 320, 1, 1)
          x[seed % 320] = NAN
          const factors = specs.map(({ from, gaps, seed: s }) => {
            const rng = new Rng(s)
            return x.map((v, t) =>
              t < from || (gaps && rng.chance(0.1)) ? NAN : 0.5 * v + 0.01 * rng.normal(),
            )
          })
          // Factors that repeat the same days back to back exercise the shared stock ranks.
          factors.push(
            factors[0].slice(),
            factors[0].map((v) => -v),
          )
          const scratch = createCorrelationScratch(capacity)
          const got = correlations(x, factors, 319, { windowDays, method, scratch })
          const want = factors.map((f) => correlation(x, f, 319, { windowDays, method }))
          assert.deepEqual(got, want)
        },
      ),
      { numRuns: 150 },
    )
  })
})
