/**
 * Exact population values of what the model estimates, for one day of the synthetic market.
 *
 * Returns are linear in independent latent variables: r_i = bm_i M + bs_i S_k + bu_i U_j + e_i,
 * and each member-built ETF is a cap-weighted average of its members' returns plus tracking
 * noise (or, when it has no members in the universe, its latent factors directly). So every
 * covariance among a stock and its three ETFs is a closed-form sum over the latent variances,
 * and the hierarchical betas of docs/methodology.md §5 follow by the same algebra the model uses on
 * sample moments. All sums are kept per industry, so each stock costs O(1).
 *
 * ETF indices: 0 = market, 1 + k = sector k, then subsector ETFs.
 */
export interface MemberEtf {
  /** Industries whose members the ETF holds. */
  industries: number[]
  /** Sector index for sector/subsector ETFs; -1 for the market ETF. */
  sector: number
  /** Daily tracking-noise standard deviation. */
  te: number
}

export class TruthDay {
  // per-industry accumulators over contributing stocks (cap = market cap at t-1)
  readonly capSum: Float64Array
  readonly capBm: Float64Array
  readonly capBs: Float64Array
  readonly capBu: Float64Array
  readonly cap2Idio: Float64Array
  // per-ETF loadings on the latent factors, and totals
  private readonly dM: Float64Array
  private readonly dS: Float64Array[]
  private readonly dU: Float64Array[]
  private readonly total: Float64Array
  private readonly outside: Uint8Array
  private readonly idioSum: Float64Array
  private readonly varEtf: Float64Array
  private readonly covMkt: Float64Array
  private readonly covSec: Float64Array
  private hM = 0
  private hS: Float64Array = new Float64Array()
  private hU: Float64Array = new Float64Array()

  constructor(
    private readonly etfs: MemberEtf[],
    private readonly nSectors: number,
    nIndustries: number,
  ) {
    this.capSum = new Float64Array(nIndustries)
    this.capBm = new Float64Array(nIndustries)
    this.capBs = new Float64Array(nIndustries)
    this.capBu = new Float64Array(nIndustries)
    this.cap2Idio = new Float64Array(nIndustries)
    const n = etfs.length
    this.dM = new Float64Array(n)
    this.dS = etfs.map(() => new Float64Array(nSectors))
    this.dU = etfs.map(() => new Float64Array(nIndustries))
    this.total = new Float64Array(n)
    this.outside = new Uint8Array(n)
    this.idioSum = new Float64Array(n)
    this.varEtf = new Float64Array(n)
    this.covMkt = new Float64Array(n)
    this.covSec = new Float64Array(n)
  }

  reset(): void {
    this.capSum.fill(0)
    this.capBm.fill(0)
    this.capBs.fill(0)
    this.capBu.fill(0)
    this.cap2Idio.fill(0)
  }

  add(j: number, cap: number, bm: number, bs: number, bu: number, idioVar: number): void {
    this.capSum[j] += cap
    this.capBm[j] += cap * bm
    this.capBs[j] += cap * bs
    this.capBu[j] += cap * bu
    this.cap2Idio[j] += cap * cap * idioVar
  }

  /** Total cap held by ETF f today (0 = no members: it tracks its latent factors). */
  etfCap(f: number): number {
    return this.total[f]
  }

  /** Computes ETF loadings and covariances after all stocks were added. */
  prepare(industrySector: Int32Array, hM: number, hS: Float64Array, hU: Float64Array): void {
    this.hM = hM
    this.hS = hS
    this.hU = hU
    for (let f = 0; f < this.etfs.length; f++) this.loadings(f, industrySector)
    for (let f = 0; f < this.etfs.length; f++) {
      this.varEtf[f] = this.cov(f, f) + this.idioSum[f] + this.etfs[f].te ** 2
      this.covMkt[f] = f === 0 ? this.varEtf[0] : this.cov(0, f) + this.sharedIdio(0, f)
      const sec = this.etfs[f].sector
      this.covSec[f] =
        sec < 0 ? 0 : f === 1 + sec ? this.varEtf[f] : this.cov(1 + sec, f) + this.sharedIdio(1 + sec, f)
    }
  }

