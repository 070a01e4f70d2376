import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { type EngineBlock, runEngine } from '../../src/engine/build/engine.ts'
import { factorSeries } from '../../src/engine/build/factors.ts'
import { buildInputs } from '../../src/engine/build/inputs.ts'
import { generateSynthetic } from '../../src/engine/data/synth/index.ts'
import { DEFAULT_PARAMS, windowWeights } from '../../src/engine/model/params.ts'
import type { StockField } from '../../src/engine/model/stock-kernel.ts'
import { naiveStock } from '../model/naive.ts'

const ds = generateSynthetic({
  seed: 5,
  stocks: 300,
  start: '2009-01-02',
  end: '2016-12-30',
  fundamentals: false,
})
const x = buildInputs(ds)
const factors = factorSeries(ds, x)
const style = factors.returns.filter((_, j) => factors.meta[j].group === 'style')
const fields = {} as Record<StockField, Float64Array[]>
let subEff: Int16Array[] = []
await runEngine(x, DEFAULT_PARAMS, { from: 0, blockSize: 128, style }, async (b: EngineBlock) => {
  for (const [k, v] of Object.entries(b.fields))
    fields[k as StockField] = [...(fields[k as StockField] ?? []), ...v]
  subEff = [...subEff, ...b.subEff]
})
const T = x.calendar.length
const stocks = x.symbols.flatMap((_, i) => (x.isStock[i] ? [i] : []))
const truthByDataset = ds.truth?.fields
if (!truthByDataset) throw new Error('synthetic dataset without truth')
// The build orders symbols by key; re-index the truth panels the same way.
const truth = Object.fromEntries(
  Object.entries(truthByDataset).map(([k, p]) => [k, x.symbols.map((s) => p[ds.symbols.indexOf(s)])]),
) as typeof truthByDataset

