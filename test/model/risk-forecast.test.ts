import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import fc from 'fast-check'
import { Rng } from '../../src/engine/model/random.ts'
import {
  expWeights,
  factorCovariance,
  weightedCovariance,
  winsorise,
} from '../../src/engine/model/risk-forecast/covariance.ts'
import {
  DEFAULT_ESTIMATOR,
  ESTIMATORS,
  forecastCovariance,
  vixMultiplier,
} from '../../src/engine/model/risk-forecast/estimators.ts'
import { nearestPsd } from '../../src/engine/model/risk-forecast/psd.ts'
import { biasStatistic, rollingMrad } from '../../src/engine/model/risk-forecast/quality.ts'
import {
  crossSectionalBias,
  regimeMultiplier,
  runningVariance,
  specificVariance,
} from '../../src/engine/model/risk-forecast/specific.ts'

const close = (a: number, b: number, tol = 1e-12, msg = '') =>
  assert.ok(Math.abs(a - b) <= tol * Math.max(1, Math.abs(a), Math.abs(b)), `${msg} ${a} vs ${b}`)

// Three small series (5 days), one missing value on day 2 of y.
const X = Float64Array.from([0.01, -0.02, 0.015, 0.003, -0.007])
const Y = Float64Array.from([0.02, 0.01, Number.NaN, -0.004, 0.006])
const Z = Float64Array.from([-0.01, 0.005, 0.02, 0.011, -0.012])

/** Direct weighted covariance of two arrays over the given index list, weights w (same length). */
function directCov(a: number[], b: number[], w: number[], lag = 0): number {
  const sw = w.reduce((s, x) => s + x, 0)
  const sw2 = w.reduce((s, x) => s + x * x, 0)
  const ma = a.reduce((s, x, k) => s + (w[k] as number) * x, 0) / sw
  const mb = b.reduce((s, x, k) => s + (w[k] as number) * x, 0) / sw
  let acc = 0
  for (let k = lag; k < a.length; k++)
    acc += (w[k] as number) * ((a[k] as number) - ma) * ((b[k - lag] as number) - mb)
  return acc / (sw - sw2 / sw)
}

describe('risk forecast: covariance estimators', () => {
  test('exponential weights halve every half-life; Infinity is equal weights', () => {
    const w = expWeights(5, 2)
    for (let k = 0; k < 5; k++) close(w[k] as number, 0.5 ** ((4 - k) / 2))
    assert.deepEqual([...expWeights(3, Number.POSITIVE_INFINITY)], [1, 1, 1])
  })

  test('equal weights: the sample covariance (n − 1) over the days every series has', () => {
    const { cov, days } = weightedCovariance([X, Y], 0, 5, { halfLife: Number.POSITIVE_INFINITY })
    assert.equal(days, 4)
    const x = [0.01, -0.02, 0.003, -0.007]
    const y = [0.02, 0.01, -0.004, 0.006]
    const mx = x.reduce((a, b) => a + b) / 4
    const my = y.reduce((a, b) => a + b) / 4
    const sxy = x.reduce((a, v, k) => a + (v - mx) * ((y[k] as number) - my), 0) / 3
    const sxx = x.reduce((a, v) => a + (v - mx) ** 2, 0) / 3
    close(cov[1] as number, sxy)
    close(cov[2] as number, sxy)
    close(cov[0] as number, sxx)
  })

  test('half-life weights and Newey-West lags against a direct computation', () => {
    const x = [...X]
    const z = [...Z]
    const w = [...expWeights(5, 3)]
    const { cov } = weightedCovariance([X, Z], 0, 5, { halfLife: 3, lags: 2 })
    const g = (a: number[], b: number[], l: number) => directCov(a, b, w, l)
    // Σ_NW = Γ0 + Σ_l (1 − l/3)(Γ_l + Γ_l')
    const nw = (a: number[], b: number[]) =>
      g(a, b, 0) + (2 / 3) * (g(a, b, 1) + g(b, a, 1)) + (1 / 3) * (g(a, b, 2) + g(b, a, 2))
    close(cov[0] as number, nw(x, x))
    close(cov[1] as number, nw(x, z))
    close(cov[2] as number, nw(z, x))
    close(cov[3] as number, nw(z, z))
  })

  test('separate half-lives: volatilities from one, correlation from the other', () => {
    const { cov } = factorCovariance([X, Z], 0, 5, { volHalfLife: 2, corrHalfLife: 10, lags: 0 })
    const wv = [...expWeights(5, 2)]
    const wc = [...expWeights(5, 10)]
    const x = [...X]
    const z = [...Z]
    const vx = directCov(x, x, wv)
    const vz = directCov(z, z, wv)
    const r = directCov(x, z, wc) / Math.sqrt(directCov(x, x, wc) * directCov(z, z, wc))
    close(cov[0] as number, vx)
    close(cov[3] as number, vz)
    close(cov[1] as number, r * Math.sqrt(vx * vz))
  })

  test('winsorising clips at median ± k·1.4826·MAD and keeps missing values', () => {
    const x = Float64Array.from([1, 2, 3, 4, 100, Number.NaN])
    const out = winsorise(x, 0, 6, 2)
    // median 3, |x − 3| = 2 1 0 1 97 → MAD 1
    const hi = 3 + 2 * 1.4826
    const lo = 3 - 2 * 1.4826
    assert.deepEqual([...out.slice(0, 5)], [Math.max(1, lo), 2, 3, 4, hi])
    assert.ok(Number.isNaN(out[5] as number))
  })

  test('an indefinite matrix is clipped to its nearest PSD matrix; too few days are flagged', () => {
    // [[1,2],[2,1]]: eigenvalues 3 (1,1)/√2 and −1 (1,−1)/√2 → 1.5·[[1,1],[1,1]].
    const r = nearestPsd(Float64Array.from([1, 2, 2, 1]), 2, 10)
    assert.equal(r.clipped, 1)
    assert.equal(r.rankDeficient, false)
    for (const v of r.cov) close(v, 1.5, 1e-10)
    assert.equal(nearestPsd(Float64Array.from([1, 0, 0, 1]), 2, 2).rankDeficient, true)
    assert.deepEqual([...nearestPsd(Float64Array.from([2, 1, 1, 2]), 2, 10).cov], [2, 1, 1, 2])
  })
})

