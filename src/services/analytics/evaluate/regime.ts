import type { EstimatorSpec } from '../../../engine/model/risk-forecast/estimators.ts'
import { crossSectionalBias, runningVariance } from '../../../engine/model/risk-forecast/specific.ts'
import type { EvalPanel } from './panel.ts'

/**
 * The day series of the cross-sectional bias statistic B² the volatility-regime adjustment
 * averages (docs/methodology.md §13 "Risk forecast"): for the factors (ETF returns over their
 * running volatility forecast) and for the stocks' specific returns (L3 residual over its running
 * forecast). Computed once per half-life over the whole calendar; day t uses forecasts made
 * before t only.
 */
/** Returns enter the running forecasts clipped at this many forecast standard deviations. */
const ROBUST_CLIP = 4

export interface RegimeSeries {
  factor: Float64Array
  specific: Float64Array
}

function dayBias(series: readonly Float64Array[], halfLife: number, days: number): Float64Array {
  const forecasts = series.map((s) => runningVariance(s, halfLife, 20, ROBUST_CLIP))
  const out = new Float64Array(days)
  const r = new Float64Array(series.length)
  const v = new Float64Array(series.length)
  for (let t = 0; t < days; t++) {
    for (let j = 0; j < series.length; j++) {
      r[j] = (series[j] as Float64Array)[t] as number
      v[j] = (forecasts[j] as Float64Array)[t] as number
    }
    out[t] = crossSectionalBias(r, v)
  }
  return out
}

export function regimeSeries(panel: EvalPanel, spec: EstimatorSpec): RegimeSeries {
  const etfs = panel.etfRet.filter((s) => s.some((x) => !Number.isNaN(x)))
  return {
    factor: dayBias(etfs, spec.volHalfLife, panel.days),
    specific: dayBias(
      panel.stocks.map((i) => panel.res[i] as Float64Array),
      spec.specificHalfLife,
      panel.days,
    ),
  }
}