describe('build on the synthetic market', () => {
  test('identities on every stock-day', () => {
    let checked = 0
    for (const i of stocks) {
      const f = (n: StockField) => fields[n][i]
      for (let t = 0; t < T; t++) {
        const res = f('l3_res_er')[t]
        if (!Number.isNaN(res)) {
          const sum = f('l3_mkt_er')[t] + f('l3_sec_er')[t] + f('l3_sub_er')[t] + res
          assert.ok(Math.abs(sum - 1) <= 1e-9, `ER sum ${sum}`)
          checked++
        }
        const r = x.returns[i][t]
        for (const k of [1, 2, 3] as const) {
          const cfr = f(`l${k}_cfr`)[t]
          if (Number.isNaN(cfr)) continue
          assert.ok(Math.abs(cfr + f(`l${k}_rr`)[t] - r) <= 1e-15, 'gross = cfr + rr')
        }
        const c3 = f('l3_cfr')[t]
        if (!Number.isNaN(c3))
          assert.ok(Math.abs(f('l1_fr')[t] + f('l2_fr')[t] + f('l3_fr')[t] - c3) <= 1e-15)
      }
    }
    assert.ok(checked > 300_000, `${checked} stock-days with an L3 model`)
  })

  test('style split on every stock-day: 0 ≤ l3_style_er ≤ l3_res_er, null iff no residual or no style ETF', () => {
    assert.equal(style.length, 8)
    let split = 0
    let none = 0
    const seen = new Set<number>()
    for (const i of stocks) {
      const st = fields.l3_style_er[i]
      const mask = fields.style_factors[i]
      const res = fields.l3_res_er[i]
      for (let t = 0; t < T; t++) {
        if (Number.isNaN(res[t]) || mask[t] === 0) {
          assert.ok(Number.isNaN(st[t]), `style without a residual or a style ETF (${i}, ${t})`)
          if (!Number.isNaN(res[t])) none++
          continue
        }
        assert.ok(st[t] >= 0 && st[t] - res[t] <= 1e-12, `0 ≤ style ${st[t]} ≤ res ${res[t]}`)
        seen.add(mask[t])
        split++
      }
    }
    assert.ok(split > 300_000, `${split} stock-days with a style split`)
    // 2009–2016: the other style ETFs start later (USMV, SCHD 2011; MOAT 2012; MTUM, QUAL, VLUE
    // 2013), so at first only growth (bit 4, IWF) and size (bit 5, IWM) take part.
    assert.ok(seen.has(0b110000), `masks seen: ${[...seen]}`)
    assert.ok(seen.has(255), 'all eight style ETFs take part once they all cover a window')
    assert.equal(none, 0, 'IWF and IWM exist throughout, so no residual day lacks a style ETF')
  })

  test('style split equals a direct Gram–Schmidt computation (naive oracle) on sampled stocks', () => {
    const sample = stocks.filter((_, k) => k % 60 === 7)
    const etf = Array.from(x.etfSymbols, (s) => x.returns[s])
    let compared = 0
    for (const i of sample) {
      const naive = naiveStock(
        { r: x.returns[i], m: etf[0], etf, sec: x.sec[i], sub: x.sub[i], style },
        DEFAULT_PARAMS,
      )
      for (let t = 0; t < T; t += 5) {
        const want = naive[t].l3_style_er
        const got = fields.l3_style_er[i][t]
        if (Number.isNaN(want)) {
          assert.ok(Number.isNaN(got), `stock ${i} day ${t}: ${got} where the oracle has none`)
          continue
        }
        assert.ok(Math.abs(got - want) <= 1e-9, `stock ${i} day ${t}: ${got} vs ${want}`)
        assert.equal(fields.style_factors[i][t], naive[t].style_factors)
        compared++
      }
    }
    assert.ok(compared > 1000, `${compared} stock-days compared`)
  })

  test('recovery: estimated market betas agree with the truth within their standard errors', (t) => {
    // The weighted LS estimate given the realised market returns has mean
    //   β̄ = Σ w m² β_d / Σ w m²  (the truth varies over the window)
    // and a heteroskedasticity-consistent standard error sqrt(Σ w² m² ê²) / Σ w m². With ~218
    // effective observations per window, z = (β̂ − β̄)/se is close to N(0,1); sampling every
    // 63rd day keeps draws of one stock from overlapping much. We require |mean z| < 0.2 and
    // sd(z) in [0.75, 1.35]: a wrong truth, a biased estimator or wrong weights fail this.
    const w = windowWeights(DEFAULT_PARAMS)
    const m = x.returns[x.etfSymbols[0]]
    const zs: number[] = []
    for (const i of stocks) {
      const r = x.returns[i]
      for (let t = 400; t < T; t += 63) {
        const b = fields.l1_mkt_beta[i][t]
        if (Number.isNaN(b)) continue
        let swm2 = 0
        let swm2b = 0
        let sand = 0
        let ok = true
        for (let d = t; d > t - DEFAULT_PARAMS.window; d--) {
          if (Number.isNaN(r[d]) || Number.isNaN(m[d])) continue
          const tb = truth.beta_mkt[i][d]
          if (Number.isNaN(tb)) {
            ok = false
            break
          }
          const wm2 = w[t - d] * m[d] * m[d]
          swm2 += wm2
          swm2b += wm2 * tb
          const e = r[d] - b * m[d]
          sand += w[t - d] * w[t - d] * m[d] * m[d] * e * e
        }
        if (ok) zs.push((b - swm2b / swm2) / (Math.sqrt(sand) / swm2))
      }
    }
    assert.ok(zs.length > 2000, `${zs.length} draws`)
    const mean = zs.reduce((a, v) => a + v, 0) / zs.length
    const sd = Math.sqrt(zs.reduce((a, v) => a + (v - mean) ** 2, 0) / (zs.length - 1))
    t.diagnostic(`market beta z-scores: n=${zs.length} mean=${mean.toFixed(3)} sd=${sd.toFixed(3)}`)
    assert.ok(Math.abs(mean) < 0.2, `mean z ${mean}`)
    assert.ok(sd > 0.75 && sd < 1.35, `sd z ${sd}`)
  })

  test('recovery: residual ER and sector/subsector betas track the truth', (t) => {
    const pairs: Record<string, [number, number][]> = { res: [], sec: [], sub: [] }
    for (const i of stocks) {
      for (let t = 400; t < T; t += 21) {
        const avg = (p: ArrayLike<number>[]) => {
          let s = 0
          let n = 0
          for (let d = t - 125; d <= t; d++) {
            if (Number.isNaN(p[i][d])) continue
            s += p[i][d]
            n++
          }
          return n > 100 ? s / n : Number.NaN
        }
        const add = (k: string, est: number, tru: number) => {
          if (!Number.isNaN(est) && !Number.isNaN(tru)) pairs[k].push([est, tru])
        }
        add('res', fields.l3_res_er[i][t], avg(truth.l3_res_er))
        add('sec', fields.l2_sec_beta[i][t], avg(truth.beta_sec))
        if (!Number.isNaN(truth.beta_sub[i][t - 252]))
          add('sub', fields.l3_sub_beta[i][t], avg(truth.beta_sub))
      }
    }
    const corr = (ps: [number, number][]) => {
      const n = ps.length
      const ma = ps.reduce((s, p) => s + p[0], 0) / n
      const mb = ps.reduce((s, p) => s + p[1], 0) / n
      let sab = 0
      let saa = 0
      let sbb = 0
      for (const [a, b] of ps) {
        sab += (a - ma) * (b - mb)
        saa += (a - ma) ** 2
        sbb += (b - mb) ** 2
      }
      return { r: sab / Math.sqrt(saa * sbb), bias: ma - mb, n }
    }
    const res = corr(pairs.res)
    const sec = corr(pairs.sec)
    const sub = corr(pairs.sub)
    t.diagnostic(
      `residual ER ${JSON.stringify(res)}; sector beta ${JSON.stringify(sec)}; subsector beta ${JSON.stringify(sub)}`,
    )
    // Residual ER is a ratio of weighted sums: in-sample R² is biased up by ~k/n_eff ≈ 1.5 %,
    // so the estimated residual share runs slightly low; we allow 0.04.
    assert.ok(res.r > 0.8 && Math.abs(res.bias) < 0.04, `residual ER ${JSON.stringify(res)}`)
    assert.ok(sec.r > 0.7 && Math.abs(sec.bias) < 0.15, `sector beta ${JSON.stringify(sec)}`)
    assert.ok(sub.r > 0.6 && Math.abs(sub.bias) < 0.15, `subsector beta ${JSON.stringify(sub)}`)
  })

  test('subsector fallback: L3 equals L2 until the subsector ETF has min_obs returns', () => {
    const smh = x.etfTickers.indexOf('SMH')
    const smhStart = x.returns[x.etfSymbols[smh]].findIndex((v) => !Number.isNaN(v))
    const semis = stocks.filter(
      (i) => x.sub[i][T - 1] === smh && !Number.isNaN(fields.l2_sec_er[i][smhStart + 10]),
    )
    assert.ok(semis.length > 0)
    for (const i of semis) {
      const t = smhStart + 60 // fewer than 126 SMH returns: fallback
      assert.equal(subEff[i][t], x.sec[i][t])
      assert.equal(fields.l3_sub_hr[i][t], 0)
      assert.ok(Number.isNaN(fields.l3_sub_beta[i][t]))
      assert.equal(fields.l3_mkt_hr[i][t], fields.l2_mkt_hr[i][t])
      const later = smhStart + 200
      assert.equal(subEff[i][later], smh)
      assert.ok(!Number.isNaN(fields.l3_sub_beta[i][later]))
    }
  })
})
