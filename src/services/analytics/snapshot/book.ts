import type { BookRisk } from './risk.ts'
import { type EstimatorName, estimatorOf, type ForecastHorizon } from './risk-model.ts'
import type { Position, positionRow, riskFigures } from './sections.ts'

/**
 * The book-level blocks of a POST /snapshot answer (docs/methodology.md §13 "Portfolio risk"):
 * its long/short exposure, the forecast over the horizon, and the notes that say where its
 * figures differ from another endpoint's, and why.
 */

/** Net exposures this close to zero have no leverage ratio. */
const FLAT = 1e-12

/**
 * Long, short (negative), net and gross exposure as fractions of the gross (weights are
 * normalised by the gross, so gross is 1), the leverage gross ÷ |net|, and the amounts as given
 * (dollars for share counts: shares × price at as_of).
 */
export function exposureBlock(
  positions: readonly Position[],
  amounts: { gross: number; net: number; byShares: boolean },
) {
  const long = positions.reduce((a, p) => a + Math.max(0, p.weight), 0)
  const short = positions.reduce((a, p) => a + Math.min(0, p.weight), 0)
  const net = long + short
  return {
    long,
    short,
    net,
    gross: long - short,
    leverage: Math.abs(net) > FLAT ? (long - short) / Math.abs(net) : null,
    long_count: positions.filter((p) => p.weight > 0).length,
    short_count: positions.filter((p) => p.weight < 0).length,
    gross_amount: amounts.gross,
    net_amount: amounts.net,
    amount_unit: amounts.byShares ? ('dollars' as const) : ('as_given' as const),
  }
}

/** The volatility forecast over `horizon` trading days (not annualised): √(horizon variance). */
export function forecastBlock(r: BookRisk | null, estimator: EstimatorName, horizon: ForecastHorizon) {
  const e = estimatorOf(estimator)
  const vol = (daily: number | undefined) =>
    r && daily !== undefined && daily >= 0 ? Math.sqrt(e.horizonVariance(daily, horizon)) : null
  return {
    horizon_days: horizon,
    volatility: vol(r?.variance),
    systematic_vol: vol(r?.v[2]),
    residual_vol: vol(r?.d),
    estimator,
  }
}

/** A position's lookback residual volatility this far from the /metrics basis is flagged (annualised points). */
const RESIDUAL_GAP = 0.05

/**
 * Where this answer's figures and another endpoint's differ by construction, said once per
 * answer: a position whose lookback residual volatility is far from the /metrics basis, and a
 * negative layer share of the variance split.
 */
export function consistencyNotes(
  rows: readonly ReturnType<typeof positionRow>[],
  figures: ReturnType<typeof riskFigures>,
  lookbackDays: number,
): string[] {
  const notes: string[] = []
  const far = rows.filter(
    (p) =>
      p.risk_basis === 'model' &&
      p.residual_vol_ann !== null &&
      p.residual_vol_model_ann !== null &&
      Math.abs(p.residual_vol_ann - p.residual_vol_model_ann) > RESIDUAL_GAP,
  )
  if (far.length > 0)
    notes.push(
      `residual_vol_ann differs from residual_vol_model_ann by more than ${100 * RESIDUAL_GAP} points for ` +
        `${far.map((p) => p.ticker).join(', ')}: residual_vol_ann is the sample volatility of the residual over ` +
        `the ${lookbackDays}-day lookback (what the book's variance uses); residual_vol_model_ann is the basis ` +
        'of /metrics, vol_23d × √l3_res_er (the last 23 days\u2019 volatility times the model window\u2019s residual ' +
        'share). Same residual, different windows.',
    )
  const split = figures.variance_decomposition
  const negative = (['market', 'sector', 'subsector'] as const).filter((k) => (split[k] ?? 0) < 0)
  if (negative.length > 0)
    notes.push(
      `the ${negative.join(' and ')} share of the variance is negative: each layer's share is the variance its ` +
        'level adds to the previous level\u2019s hedge (V_k − V_{k−1}); a deeper hedge can explain less of the ' +
        'lookback covariance than a shallower one when its ratios were fitted on the model window, so an increment ' +
        'can be below zero. The four shares still sum to 1; the shares are reported as computed.',
    )
  return notes
}
