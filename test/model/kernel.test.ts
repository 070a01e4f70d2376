import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { type ModelParams, windowWeights } from '../../src/engine/model/params.ts'
import { Rng } from '../../src/engine/model/random.ts'
import {
  kernelStateSize,
  type MarketContext,
  runStock,
  STOCK_FIELDS,
  type StockOutput,
  type StockSeries,
} from '../../src/engine/model/stock-kernel.ts'
import { StyleBasis } from '../../src/engine/model/style-basis.ts'
import * as fc from '../helpers/fc.ts'
import { naiveStock } from './naive.ts'

// Small windows keep the naive O(W) oracle fast; the kernels do not depend on the sizes.
const P: ModelParams = {
  window: 40,
  halfLife: 20,
  minObs: 20,
  theta: 0.01,
  leverageCap: 2,
  haircut: 0.7,
  minMarginalEr: 0.01,
  degenerateTol: 1e-10,
  rebaseEvery: 16,
}
/** Without scheduled rebases the large-departure rule alone must keep the sums exact. */
const P_NO_SCHEDULE: ModelParams = { ...P, rebaseEvery: 100_000 }

interface Scenario {
  seed: number
  days: number
  gapP: number
  extremeP: number
  listAt: number
  delistAt: number
  subStart: number
  degenerate: boolean
  switchSectorAt: number
  styleStart: number
}

function build(sc: Scenario, params: ModelParams = P) {
  const rng = new Rng(sc.seed)
  const T = sc.days
  const m = new Float64Array(T)
  const nEtf = 5
  const etf = Array.from({ length: nEtf }, () => new Float64Array(T))
  const r = new Float64Array(T)
  const sec = new Int16Array(T)
  const sub = new Int16Array(T)
  for (let t = 0; t < T; t++) {
    m[t] = t === 0 ? Number.NaN : 0.01 * rng.normal()
    const s0 = 0.8 * m[t] + 0.006 * rng.normal()
    const s1 = 1.1 * m[t] + 0.008 * rng.normal()
    etf[0][t] = s0
    etf[1][t] = s1
    etf[2][t] = t < sc.subStart ? Number.NaN : s0 + 0.005 * rng.normal() // late-starting subsector ETF
    etf[3][t] = sc.degenerate ? s0 : 0.5 * m[t] + 0.3 * s0 + 0.004 * rng.normal() // possibly identical to the sector ETF
    etf[4][t] = rng.chance(0.05) ? Number.NaN : s1 + 0.004 * rng.normal() // an ETF with holes
    const jump = rng.chance(sc.extremeP) ? rng.pick([-0.9, 5, 40, -0.5, 300]) : 0
    r[t] = 1.2 * m[t] + 0.5 * (s0 - 0.8 * m[t]) + 0.7 * (etf[2][t] - s0 || 0) + 0.015 * rng.normal() + jump
    if (t < sc.listAt || t > sc.delistAt || rng.chance(sc.gapP)) r[t] = Number.NaN
    const switched = t >= sc.switchSectorAt
    sec[t] = switched ? 1 : 0
    sub[t] = switched ? 4 : t % 97 < 60 ? 2 : 3 // point-in-time industry changes too
  }
  const etfObs = etf.map((e) => {
    const o = new Int32Array(T)
    for (let t = 0; t < T; t++) {
      let n = 0
      for (let d = Math.max(0, t - P.window + 1); d <= t; d++) if (!Number.isNaN(e[d])) n++
      o[t] = n
    }
    return o
  })
  // Style ETFs from their own stream (the existing scenarios keep their data): one mostly
  // market from day 0, one with an inception date, one with holes (rarely covering a window).
  const srng = new Rng(sc.seed + 1)
  const style = [0, 1, 2].map(() => new Float64Array(T))
  for (let t = 0; t < T; t++) {
    style[0][t] = 0.9 * m[t] + 0.004 * srng.normal()
    style[1][t] = t < sc.styleStart ? Number.NaN : 0.3 * etf[0][t] + 0.006 * srng.normal()
    style[2][t] = srng.chance(0.01) ? Number.NaN : 0.002 * srng.normal() + 0.5 * r[t] || 0
  }
  const weights = windowWeights(params)
  const ctx: MarketContext = {
    m,
    etf,
    etfObs,
    weights,
    params,
    styleBasis: new StyleBasis(m, etf, style, weights, params),
  }
  const series: StockSeries = { r, sec, sub }
  return { ctx, series, naive: { r, m, etf, sec, sub, style } }
}

function emptyOut(T: number): StockOutput {
  const fields = Object.fromEntries(STOCK_FIELDS.map((f) => [f, new Float64Array(T).fill(Number.NaN)]))
  return { fields: fields as StockOutput['fields'], subEff: new Int16Array(T) }
}