  private loadings(f: number, industrySector: Int32Array): void {
    const e = this.etfs[f]
    const dS = this.dS[f]
    const dU = this.dU[f]
    dS.fill(0)
    for (const j of e.industries) dU[j] = 0
    let tot = 0
    let idio = 0
    for (const j of e.industries) {
      tot += this.capSum[j]
      idio += this.cap2Idio[j]
    }
    this.total[f] = tot
    if (tot > 0) {
      this.outside[f] = 0
      let m = 0
      for (const j of e.industries) {
        m += this.capBm[j]
        dS[industrySector[j]] += this.capBs[j] / tot
        dU[j] = this.capBu[j] / tot
      }
      this.dM[f] = m / tot
      this.idioSum[f] = idio / (tot * tot)
    } else {
      this.outside[f] = 1
      this.dM[f] = 1
      if (e.sector >= 0) dS[e.sector] = 1
      if (f > this.nSectors) for (const j of e.industries) dU[j] = 1 / e.industries.length
      this.idioSum[f] = 0
    }
  }

  /** Cov(stock, ETF f) for a stock in industry j of sector k. */
  private stockCov(
    f: number,
    k: number,
    j: number,
    bm: number,
    bs: number,
    bu: number,
    capIdio: number,
  ): number {
    return (
      bm * this.hM * this.dM[f] +
      bs * this.hS[k] * this.dS[f][k] +
      bu * this.hU[j] * this.dU[f][j] +
      (this.outside[f] ? 0 : capIdio / this.total[f])
    )
  }

  /** Factor part of Cov(ETF f, ETF g). */
  private cov(f: number, g: number): number {
    let v = this.hM * this.dM[f] * this.dM[g]
    const sf = this.dS[f]
    const sg = this.dS[g]
    for (let k = 0; k < sf.length; k++) v += this.hS[k] * sf[k] * sg[k]
    const uf = this.dU[f]
    const ug = this.dU[g]
    for (let j = 0; j < uf.length; j++) if (uf[j] !== 0 && ug[j] !== 0) v += this.hU[j] * uf[j] * ug[j]
    return v
  }

  /** Shared idiosyncratic part of Cov(f, g) when g's holdings are a subset of f's. */
  private sharedIdio(f: number, g: number): number {
    if (this.outside[f] || this.outside[g]) return 0
    return (this.idioSum[g] * this.total[g]) / this.total[f]
  }

  /**
   * Population hierarchical betas and L3 residual ER of one stock. `sec`/`sub` are ETF indices
   * or -1 when not trading today (sub -1 = fallback to the sector ETF).
   */
  stock(
    j: number,
    k: number,
    sec: number,
    sub: number,
    cap: number,
    bm: number,
    bs: number,
    bu: number,
    idioVar: number,
    out: Float64Array,
  ): void {
    const varR = bm * bm * this.hM + bs * bs * this.hS[k] + bu * bu * this.hU[j] + idioVar
    const capIdio = cap * idioVar
    const cm = this.stockCov(0, k, j, bm, bs, bu, capIdio)
    const cmm = this.varEtf[0]
    const betaM = cm / cmm
    out[0] = betaM
    out[1] = Number.NaN
    out[2] = Number.NaN
    out[3] = Number.NaN
    if (sec < 0) return
    const lsm = this.covMkt[sec] / cmm
    const vs = this.varEtf[sec] - lsm * this.covMkt[sec]
    const sDegenerate = vs <= 1e-10 * this.varEtf[sec]
    const crs = this.stockCov(sec, k, j, bm, bs, bu, capIdio) - lsm * cm
    const betaS = sDegenerate ? 0 : crs / vs
    let explained = betaM * betaM * cmm + betaS * betaS * (sDegenerate ? 0 : vs)
    out[1] = betaS
    if (sub >= 0) {
      const lum = this.covMkt[sub] / cmm
      const cus = this.covSec[sub] - lsm * this.covMkt[sub]
      const lus = sDegenerate ? 0 : cus / vs
      const vu = this.varEtf[sub] - lum * lum * cmm - lus * lus * (sDegenerate ? 0 : vs)
      const uDegenerate = vu <= 1e-10 * this.varEtf[sub]
      const betaU = uDegenerate
        ? 0
        : (this.stockCov(sub, k, j, bm, bs, bu, capIdio) - lum * cm - lus * crs) / vu
      out[2] = betaU
      explained += betaU * betaU * (uDegenerate ? 0 : vu)
    }
    out[3] = 1 - explained / varR
  }
}
