import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import {
  decileScratch,
  industryPanelDay,
  residualReversion,
  reversionDeciles,
} from '../../src/engine/model/cross/index.ts'
import type { Panel } from '../../src/engine/model/panel.ts'
import * as fc from '../helpers/fc.ts'
import { naiveBuckets, naiveIndustryPanel, naiveReversion } from './cross-naive.ts'
import { close, seeds, WorldGen } from './cross-worlds.ts'

const NAN = Number.NaN

describe('industry panel (docs/methodology.md §12)', () => {
  /** The panel of one random world at every level against the direct computation. */
  function panelMatches(seed: number, s: number, minPeers: number): void {
    const g = new WorldGen(seed, { symbols: s, days: 4, tieRate: 0.3 })
    const mask = g.mask(0.8)
    const x = {
      industry: g.groups(4),
      nIndustries: 4,
      marketCap: g.caps(),
      l1MktBeta: g.returns(),
      l2SecBeta: g.returns(),
      l3SubBeta: g.returns(),
      active: (i: number, t: number) => mask[i][t] === 1,
    }
    for (const level of ['market', 'sector', 'subsector'] as const) {
      const beta = level === 'market' ? x.l1MktBeta : level === 'sector' ? x.l2SecBeta : x.l3SubBeta
      const got = industryPanelDay(x, 3, level, minPeers)
      const want = naiveIndustryPanel({ ...x, beta }, 3, minPeers)
      assert.equal(got.level, level)
      assert.deepEqual(
        Array.from(got.industry),
        want.map((r) => r.industry),
      )
      assert.deepEqual(
        Array.from(got.n_companies),
        want.map((r) => r.n),
      )
      want.forEach((r, k) => {
        close(got.beta_mean[k], r.mean, 1e-12, 'mean', r.meanScale)
        // The mean's own rounding δ (≤ 1e-12 of the mean of |β|) enters the variance as δ²: an
        // industry of equal betas has variance 0 directly and ~1e-35 in the kernel.
        close(got.beta_variance[k], r.variance, 1e-12, 'variance', r.variance + 1e-12 * r.meanScale ** 2)
        close(got.total_log_mcap_weight[k], r.sw, 1e-12, 'weight')
      })
    }
  }

  test('matches a direct computation', () => {
    fc.assert(
      fc.property(seeds, fc.integer({ min: 1, max: 40 }), fc.integer({ min: 0, max: 6 }), panelMatches),
      {
        numRuns: 200,
      },
    )
  })

  test('regression: counterexamples found by fast-check', () => {
    // FC_RUNS_FACTOR=50 FC_SEED=2: a beta mean that cancelled to near 0 from signed betas; its
    // rounding is relative to the mean of |β|, not to the cancelled mean.
    panelMatches(2147483628, 23, 0)
  })

  test('industries below minPeers are left out; NaN caps are not members', () => {
    const one = (v: number) => new Float64Array(1).fill(v)
    const x = {
      industry: [0, 0, 0, 1, 1, 1, 1].map((g) => Int16Array.of(g)),
      nIndustries: 2,
      marketCap: [0, Math.E - 1, NAN, 0, 0, Math.E - 1, Math.E - 1].map(one),
      l1MktBeta: [1, 3, 5, 2, 2, 1, 3].map(one),
      l2SecBeta: [] as Panel,
      l3SubBeta: [] as Panel,
      active: () => true,
    }
    const p = industryPanelDay(x, 0, 'market', 2)
    assert.deepEqual(Array.from(p.industry), [0, 1])
    assert.deepEqual(Array.from(p.n_companies), [2, 4])
    assert.deepEqual(Array.from(p.beta_mean), [3, 2])
    assert.deepEqual(Array.from(p.beta_variance), [0, 1])
    assert.deepEqual(Array.from(p.total_log_mcap_weight), [1, 2])
    assert.equal(industryPanelDay(x, 0, 'market', 3).industry.length, 1)
    assert.equal(industryPanelDay(x, 0, 'market').industry.length, 0)
  })
})

