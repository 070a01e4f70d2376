import { DEFAULT_ESTIMATOR, ESTIMATOR_NAMES, FORECAST_HORIZONS } from '../../../contract/ops/snapshot.ts'
import { sampleCovariance } from '../../../engine/model/portfolio.ts'
import {
  ESTIMATORS as FORECAST_SPECS,
  forecastCovariance,
} from '../../../engine/model/risk-forecast/estimators.ts'
import { SPECIFIC_DAYS, type SpecificOptions } from '../../../engine/model/risk-forecast/specific.ts'

/**
 * The book risk model of POST /snapshot (docs/methodology.md §13 "Portfolio risk"), versioned on
 * its own: the per-stock ERM3 numbers (hedge ratios, residuals) are the methodology's; how a
 * book's risk is forecast from them is this model. An estimator turns the daily returns of the
 * ETFs in play into their daily covariance; the horizon rule turns a daily variance into the
 * variance over `horizon` trading days. New estimators register here and are chosen by name
 * (`estimator` on the request; `_metadata.risk_model` names the one used).
 */

/** v3: the default estimator is ewma_nw (the evaluation's recommendation); v2 defaulted to sample. */
/** v4: ewma and ewma_nw weight each stock's specific variance and shrink short histories toward peers. */
const RISK_MODEL_VERSION = 'erm3-book-risk-v4'

export { FORECAST_HORIZONS }
export type ForecastHorizon = (typeof FORECAST_HORIZONS)[number]
export const DEFAULT_HORIZON: ForecastHorizon = 21

export const isForecastHorizon = (h: number): h is ForecastHorizon =>
  (FORECAST_HORIZONS as readonly number[]).includes(h)

/**
 * An ETF covariance estimate: `cov` (n×n, daily, row-major) over `days` common days, and the
 * negative eigenvalues set to zero to make it positive semi-definite (0 when none were).
 */
interface CovarianceEstimate {
  cov: Float64Array
  days: number
  clipped: number
}

export interface BookRiskEstimator {
  /** One line for `_metadata` and the docs. */
  description: string
  /** The most recent days of the lookback it reads (Infinity: all of them). */
  maxDays: number
  /** Daily covariance of `returns` (one series per ETF, same length) over offsets [0, days). */
  covariance(returns: readonly Float64Array[], days: number): CovarianceEstimate
  /** Variance over `horizon` trading days from a daily variance. */
  horizonVariance(daily: number, horizon: ForecastHorizon): number
  /**
   * A stock's specific variance: null, the sample variance of its residual over the lookback;
   * else `specificVariance` with these options over the last `maxDays` days, shrunk toward its
   * sector peers' median for a short history.
   */
  specific: SpecificOptions | null
}

/**
 * The estimator every snapshot used before estimators existed (the default up to risk model v2):
 * equal weights over the lookback, √h scaling.
 */
const sample: BookRiskEstimator = {
  description:
    'sample covariance (n − 1, equal weights) of the ETF returns over the lookback days on which all of them ' +
    'have a return; horizon variance = horizon × daily variance (independent days)',
  maxDays: Number.POSITIVE_INFINITY,
  covariance: (returns, days) => ({ ...sampleCovariance(returns, 0, days), clipped: 0 }),
  horizonVariance: (daily, horizon) => horizon * daily,
  specific: null,
}

/**
 * A risk-forecast estimator of the engine (docs/methodology.md §13 "Risk forecast"), the one
 * `erm3 evaluate` measures, over the lookback: its window is the lookback (at most the spec's
 * window of 504 days) ending at as_of. With Newey-West lags the daily covariance already holds
 * the autocovariance terms Σ_l (1 − l/(L+1))·(Γ_l + Γ_l'), so it is the long-run daily variance and
 * the horizon variance is horizon × it, as for independent days.
 */
function forecast(name: 'ewma' | 'ewma_nw', horizonRule: string): BookRiskEstimator {
  const spec = FORECAST_SPECS[name]
  return {
    description:
      `${spec.description}; over the lookback days (at most ${spec.window}); ${horizonRule}; specific variance: ` +
      `the residual's exponentially weighted variance (half-life ${spec.specificHalfLife} days), shrunk toward the ` +
      `median specific variance of its sector peers when it has fewer than ${SPECIFIC_DAYS.fullDays} residual returns`,
    maxDays: spec.window,
    covariance: (returns, days) => {
      const { cov, days: used, clipped } = forecastCovariance(returns, days - 1, spec)
      return { cov, days: used, clipped }
    },
    horizonVariance: (daily, horizon) => horizon * daily,
    specific: { halfLife: spec.specificHalfLife, ...SPECIFIC_DAYS },
  }
}

const ewma = forecast('ewma', 'horizon variance = horizon × daily variance (independent days)')
const ewmaNw = forecast(
  'ewma_nw',
  'horizon variance = horizon × daily variance, the daily variance including the Newey-West ' +
    'autocovariance terms (the long-run variance of a day)',
)

/** Every estimator the contract names (contract/ops/snapshot.ts ESTIMATOR_NAMES), by name. */
export type EstimatorName = (typeof ESTIMATOR_NAMES)[number]
const ESTIMATORS: Record<EstimatorName, BookRiskEstimator> = { sample, ewma, ewma_nw: ewmaNw }

export { DEFAULT_ESTIMATOR, ESTIMATOR_NAMES }

export const isEstimatorName = (s: string): s is EstimatorName => Object.hasOwn(ESTIMATORS, s)

export const estimatorOf = (name: EstimatorName): BookRiskEstimator => ESTIMATORS[name]

/** `_metadata.risk_model` of an answer priced with `name` at `horizon`. */
export function riskModelMetadata(name: EstimatorName, horizon: ForecastHorizon) {
  return {
    version: RISK_MODEL_VERSION,
    estimator: name,
    estimator_description: ESTIMATORS[name].description,
    default_estimator: DEFAULT_ESTIMATOR,
    horizon_days: horizon,
  }
}