describe('risk forecast: specific risk and the regime', () => {
  test('specific variance shrinks toward the peer prior by (n − minDays)/(fullDays − minDays)', () => {
    const res = Float64Array.from([0.01, -0.02, Number.NaN, 0.03, -0.01, 0.005])
    const vals = [0.01, -0.02, 0.03, -0.01, 0.005]
    const mean = vals.reduce((a, b) => a + b) / 5
    const v = vals.reduce((a, x) => a + (x - mean) ** 2, 0) / 4
    const o = { halfLife: Number.POSITIVE_INFINITY, minDays: 2, fullDays: 8 }
    const r = specificVariance(res, 0, 6, 0.0004, o)
    const gamma = (5 - 2) / 6
    close(r.variance, gamma * v + (1 - gamma) * 0.0004)
    close(r.shrinkage, 1 - gamma)
    close(specificVariance(res, 0, 6, Number.NaN, o).variance, v)
    assert.equal(specificVariance(res, 0, 6, 0.0004, { ...o, minDays: 6 }).variance, 0.0004)
  })

  test('running variance: the EW mean of earlier squares; bias statistic and regime multiplier', () => {
    const x = [0.01, Number.NaN, -0.02, 0.03]
    const out = runningVariance(x, 2, 1)
    const d = 0.5 ** 0.5
    assert.ok(Number.isNaN(out[0] as number))
    close(out[1] as number, 0.0001)
    close(out[2] as number, 0.0001)
    close(out[3] as number, (d * 0.0001 + 0.0004) / (d + 1))
    // z = 0.02/0.01 = 2, 0.3/0.05 = 6 → capped 5, NaN skipped: (4 + 25)/2
    close(crossSectionalBias([0.02, 0.3, Number.NaN], [0.0001, 0.0025, 0.0001]), 14.5)
    close(regimeMultiplier([1, Number.NaN, 4], 0, 3, 1), (0.25 * 1 + 4) / (0.25 + 1))
    assert.equal(regimeMultiplier([Number.NaN], 0, 1, 5), 1)
  })

  test('VIX multiplier: VIX² on the day over its EW mean; ewma_nw_vix is ewma_nw times it', () => {
    // Half-life 1: weights 1/16, 1/8, 1/4, 1/2, 1 on days 0 … 4; day 2 has no VIX and is skipped.
    const vix = [20, 10, Number.NaN, 40, 30]
    const w = [1 / 16, 1 / 8, 0, 1 / 2, 1]
    const mean =
      vix.reduce((a, v, k) => a + (Number.isNaN(v) ? 0 : (w[k] as number) * v * v), 0) /
      (1 / 16 + 1 / 8 + 1 / 2 + 1)
    close(vixMultiplier(vix, 0, 4, 1), 900 / mean)
    close(vixMultiplier(vix, 3, 4, 1), 900 / ((0.5 * 1600 + 900) / 1.5), 1e-12, 'window from day 3')
    assert.equal(vixMultiplier(vix, 0, 2, 1), 1, 'no VIX on the day: 1')
    const series = [X, Z]
    const base = forecastCovariance(series, 4, { ...ESTIMATORS.ewma_nw, window: 5 })
    const vixed = forecastCovariance(series, 4, { ...ESTIMATORS.ewma_nw_vix, window: 5 }, 1.7)
    for (let k = 0; k < 4; k++) close(vixed.cov[k] as number, 1.7 * (base.cov[k] as number))
    const ignored = forecastCovariance(series, 4, { ...ESTIMATORS.ewma_nw, window: 5 }, 1.7)
    for (let k = 0; k < 4; k++)
      close(ignored.cov[k] as number, base.cov[k] as number, 1e-15, 'ewma_nw ignores λ²')
  })

  test('bias statistic and rolling MRAD against direct computations', () => {
    const z = [1, -2, 0.5, 1.5]
    const m = 0.25
    close(biasStatistic(z), Math.sqrt(z.reduce((a, x) => a + (x - m) ** 2, 0) / 3))
    const rows = [
      [1, 2],
      [-1, 0],
      [0.5, Number.NaN],
      [2, 1],
    ]
    const r = rollingMrad(rows, 3)
    const b = (v: number[]) => biasStatistic(v)
    const windows = [b([1, -1, 0.5]), b([2, 0]), b([-1, 0.5, 2]), b([0, 1])]
    close(r.mrad, windows.reduce((a, x) => a + Math.abs(x - 1), 0) / 4)
    assert.equal(r.rolling.length, 2)
  })
})