describe('residual reversion (docs/methodology.md §12)', () => {
  test('z matches a direct computation, outliers included', () => {
    fc.assert(
      fc.property(seeds, fc.integer({ min: 1, max: 300 }), (seed, days) => {
        const g = new WorldGen(seed, { symbols: 3, days, tieRate: 0.1 })
        const rr = g.panel(
          () => (g.rng.chance(0.02) ? 1e6 : 1) * g.rng.normal() * 0.01 + (g.rng.chance(0.05) ? 50 : 0),
          [0, 0.01],
        )
        const got = residualReversion(rr)
        const want = naiveReversion(rr)
        got.forEach((a, i) => {
          a.forEach((v, t) => {
            close(v, want[i][t], 1e-12, `z[${i}][${t}]`)
          })
        })
      }),
      { numRuns: 300 },
    )
  })

  test('known series, null rules, and a departing outlier', () => {
    const alt = Float64Array.from({ length: 61 }, (_, t) => (t % 2 ? -0.01 : 0.01))
    close(residualReversion([alt])[0][59], -Math.sqrt(59 / 300))
    const sparse = alt.slice()
    for (let t = 0; t < 30; t++) sparse[t] = NAN
    assert.ok(!Number.isNaN(residualReversion([sparse])[0][59])) // 30 of 60
    sparse[30] = NAN
    assert.ok(Number.isNaN(residualReversion([sparse])[0][59])) // 29 of 60
    const gap = alt.slice()
    gap[56] = NAN
    assert.ok(Number.isNaN(residualReversion([gap])[0][59]))
    assert.ok(Number.isNaN(residualReversion([gap])[0][60]))
    assert.ok(Number.isNaN(residualReversion([new Float64Array(80).fill(0.01)])[0][79]))
    const spike = Float64Array.from({ length: 200 }, (_, t) => (t === 3 ? 1e8 : alt[t % 60] * (1 + t / 1000)))
    const z = residualReversion([spike])[0]
    naiveReversion([spike])[0].forEach((v, t) => {
      close(z[t], v, 1e-12, `t=${t}`)
    })
  })

  test('deciles of z and quality quintiles of l3_sub_er over active members', () => {
    fc.assert(
      fc.property(seeds, fc.integer({ min: 1, max: 60 }), (seed, s) => {
        const g = new WorldGen(seed, { symbols: s, days: 4, tieRate: 0.3 })
        const z = g.returns()
        const q = g.fraction()
        const act = g.mask(0.8)
        // Day after day with one scratch, as a build sweeps its days (the result is a view into it).
        const scratch = decileScratch(s)
        for (let t = 0; t < 4; t++) {
          const got = reversionDeciles(z, q, t, (i) => act[i][t] === 1, scratch)
          const withZ = z.flatMap((a, i) => (act[i][t] && !Number.isNaN(a[t]) ? [{ i, v: a[t] }] : []))
          const withQ = withZ.flatMap(({ i }) => (Number.isNaN(q[i][t]) ? [] : [{ i, v: q[i][t] }]))
          assert.deepEqual(Array.from(got.decile), naiveBuckets(withZ, 10, s), `day ${t}`)
          assert.deepEqual(Array.from(got.qualityQuintile), naiveBuckets(withQ, 5, s), `day ${t}`)
        }
      }),
      { numRuns: 200 },
    )
    const z = [-3, -2, -1, 0, 1, 2, 3, 4, 5, 6].map((v) => Float64Array.of(v))
    const d = reversionDeciles(z, z, 0, () => true)
    assert.deepEqual(Array.from(d.decile), [1, 2, 3, 4, 5, 6, 7, 8, 9, 10])
    assert.deepEqual(Array.from(d.qualityQuintile), [1, 1, 2, 2, 3, 3, 4, 4, 5, 5])
  })
})
