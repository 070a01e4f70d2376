import { parseIsoDay } from '../../../platform/dates.ts'
import type { Rng } from '../../model/random.ts'

/**
 * Latent factor paths of the synthetic market. Each factor is a GARCH(1,1) process with
 * Student-t(5) shocks (volatility clustering, fat tails), scaled by a crisis regime multiplier
 * and shifted by a regime drift (so 2008 and 2020 are drawdowns, not just noisy periods).
 * `variance[t]` is the conditional variance of day t given day t-1: the generator's truth.
 */
export interface FactorPath {
  ret: Float64Array
  variance: Float64Array
}

interface Regime {
  from: string
  to: string
  /** Volatility multiplier for the market; other factors get a damped version. */
  vol: number
  /** Extra daily drift of the market factor in the window. */
  drift: number
}

const REGIMES: Regime[] = [
  { from: '2006-01-03', to: '2007-02-26', vol: 0.65, drift: 0 },
  { from: '2007-07-20', to: '2007-08-31', vol: 1.5, drift: -0.001 },
  { from: '2008-09-15', to: '2008-11-20', vol: 3.6, drift: -0.0075 },
  { from: '2008-11-21', to: '2009-03-09', vol: 2.4, drift: -0.003 },
  { from: '2009-03-10', to: '2009-06-30', vol: 1.5, drift: 0.004 },
  { from: '2010-05-06', to: '2010-06-30', vol: 1.4, drift: -0.001 },
  { from: '2011-08-01', to: '2011-10-31', vol: 1.8, drift: -0.0008 },
  { from: '2013-01-02', to: '2014-09-30', vol: 0.7, drift: 0.0003 },
  { from: '2015-08-20', to: '2015-09-30', vol: 1.5, drift: -0.001 },
  { from: '2016-07-01', to: '2018-01-26', vol: 0.55, drift: 0.0003 },
  { from: '2018-02-02', to: '2018-02-28', vol: 1.8, drift: -0.001 },
  { from: '2018-10-10', to: '2018-12-24', vol: 1.5, drift: -0.0018 },
  { from: '2019-01-02', to: '2020-01-31', vol: 0.75, drift: 0.0002 },
  { from: '2020-02-24', to: '2020-03-23', vol: 5.0, drift: -0.014 },
  { from: '2020-03-24', to: '2020-06-10', vol: 2.0, drift: 0.0035 },
  { from: '2021-01-04', to: '2021-12-31', vol: 0.75, drift: 0.0003 },
  { from: '2022-01-15', to: '2022-10-12', vol: 1.5, drift: -0.0012 },
  { from: '2023-11-01', to: '2024-07-15', vol: 0.7, drift: 0.0002 },
  { from: '2025-04-02', to: '2025-04-30', vol: 2.2, drift: -0.002 },
]

export interface RegimeSeries {
  vol: Float64Array
  drift: Float64Array
}

/** Regime multipliers per calendar day, ramped over 5 days at both ends. */
export function regimeSeries(calendar: Int32Array): RegimeSeries {
  const vol = new Float64Array(calendar.length).fill(1)
  const drift = new Float64Array(calendar.length)
  for (const r of REGIMES) {
    const from = parseIsoDay(r.from) ?? 0
    const to = parseIsoDay(r.to) ?? 0
    for (let t = 0; t < calendar.length; t++) {
      const d = calendar[t]
      if (d < from - 7 || d > to + 7) continue
      const edge = Math.min(d - (from - 7), to + 7 - d) / 7
      const w = Math.max(0, Math.min(1, edge))
      // Overlapping ramps: the stronger deviation from 1 wins.
      const v = 1 + (r.vol - 1) * w
      if (Math.abs(v - 1) > Math.abs(vol[t] - 1)) vol[t] = v
      drift[t] += r.drift * w
    }
  }
  return { vol, drift }
}

export interface GarchSpec {
  sd: number
  alpha: number
  beta: number
  drift: number
  /** How strongly the factor feels the market regime: 1 = fully, 0 = not at all. */
  regimeExposure: number
  /** Multiplier on the regime drift. */
  regimeDrift: number
}

export function garchPath(rng: Rng, spec: GarchSpec, regime: RegimeSeries): FactorPath {
  const n = regime.vol.length
  const ret = new Float64Array(n)
  const variance = new Float64Array(n)
  const omega = spec.sd * spec.sd * (1 - spec.alpha - spec.beta)
  let h = spec.sd * spec.sd
  for (let t = 0; t < n; t++) {
    const scale = 1 + (regime.vol[t] - 1) * spec.regimeExposure
    const eps = Math.sqrt(h) * rng.studentT(5)
    ret[t] = spec.drift + spec.regimeDrift * regime.drift[t] + scale * eps
    variance[t] = scale * scale * h
    h = omega + spec.alpha * eps * eps + spec.beta * h
  }
  return { ret, variance }
}

/** Daily market, sector and industry factor paths. */
export function latentFactors(
  rng: Rng,
  regime: RegimeSeries,
  sectors: readonly string[],
  industries: number,
) {
  const market = garchPath(
    rng,
    { sd: 0.0105, alpha: 0.09, beta: 0.89, drift: 0.00028, regimeExposure: 1, regimeDrift: 1 },
    regime,
  )
  const sector = sectors.map((name) =>
    garchPath(
      rng,
      {
        sd: name === 'Energy' || name === 'Financials' ? 0.0075 : 0.0055,
        alpha: 0.07,
        beta: 0.9,
        drift: 0,
        regimeExposure: name === 'Financials' ? 0.9 : 0.5,
        regimeDrift: name === 'Financials' ? 0.6 : name === 'Energy' ? 0.3 : 0,
      },
      regime,
    ),
  )
  const industry = Array.from({ length: industries }, () =>
    garchPath(
      rng,
      { sd: 0.0048, alpha: 0.06, beta: 0.91, drift: 0, regimeExposure: 0.4, regimeDrift: 0 },
      regime,
    ),
  )
  return { market, sector, industry }
}
