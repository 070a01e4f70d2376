import { DEFAULT_ESTIMATOR, ESTIMATOR_NAMES, FORECAST_HORIZONS } from '../../../contract/ops/snapshot.ts'
import { sampleCovariance } from '../../../engine/model/portfolio.ts'

/**
 * The book risk model of POST /snapshot (docs/methodology.md §13 "Portfolio risk"), versioned on
 * its own: the per-stock ERM3 numbers (hedge ratios, residuals) are the methodology's; how a
 * book's risk is forecast from them is this model. An estimator turns the daily returns of the
 * ETFs in play into their daily covariance; the horizon rule turns a daily variance into the
 * variance over `horizon` trading days. New estimators register here and are chosen by name
 * (`estimator` on the request; `_metadata.risk_model` names the one used).
 */

const RISK_MODEL_VERSION = 'erm3-book-risk-v2'

export { FORECAST_HORIZONS }
export type ForecastHorizon = (typeof FORECAST_HORIZONS)[number]
export const DEFAULT_HORIZON: ForecastHorizon = 21

export const isForecastHorizon = (h: number): h is ForecastHorizon =>
  (FORECAST_HORIZONS as readonly number[]).includes(h)

/** An ETF covariance estimate: `cov` (n×n, daily, row-major) over `days` common days. */
interface CovarianceEstimate {
  cov: Float64Array
  days: number
}

export interface BookRiskEstimator {
  /** One line for `_metadata` and the docs. */
  description: string
  /** Daily covariance of `returns` (one series per ETF, same length) over offsets [0, days). */
  covariance(returns: readonly Float64Array[], days: number): CovarianceEstimate
  /** Variance over `horizon` trading days from a daily variance. */
  horizonVariance(daily: number, horizon: ForecastHorizon): number
}

/** The estimator every snapshot used before estimators existed: equal weights over the lookback, √h scaling. */
const sample: BookRiskEstimator = {
  description:
    'sample covariance (n − 1, equal weights) of the ETF returns over the lookback days on which all of them ' +
    'have a return; horizon variance = horizon × daily variance (independent days)',
  covariance: (returns, days) => sampleCovariance(returns, 0, days),
  horizonVariance: (daily, horizon) => horizon * daily,
}

/** Every estimator the contract names (contract/ops/snapshot.ts ESTIMATOR_NAMES), by name. */
export type EstimatorName = (typeof ESTIMATOR_NAMES)[number]
const ESTIMATORS: Record<EstimatorName, BookRiskEstimator> = { sample }

export { DEFAULT_ESTIMATOR, ESTIMATOR_NAMES }

export const isEstimatorName = (s: string): s is EstimatorName => Object.hasOwn(ESTIMATORS, s)

export const estimatorOf = (name: EstimatorName): BookRiskEstimator => ESTIMATORS[name]

/** `_metadata.risk_model` of an answer priced with `name` at `horizon`. */
export function riskModelMetadata(name: EstimatorName, horizon: ForecastHorizon) {
  return {
    version: RISK_MODEL_VERSION,
    estimator: name,
    estimator_description: ESTIMATORS[name].description,
    horizon_days: horizon,
  }
}
