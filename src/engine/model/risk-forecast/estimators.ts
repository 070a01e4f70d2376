import { factorCovariance, winsorise } from './covariance.ts'
import { nearestPsd, type PsdResult } from './psd.ts'

/**
 * The named risk-forecast estimators (docs/methodology.md §13 "Risk forecast") and the factor
 * covariance each forecasts at a day. `sample_252` is /snapshot's `sample` (its default up to v2); the
 * others weight recent days more and add, one at a time, the Newey-West and volatility-regime
 * adjustments. `erm3 evaluate` measures them out of sample (docs/model-quality.md).
 */

export interface EstimatorSpec {
  name: EstimatorName
  description: string
  /** Days of history used (ending at the forecast day). */
  window: number
  volHalfLife: number
  corrHalfLife: number
  /** Newey-West lags (0: none). */
  lags: number
  /** Scale by the recent cross-sectional bias of standardised returns. */
  regime: boolean
  regimeHalfLife: number
  /**
   * Scale by the implied-volatility level: the VIX² on the day over its exponentially weighted
   * mean (half-life `volHalfLife`) over the window (`vixMultiplier`).
   */
  vix: boolean
  /** Clip returns at median ± k robust standard deviations before estimating (Infinity: none). */
  winsorise: number
  /** Specific variance: half-life, and shrinkage toward peers for short histories. */
  specificHalfLife: number
  shrink: boolean
}

export const ESTIMATOR_NAMES = [
  'sample_252',
  'ewma',
  'ewma_nw',
  'ewma_vra',
  'ewma_nw_vra',
  'ewma_nw_vix',
] as const
export type EstimatorName = (typeof ESTIMATOR_NAMES)[number]

/**
 * The recommended estimator: the one `erm3 evaluate` ranks first on the default synthetic market
 * (smallest worst |bias − 1| across single stocks and books plus mean MRAD; docs/model-quality.md).
 */
export const DEFAULT_ESTIMATOR: EstimatorName = 'ewma_nw'

const EWMA = {
  window: 504,
  volHalfLife: 42,
  corrHalfLife: 126,
  lags: 0,
  regime: false,
  regimeHalfLife: 21,
  vix: false,
  winsorise: 5,
  specificHalfLife: 42,
  shrink: true,
} as const

export const ESTIMATORS: Readonly<Record<EstimatorName, EstimatorSpec>> = {
  sample_252: {
    name: 'sample_252',
    description:
      "equal-weight sample covariance and residual variance over the last 252 days (/snapshot's sample)",
    window: 252,
    volHalfLife: Number.POSITIVE_INFINITY,
    corrHalfLife: Number.POSITIVE_INFINITY,
    lags: 0,
    regime: false,
    regimeHalfLife: 21,
    vix: false,
    winsorise: Number.POSITIVE_INFINITY,
    specificHalfLife: Number.POSITIVE_INFINITY,
    shrink: false,
  },
  ewma: {
    name: 'ewma',
    description:
      'exponential weights: volatility half-life 42 days, correlation 126, specific 42; winsorised at 5σ',
    ...EWMA,
  },
  ewma_nw: { name: 'ewma_nw', description: 'ewma with Newey-West (3 lags)', ...EWMA, lags: 3 },
  ewma_vra: {
    name: 'ewma_vra',
    description: 'ewma with the volatility-regime adjustment (half-life 21 days)',
    ...EWMA,
    regime: true,
  },
  ewma_nw_vra: {
    name: 'ewma_nw_vra',
    description: 'ewma with Newey-West (3 lags) and the volatility-regime adjustment',
    ...EWMA,
    lags: 3,
    regime: true,
  },
  ewma_nw_vix: {
    name: 'ewma_nw_vix',
    description:
      'ewma_nw scaled by the VIX level: × VIX² on the day ÷ its exponentially weighted mean (half-life 42 days)',
    ...EWMA,
    lags: 3,
    vix: true,
  },
}

/**
 * The implied-volatility multiplier λ² at day T: VIX_T² over the exponentially weighted mean
 * (half-life `halfLife`) of VIX² over the non-null days of [from, T], the same weighting as the
 * covariance's volatilities. The ratio is free of the level's premium over realised volatility;
 * 1 when the VIX has no value on T.
 */
export function vixMultiplier(vix: ArrayLike<number>, from: number, T: number, halfLife: number): number {
  const now = vix[T] as number
  if (!(now > 0)) return 1
  const decay = 0.5 ** (1 / halfLife)
  let num = 0
  let den = 0
  for (let t = Math.max(0, from); t <= T; t++) {
    num *= decay
    den *= decay
    const v = vix[t] as number
    if (!(v > 0)) continue
    num += v * v
    den += 1
  }
  return (now * now) / (num / den)
}

/**
 * The daily factor covariance an estimator forecasts after the close of day T from `series`
 * (full-history factor returns): over the `window` days ending at T, winsorised, D·R·D with the
 * spec's half-lives and Newey-West lags, times the regime multiplier `lambda2` (1 without the
 * adjustment or the VIX scale), made positive semi-definite.
 */
export function forecastCovariance(
  series: readonly Float64Array[],
  T: number,
  spec: EstimatorSpec,
  lambda2 = 1,
): PsdResult & { days: number } {
  const from = T - spec.window + 1
  const to = T + 1
  const input = Number.isFinite(spec.winsorise)
    ? series.map((s) => winsorise(s, from, to, spec.winsorise))
    : series
  const { cov, days } = factorCovariance(input, from, to, {
    volHalfLife: spec.volHalfLife,
    corrHalfLife: spec.corrHalfLife,
    lags: spec.lags,
  })
  if ((spec.regime || spec.vix) && lambda2 !== 1) for (let k = 0; k < cov.length; k++) cov[k] *= lambda2
  return { ...nearestPsd(cov, series.length, days), days }
}
