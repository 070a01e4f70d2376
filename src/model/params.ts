/**
 * Model parameters (METHODOLOGY, `code font` defaults). A build records the values it used in
 * its manifest; changing any of them changes the numbers.
 */
export interface ModelParams {
  /** Estimation window in calendar (market) days. */
  window: number
  /** Half-life of the weights in days; Infinity = equal weights. */
  halfLife: number
  /** Minimum contributing days for a level (and for a subsector ETF before fallback ends). */
  minObs: number
  /** Lstar marginal-ER threshold. */
  theta: number
  /** Recommended level: maximum gross hedge |HR| sum. */
  leverageCap: number
  /** Recommended level: haircut on the in-sample marginal ER. */
  haircut: number
  /** Recommended level: minimum haircut marginal ER (fixed, not theta). */
  minMarginalEr: number
  /** Orthogonalised variance below this fraction of the raw variance is degenerate. */
  degenerateTol: number
  /**
   * Rolling sums are recomputed from the window every `rebaseEvery` days (and whenever a large
   * value leaves), which bounds floating-point drift and lets an incremental build replay the
   * exact state from the last rebase day.
   */
  rebaseEvery: number
}

export const DEFAULT_PARAMS: Readonly<ModelParams> = {
  window: 252,
  halfLife: 126,
  minObs: 126,
  theta: 0.01,
  leverageCap: 2.0,
  haircut: 0.7,
  minMarginalEr: 0.01,
  degenerateTol: 1e-10,
  rebaseEvery: 256,
}

/** `w_k = 0.5^(k/H)` for k = 0 … W-1 (w_0 = 1). */
export function windowWeights(p: ModelParams): Float64Array {
  const w = new Float64Array(p.window)
  for (let k = 0; k < p.window; k++)
    w[k] = p.halfLife === Number.POSITIVE_INFINITY ? 1 : 0.5 ** (k / p.halfLife)
  return w
}
