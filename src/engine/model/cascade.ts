/**
 * The cascade of docs/methodology.md §5–§7 for one level, solved from that level's uncentred weighted
 * moments of (r, m[, s[, u]]). Because m, s*, u* are orthogonal on the level's own contributing
 * days, every quantity is a closed-form function of the moments:
 *   λsm = <s,m>/<m,m>, <s*,s*> = <s,s> − λsm<s,m>, <r,s*> = <r,s> − λsm<r,m>
 *   λum = <u,m>/<m,m>, <u,s*> = <u,s> − λsm<u,m>, λus = <u,s*>/<s*,s*>
 *   <u*,u*> = <u,u> − λum<u,m> − λus<u,s*>, <r,u*> = <r,u> − λum<r,m> − λus<r,s*>
 */
export interface LevelFit {
  /** Hedge ratios in raw ETF terms (dollar_ratio). */
  hrM: number
  hrS: number
  hrU: number
  /** Hierarchical betas on m, s*, u*. */
  betaM: number
  betaS: number
  betaU: number
  /** Explained-risk fractions; NaN when <r,r> = 0. */
  erM: number
  erS: number
  erU: number
  erRes: number
  /** Link betas (kept for the hedge-replication identity). */
  lsm: number
  lum: number
  lus: number
}

export function emptyFit(): LevelFit {
  return {
    hrM: 0,
    hrS: 0,
    hrU: 0,
    betaM: 0,
    betaS: 0,
    betaU: 0,
    erM: 0,
    erS: 0,
    erU: 0,
    erRes: 0,
    lsm: 0,
    lum: 0,
    lus: 0,
  }
}

/** Moments of one level; absent variables are passed as 0 (their levels never read them). */
export interface Moments {
  rr: number
  rm: number
  mm: number
  rs: number
  sm: number
  ss: number
  ru: number
  um: number
  us: number
  uu: number
}

/**
 * Solves a level (1, 2 or 3) into `fit`. Returns false when the level has no model (the market
 * moment is not positive). `tol` is the degenerate-factor tolerance.
 */
export function solveLevel(level: 1 | 2 | 3, q: Moments, tol: number, fit: LevelFit): boolean {
  if (!(q.mm > 0)) return false
  const betaM = q.rm / q.mm
  let lsm = 0
  let vs = 0
  let rs = 0
  let betaS = 0
  if (level >= 2) {
    lsm = q.sm / q.mm
    vs = q.ss - lsm * q.sm
    rs = q.rs - lsm * q.rm
    // A degenerate s* gets beta 0, adds no explained risk and is dropped from the u regression.
    if (vs > tol * q.ss) betaS = rs / vs
    else vs = 0
  }
  let lum = 0
  let lus = 0
  let vu = 0
  let betaU = 0
  if (level === 3) {
    lum = q.um / q.mm
    const usStar = q.us - lsm * q.um
    lus = vs > 0 ? usStar / vs : 0
    vu = q.uu - lum * q.um - lus * usStar
    const ru = q.ru - lum * q.rm - lus * rs
    if (vu > tol * q.uu) betaU = ru / vu
    else vu = 0
  }
  fit.betaM = betaM
  fit.betaS = betaS
  fit.betaU = betaU
  fit.lsm = lsm
  fit.lum = lum
  fit.lus = lus
  fit.hrM = betaM - betaS * lsm - betaU * lum + betaU * lus * lsm
  fit.hrS = betaS - betaU * lus
  fit.hrU = betaU
  if (q.rr > 0) {
    fit.erM = (betaM * betaM * q.mm) / q.rr
    fit.erS = (betaS * betaS * vs) / q.rr
    fit.erU = (betaU * betaU * vu) / q.rr
    // The residual fraction closes the sum: exact in-sample, so the four L3 fractions sum to 1.
    fit.erRes = 1 - fit.erM - fit.erS - fit.erU
  } else {
    fit.erM = Number.NaN
    fit.erS = Number.NaN
    fit.erU = Number.NaN
    fit.erRes = Number.NaN
  }
  return true
}