const scenario = fc.record({
  seed: fc.integer({ min: 0, max: 2 ** 31 }),
  days: fc.integer({ min: 30, max: 180 }),
  gapP: fc.constantFrom(0, 0.03, 0.2),
  extremeP: fc.constantFrom(0, 0.01, 0.05),
  listAt: fc.integer({ min: 0, max: 40 }),
  delistAt: fc.integer({ min: 100, max: 400 }),
  subStart: fc.integer({ min: 0, max: 120 }),
  degenerate: fc.boolean(),
  switchSectorAt: fc.integer({ min: 50, max: 400 }),
  styleStart: fc.integer({ min: 0, max: 150 }),
})

function close(a: number, b: number): boolean {
  if (Number.isNaN(a) || Number.isNaN(b)) return Number.isNaN(a) && Number.isNaN(b)
  return Math.abs(a - b) <= 1e-9 * (1 + Math.abs(b))
}

describe('stock kernel', () => {
  /** One scenario's kernel output against the naive per-window computation. */
  function matchesNaive(sc: Scenario, scheduled: boolean): void {
    const { ctx, series, naive } = build(sc, scheduled ? P : P_NO_SCHEDULE)
    const out = emptyOut(sc.days)
    runStock(ctx, series, out, 0, sc.days)
    const ref = naiveStock(naive, P)
    for (let t = 0; t < sc.days; t++) {
      assert.equal(out.subEff[t], ref[t].subEff, `subEff t=${t}`)
      for (const f of STOCK_FIELDS) {
        assert.ok(close(out.fields[f][t], ref[t][f]), `${f} t=${t}: ${out.fields[f][t]} vs ${ref[t][f]}`)
      }
    }
  }

  test('incremental kernels equal the naive per-window computation (1e-9 relative)', () => {
    fc.assert(fc.property(scenario, fc.boolean(), matchesNaive), { numRuns: 100 })
  })

  test('regression: counterexamples found by fast-check', () => {
    matchesNaive(
      {
        seed: 821233404,
        days: 88,
        gapP: 0,
        extremeP: 0.05,
        listAt: 14,
        delistAt: 100,
        subStart: 0,
        degenerate: false,
        switchSectorAt: 50,
        styleStart: 0,
      },
      false,
    )
  })

  test('an incremental run (replay from the last rebase day) equals the full run bit for bit', () => {
    fc.assert(
      fc.property(scenario, fc.integer({ min: 1, max: 179 }), (sc, cut) => {
        const split = Math.min(cut, sc.days - 1)
        const { ctx, series } = build(sc)
        const full = emptyOut(sc.days)
        runStock(ctx, series, full, 0, sc.days)
        const inc = emptyOut(sc.days)
        runStock(ctx, series, inc, 0, split)
        runStock(ctx, series, inc, split, sc.days)
        for (const f of STOCK_FIELDS) {
          for (let t = 0; t < sc.days; t++)
            assert.ok(Object.is(full.fields[f][t], inc.fields[f][t]), `${f} t=${t}`)
        }
      }),
      { numRuns: 60 },
    )
  })

  test('runs resumed from the saved kernel state equal the full run, and save its state, bit for bit', () => {
    const size = kernelStateSize(3)
    const sameState = (a: Float64Array, b: Float64Array, what: string) => {
      for (let j = 0; j < size; j++)
        assert.ok(Object.is(a[j], b[j]), `${what}: state[${j}] ${a[j]} vs ${b[j]}`)
    }
    fc.assert(
      fc.property(
        scenario,
        fc.integer({ min: 1, max: 179 }),
        fc.integer({ min: 1, max: 179 }),
        fc.option(fc.record({ at: fc.integer({ min: 1, max: 179 }), subOnly: fc.boolean() })),
        (sc, c1, c2, drop) => {
          const a = Math.min(c1, c2, sc.days - 1)
          const b = Math.min(Math.max(c1, c2), sc.days - 1)
          const { ctx, series } = build(sc)
          // The stock loses its classification (or only its subsector) from day `drop.at` on.
          if (drop) {
            series.sub.fill(-1, drop.at)
            if (!drop.subOnly) series.sec.fill(-1, drop.at)
          }
          const full = { ...emptyOut(sc.days), state: new Float64Array(size).fill(7) }
          runStock(ctx, series, full, 0, sc.days)
          // Three runs, the second and third resumed from the state the one before saved.
          const inc = { ...emptyOut(sc.days), state: new Float64Array(size).fill(-3) }
          runStock(ctx, series, inc, 0, a)
          for (const [from, to] of [
            [a, b],
            [b, sc.days],
          ]) {
            if (from === to) continue
            runStock(ctx, series, { ...inc, resume: true }, from, to)
          }
          for (const f of STOCK_FIELDS) {
            for (let t = 0; t < sc.days; t++)
              assert.ok(Object.is(full.fields[f][t], inc.fields[f][t]), `${f} t=${t}`)
          }
          for (let t = a; t < sc.days; t++) assert.equal(inc.subEff[t], full.subEff[t], `subEff t=${t}`)
          sameState(inc.state, full.state, 'resumed')
          // A replay from the rebase day saves the same state as the full run (canonical zeros).
          const replay = { ...emptyOut(sc.days), state: new Float64Array(size).fill(5) }
          runStock(ctx, series, replay, 0, a)
          runStock(ctx, series, replay, a, sc.days)
          sameState(replay.state, full.state, 'replayed')
        },
      ),
      { numRuns: 100 },
    )
  })

  test('resuming without a saved state is refused', () => {
    const { ctx, series } = build({
      seed: 3,
      days: 60,
      gapP: 0,
      extremeP: 0,
      listAt: 0,
      delistAt: 400,
      subStart: 0,
      degenerate: false,
      switchSectorAt: 400,
      styleStart: 0,
    })
    const out = { ...emptyOut(60), state: new Float64Array(kernelStateSize(3)), resume: true }
    assert.throws(() => runStock(ctx, series, out, 30, 60), /no saved state/)
  })

  test('identities: ERs sum to 1, gross = l3_cfr + l3_rr, cfr = Σ fr, raw-ETF hedge replicates the orthogonal fit', () => {
    const sc = {
      seed: 3,
      days: 300,
      gapP: 0.02,
      extremeP: 0,
      listAt: 5,
      delistAt: 290,
      subStart: 0,
      degenerate: false,
      switchSectorAt: 400,
      styleStart: 60,
    }
    const { ctx, series } = build(sc)
    const out = emptyOut(sc.days)
    runStock(ctx, series, out, 0, sc.days)
    const f = out.fields
    let n = 0
    for (let t = 0; t < sc.days; t++) {
      if (!Number.isNaN(f.l3_res_er[t])) {
        n++
        assert.ok(Math.abs(f.l3_mkt_er[t] + f.l3_sec_er[t] + f.l3_sub_er[t] + f.l3_res_er[t] - 1) < 1e-9)
        assert.ok(f.l3_res_er[t] >= -1e-12 && f.l3_res_er[t] <= 1)
        // The style split: a part of the residual share, never more; the late style ETF takes
        // part only once it covers the whole window (styleStart 60 + window 40).
        assert.ok(f.l3_style_er[t] >= 0 && f.l3_style_er[t] <= f.l3_res_er[t], `style t=${t}`)
        assert.equal((f.style_factors[t] & 2) !== 0, t >= 60 + P.window - 1, `late style ETF t=${t}`)
      }
      if (!Number.isNaN(f.l3_cfr[t])) {
        assert.ok(Math.abs(f.l3_cfr[t] + f.l3_rr[t] - series.r[t]) < 1e-15)
        assert.ok(Math.abs(f.l1_fr[t] + f.l2_fr[t] + f.l3_fr[t] - f.l3_cfr[t]) < 1e-15)
        assert.ok(Math.abs(f.l1_fr[t] + f.l2_fr[t] - f.l2_cfr[t]) < 1e-15)
      }
    }
    assert.ok(n > 200)
    // Replication on window days: HR legs on raw ETFs = beta legs on the orthogonalised factors.
    const t = 250
    const s = ctx.etf[series.sec[t]]
    const u = ctx.etf[out.subEff[t]]
    const w = ctx.weights
    const days: number[] = []
    for (let d = t; d > t - P.window; d--)
      if (![series.r[d], ctx.m[d], s[d], u[d]].some(Number.isNaN)) days.push(d)
    const dot = (a: Float64Array, b: Float64Array) => days.reduce((acc, d) => acc + w[t - d] * a[d] * b[d], 0)
    const lsm = dot(s, ctx.m) / dot(ctx.m, ctx.m)
    const sStar = Float64Array.from(s, (v, d) => v - lsm * ctx.m[d])
    const lum = dot(u, ctx.m) / dot(ctx.m, ctx.m)
    const lus = dot(u, sStar) / dot(sStar, sStar)
    const uStar = Float64Array.from(u, (v, d) => v - lum * ctx.m[d] - lus * sStar[d])
    const bS = dot(series.r, sStar) / dot(sStar, sStar)
    const bU = f.l3_sub_beta[t]
    assert.ok(Math.abs(bS - f.l2_sec_beta[t]) < 1e-9)
    for (const d of days) {
      const raw = f.l3_mkt_hr[t] * ctx.m[d] + f.l3_sec_hr[t] * s[d] + f.l3_sub_hr[t] * u[d]
      const orth = f.l1_mkt_beta[t] * ctx.m[d] + bS * sStar[d] + bU * uStar[d]
      assert.ok(Math.abs(raw - orth) < 1e-14, `day ${d}: ${raw} vs ${orth}`)
    }
  })
})
