import { parseIsoDay } from '../../../platform/dates.ts'
import type { Rng } from '../../model/random.ts'
import type { Rates } from '../format.ts'

/**
 * A Treasury curve with the broad shape of 2006–2026 (hikes to 5 %, zero rates after 2008 and
 * 2020, the 2022–23 hikes and inversion), on trading days, as fractions. Anchors are linearly
 * interpolated and perturbed by a small mean-reverting noise so the series look observed.
 */
const BILL_3M: [string, number][] = [
  ['2000-01-01', 0.055],
  ['2006-01-03', 0.041],
  ['2006-07-03', 0.05],
  ['2007-07-02', 0.049],
  ['2008-01-02', 0.031],
  ['2008-06-02', 0.019],
  ['2008-12-01', 0.0005],
  ['2015-11-02', 0.0012],
  ['2015-12-16', 0.0026],
  ['2016-12-15', 0.005],
  ['2017-12-14', 0.013],
  ['2018-12-20', 0.024],
  ['2019-07-01', 0.021],
  ['2019-12-02', 0.0155],
  ['2020-03-16', 0.0008],
  ['2021-12-01', 0.0005],
  ['2022-06-01', 0.0115],
  ['2022-12-01', 0.043],
  ['2023-07-31', 0.0535],
  ['2024-08-01', 0.052],
  ['2024-12-19', 0.043],
  ['2025-12-01', 0.037],
  ['2026-10-30', 0.035],
  ['2040-01-01', 0.035],
]

/** 10-year minus 3-month spread. */
const SPREAD_10Y: [string, number][] = [
  ['2000-01-01', 0.005],
  ['2006-06-01', 0.0],
  ['2007-06-01', 0.001],
  ['2008-12-01', 0.025],
  ['2010-04-01', 0.038],
  ['2012-07-01', 0.015],
  ['2013-12-01', 0.029],
  ['2016-07-01', 0.012],
  ['2018-12-01', 0.004],
  ['2019-08-01', -0.004],
  ['2020-08-01', 0.006],
  ['2021-03-01', 0.016],
  ['2022-11-01', -0.005],
  ['2023-05-01', -0.017],
  ['2024-09-01', -0.01],
  ['2025-06-01', 0.0],
  ['2026-10-30', 0.006],
  ['2040-01-01', 0.006],
]

/** Fraction of the 10-year spread each tenor carries. */
const TENOR_LOADING: [string, number][] = [
  ['1m', -0.03],
  ['3m', 0],
  ['6m', 0.08],
  ['1y', 0.18],
  ['2y', 0.38],
  ['3y', 0.52],
  ['5y', 0.74],
  ['7y', 0.88],
  ['10y', 1],
  ['20y', 1.18],
  ['30y', 1.22],
]

function interpolator(points: [string, number][]): (day: number) => number {
  const xs = points.map(([d]) => parseIsoDay(d) ?? 0)
  const ys = points.map(([, v]) => v)
  return (day) => {
    let k = 1
    while (k < xs.length - 1 && xs[k] < day) k++
    const w = Math.min(1, Math.max(0, (day - xs[k - 1]) / (xs[k] - xs[k - 1])))
    return ys[k - 1] + w * (ys[k] - ys[k - 1])
  }
}

export function synthRates(rng: Rng, calendar: Int32Array): Rates {
  const bill = interpolator(BILL_3M)
  const spread = interpolator(SPREAD_10Y)
  const values = TENOR_LOADING.map(() => new Float64Array(calendar.length))
  let level = 0
  let slope = 0
  const noise = TENOR_LOADING.map(() => 0)
  for (let t = 0; t < calendar.length; t++) {
    level = 0.97 * level + 0.0006 * rng.normal()
    slope = 0.98 * slope + 0.0004 * rng.normal()
    const base = bill(calendar[t])
    const s = spread(calendar[t]) + slope
    TENOR_LOADING.forEach(([, load], k) => {
      noise[k] = 0.9 * noise[k] + 0.00015 * rng.normal()
      const v = base + (base < 0.002 ? 0.2 : 1) * level + load * s + noise[k]
      // Rounded to the basis-point hundredth, as published yields are.
      values[k][t] = Math.round(Math.max(0.00005, v) * 1e6) / 1e6
    })
  }
  return { tenors: TENOR_LOADING.map(([t]) => t), days: calendar, values }
}