/** x'Sx for a dense n×n S. */
const quad = (s: Float64Array, x: number[]) => {
  const n = x.length
  let acc = 0
  for (let a = 0; a < n; a++)
    for (let b = 0; b < n; b++) acc += (x[a] as number) * (s[a * n + b] as number) * (x[b] as number)
  return acc
}

describe('risk forecast: properties', () => {
  const panel = (k: number, days: number) =>
    // Returns on a 0.01 % grid: no subnormal values, whose squares underflow.
    fc.array(
      fc.array(
        fc.integer({ min: -1000, max: 1000 }).map((v) => v / 10_000),
        { minLength: days, maxLength: days },
      ),
      {
        minLength: k,
        maxLength: k,
      },
    )

  test('every estimator: symmetric, PSD, and scales with the square of the returns', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 6 }),
        fc.constantFrom(...Object.values(ESTIMATORS)),
        fc.double({ min: 0.1, max: 10, noNaN: true }),
        fc.array(fc.double({ min: -1, max: 1, noNaN: true }), { minLength: 6, maxLength: 6 }),
        panel(6, 30),
        (k, spec, c, x, raw) => {
          const days = 30
          const series = raw.slice(0, k).map((r) => Float64Array.from(r))
          const s = { ...spec, window: 25 }
          const a = forecastCovariance(series, days - 1, s, 1.3)
          const b = forecastCovariance(
            series.map((v) => v.map((r) => c * r)),
            days - 1,
            s,
            1.3,
          )
          const trace = Array.from({ length: k }, (_, j) => a.cov[j * k + j] as number).reduce(
            (p, q) => p + q,
            0,
          )
          for (let i = 0; i < k; i++)
            for (let j = 0; j < k; j++) {
              close(a.cov[i * k + j] as number, a.cov[j * k + i] as number, 1e-12, 'symmetric')
              close(b.cov[i * k + j] as number, c * c * (a.cov[i * k + j] as number), 1e-8, 'scale')
            }
          assert.ok(quad(a.cov, x.slice(0, k)) >= -1e-12 * trace)
        },
      ),
      { numRuns: 60 },
    )
  })

  test('nearestPsd of any symmetric matrix is PSD and leaves a PSD one unchanged', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 6 }),
        panel(6, 8),
        fc.array(fc.double({ min: -1, max: 1, noNaN: true }), { minLength: 6, maxLength: 6 }),
        (n, raw, x) => {
          const m = new Float64Array(n * n)
          for (let a = 0; a < n; a++)
            for (let b = 0; b < n; b++) m[a * n + b] = (raw[a]?.[b] ?? 0) + (raw[b]?.[a] ?? 0)
          const r = nearestPsd(m, n, 100)
          const scale = Math.max(1e-12, ...Array.from(m, Math.abs))
          assert.ok(quad(r.cov, x.slice(0, n)) >= -1e-9 * scale * n)
          // Gram matrix G = AA' is PSD: unchanged.
          const g = new Float64Array(n * n)
          for (let a = 0; a < n; a++)
            for (let b = 0; b < n; b++)
              for (let k = 0; k < 8; k++) g[a * n + b] += (raw[a]?.[k] ?? 0) * (raw[b]?.[k] ?? 0)
          const same = nearestPsd(g, n, 100)
          for (let i = 0; i < n * n; i++) close(same.cov[i] as number, g[i] as number, 1e-9)
        },
      ),
      { numRuns: 100 },
    )
  })
})

