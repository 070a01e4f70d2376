/**
 * Model parameters (defaults of docs/methodology.md §1). A build records the values it used in
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

/** Problems with a parameter set (empty = valid); the build refuses invalid sets. */
export function paramProblems(p: ModelParams): string[] {
  const out: string[] = []
  const int = (v: number, lo: number, hi: number) => Number.isInteger(v) && v >= lo && v <= hi
  if (!int(p.window, 2, 5000)) out.push(`window must be an integer in 2..5000, got ${p.window}`)
  if (!(p.halfLife > 0)) out.push(`halfLife must be > 0 (Infinity = equal weights), got ${p.halfLife}`)
  if (!int(p.minObs, 1, p.window))
    out.push(`minObs must be an integer in 1..window (${p.window}), got ${p.minObs}`)
  if (!(p.theta >= 0 && p.theta <= 0.5)) out.push(`theta must be in [0, 0.5], got ${p.theta}`)
  if (!(p.leverageCap > 0)) out.push(`leverageCap must be > 0, got ${p.leverageCap}`)
  if (!(p.haircut > 0 && p.haircut <= 1)) out.push(`haircut must be in (0, 1], got ${p.haircut}`)
  if (!(p.minMarginalEr >= 0 && p.minMarginalEr < 1))
    out.push(`minMarginalEr must be in [0, 1), got ${p.minMarginalEr}`)
  if (!(p.degenerateTol >= 0 && p.degenerateTol < 1))
    out.push(`degenerateTol must be in [0, 1), got ${p.degenerateTol}`)
  if (!int(p.rebaseEvery, 1, 1 << 20))
    out.push(`rebaseEvery must be a positive integer, got ${p.rebaseEvery}`)
  return out
}