describe('risk forecast: calibration on a small simulated factor market (its truth is known)', () => {
  /**
   * 6 factors with slowly varying volatility (±35 % over ~2 years) and Student-t(6) shocks, 80
   * assets with random exposures and specific risk. At every 21st day the estimator forecasts each
   * asset's and random equal-weight books' 21-day variance; z = realised / forecast.
   */
  function simulate(seed: number) {
    const rng = new Rng(seed)
    const K = 6
    const N = 80
    const T = 3600
    const load = Array.from({ length: K }, () => Array.from({ length: K }, () => rng.normal() * 0.004))
    const f = Array.from({ length: K }, () => new Float64Array(T))
    for (let t = 0; t < T; t++) {
      const level = 1 + 0.35 * Math.sin((2 * Math.PI * t) / 500)
      const e = Array.from({ length: K }, () => rng.studentT(6) * Math.sqrt(4 / 6))
      for (let k = 0; k < K; k++) {
        let v = 0
        for (let j = 0; j < K; j++) v += (load[k]?.[j] as number) * (e[j] as number)
        ;(f[k] as Float64Array)[t] = level * (v + 0.008 * (k === 0 ? (e[0] as number) : 0))
      }
    }
    const beta = Array.from({ length: N }, () =>
      Array.from({ length: K }, (_, k) => (k === 0 ? 1 : 0) + 0.5 * rng.normal()),
    )
    const spec = Array.from({ length: N }, () => 0.005 + 0.015 * rng.uniform())
    const res = spec.map((s) => Float64Array.from({ length: T }, () => s * rng.normal()))
    const ret = beta.map((b, i) =>
      Float64Array.from(
        { length: T },
        (_, t) =>
          b.reduce((a, x, k) => a + x * ((f[k] as Float64Array)[t] as number), 0) +
          ((res[i] as Float64Array)[t] as number),
      ),
    )
    return { K, N, T, f, beta, res, ret, rng }
  }

  function biases(name: keyof typeof ESTIMATORS, seed: number) {
    const m = simulate(seed)
    const spec = ESTIMATORS[name]
    const z: Record<string, number[]> = { '1': [], '10': [], '30': [] }
    for (let t = spec.window; t + 21 < m.T; t += 21) {
      const { cov } = forecastCovariance(m.f, t, spec)
      const sv = m.res.map(
        (r) =>
          specificVariance(r, t - spec.window + 1, t + 1, Number.NaN, {
            halfLife: spec.specificHalfLife,
            minDays: 20,
            fullDays: 126,
          }).variance,
      )
      const zOf = (members: number[]) => {
        const w = 1 / members.length
        const h = new Array(m.K).fill(0)
        let d = 0
        let realised = 0
        for (const i of members) {
          m.beta[i]?.forEach((b, k) => {
            h[k] += w * b
          })
          d += w * w * (sv[i] as number)
          for (let s = t + 1; s <= t + 21; s++) realised += w * ((m.ret[i] as Float64Array)[s] as number)
        }
        return realised / Math.sqrt(21 * (quad(cov, h) + d))
      }
      for (let i = 0; i < m.N; i++) z['1']?.push(zOf([i]))
      for (const size of [10, 30])
        for (let b = 0; b < 8; b++) {
          const pick = Array.from({ length: m.N }, (_, i) => i)
            .sort(() => m.rng.uniform() - 0.5)
            .slice(0, size)
          z[String(size)]?.push(zOf(pick))
        }
    }
    return Object.fromEntries(Object.entries(z).map(([k, v]) => [k, biasStatistic(v)]))
  }

  for (const name of [DEFAULT_ESTIMATOR, 'sample_252'] as const)
    test(`${name}: bias within 0.9–1.1 for single assets and books of 10 and 30`, () => {
      const b = biases(name, 20_260_101)
      for (const [size, v] of Object.entries(b))
        assert.ok(v >= 0.9 && v <= 1.1, `${name}, size ${size}: bias ${v}`)
    })
})
