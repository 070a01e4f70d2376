/**
 * A direct, deliberately naive implementation of docs/methodology.md §3–§10 for one stock: every day
 * it rebuilds the window, forms the orthogonalised factor VECTORS explicitly, regresses, and
 * measures the residual ER from the residual itself. It shares no code with src/engine/model, so
 * agreement is evidence that the incremental kernels are right.
 */
import type { ModelParams } from '../../src/engine/model/params.ts'

export interface NaiveInput {
  r: Float64Array
  m: Float64Array
  etf: Float64Array[]
  sec: Int16Array
  sub: Int16Array
  /** Style ETF returns (NaN = null); absent → the style split is null. */
  style?: Float64Array[]
}

export type NaiveDay = Record<string, number>

const dot = (w: number[], a: number[], b: number[]) => a.reduce((s, v, k) => s + w[k] * v * b[k], 0)

function etfObs(series: Float64Array, t: number, p: ModelParams): number {
  let n = 0
  for (let d = Math.max(0, t - p.window + 1); d <= t; d++) if (!Number.isNaN(series[d])) n++
  return n
}

interface Fit {
  hrM: number
  hrS: number
  hrU: number
  bM: number
  bS: number
  bU: number
  erM: number
  erS: number
  erU: number
  erRes: number
}

function fitLevel(x: NaiveInput, t: number, level: number, s: number, u: number, p: ModelParams): Fit | null {
  const W: number[] = []
  const R: number[] = []
  const M: number[] = []
  const S: number[] = []
  const U: number[] = []
  for (let d = t; d >= Math.max(0, t - p.window + 1); d--) {
    const vals = [x.r[d], x.m[d], level >= 2 ? x.etf[s][d] : 0, level === 3 ? x.etf[u][d] : 0]
    if (vals.some((v) => Number.isNaN(v))) continue
    W.push(p.halfLife === Number.POSITIVE_INFINITY ? 1 : 0.5 ** ((t - d) / p.halfLife))
    R.push(vals[0])
    M.push(vals[1])
    S.push(vals[2])
    U.push(vals[3])
  }
  if (W.length < p.minObs) return null
  const mm = dot(W, M, M)
  if (!(mm > 0)) return null
  const bM = dot(W, R, M) / mm
  let bS = 0
  let lsm = 0
  let Sst = S.map(() => 0)
  let sDegenerate = true
  if (level >= 2) {
    lsm = dot(W, S, M) / mm
    Sst = S.map((v, k) => v - lsm * M[k])
    sDegenerate = !(dot(W, Sst, Sst) > p.degenerateTol * dot(W, S, S))
    if (!sDegenerate) bS = dot(W, R, Sst) / dot(W, Sst, Sst)
  }
  let bU = 0
  let lum = 0
  let lus = 0
  let Ust = U.map(() => 0)
  if (level === 3) {
    lum = dot(W, U, M) / mm
    lus = sDegenerate ? 0 : dot(W, U, Sst) / dot(W, Sst, Sst)
    Ust = U.map((v, k) => v - lum * M[k] - lus * Sst[k])
    if (dot(W, Ust, Ust) > p.degenerateTol * dot(W, U, U)) bU = dot(W, R, Ust) / dot(W, Ust, Ust)
  }
  const rr = dot(W, R, R)
  const e = R.map((v, k) => v - bM * M[k] - bS * Sst[k] - bU * Ust[k])
  const er = (b: number, v: number[]) => (rr > 0 ? (b * b * dot(W, v, v)) / rr : Number.NaN)
  return {
    hrM: bM - bS * lsm - bU * lum + bU * lus * lsm,
    hrS: bS - bU * lus,
    hrU: bU,
    bM,
    bS,
    bU,
    erM: er(bM, M),
    erS: level >= 2 ? er(bS, Sst) : Number.NaN,
    erU: level === 3 ? er(bU, Ust) : Number.NaN,
    erRes: rr > 0 ? dot(W, e, e) / rr : Number.NaN,
  }
}

/**
 * The style split on raw window vectors (docs/methodology.md §7, "Style split"): Gram–Schmidt of the
 * ETF columns, then of the style columns that cover every ETF day of the window, each purged of
 * everything before it; style = Σ <r, q>² / <q, q> over the kept style columns, divided by <r, r>.
 */
function naiveStyle(
  x: NaiveInput,
  t: number,
  etfs: number[],
  p: ModelParams,
  resEr: number,
): { share: number; mask: number } {
  const style = x.style ?? []
  const W: number[] = []
  const cols: number[][] = []
  const xs = [x.m, ...etfs.map((e) => x.etf[e])]
  const covers = style.map(() => true)
  const etfDays: number[] = []
  for (let d = t; d >= Math.max(0, t - p.window + 1); d--) {
    if (xs.some((v) => Number.isNaN(v[d]))) continue
    etfDays.push(d)
    style.forEach((f, j) => {
      if (Number.isNaN(f[d])) covers[j] = false
    })
  }
  const days = etfDays.filter((d) => !Number.isNaN(x.r[d]))
  for (const d of days) W.push(0.5 ** ((t - d) / p.halfLife))
  const R = days.map((d) => x.r[d])
  const vec = (a: Float64Array) => days.map((d) => a[d])
  const idx: number[] = []
  xs.forEach((a) => {
    cols.push(vec(a))
    idx.push(-1)
  })
  style.forEach((f, j) => {
    const etfSumSq = etfDays.reduce((acc, d) => acc + f[d] * f[d], 0)
    if (covers[j] && etfSumSq > 0) {
      cols.push(vec(f))
      idx.push(j)
    }
  })
  if (!idx.some((j) => j >= 0) || Number.isNaN(resEr)) return { share: Number.NaN, mask: 0 }
  const rr = dot(W, R, R)
  const basis: number[][] = []
  let explained = 0
  let mask = 0
  cols.forEach((c, k) => {
    let q = c.slice()
    for (const b of basis) {
      const coef = dot(W, q, b) / dot(W, b, b)
      q = q.map((v, i) => v - coef * b[i])
    }
    if (!(dot(W, q, q) > p.degenerateTol * dot(W, c, c))) return
    basis.push(q)
    if (idx[k] >= 0) {
      explained += dot(W, R, q) ** 2 / dot(W, q, q)
      mask |= 1 << idx[k]
    }
  })
  return { share: Math.min(Math.max(explained / rr, 0), resEr), mask }
}

function sampleVar(xs: number[]): number {
  const mean = xs.reduce((a, b) => a + b, 0) / xs.length
  return xs.reduce((a, b) => a + (b - mean) ** 2, 0) / (xs.length - 1)
}

export function naiveStock(x: NaiveInput, p: ModelParams): NaiveDay[] {
  const days: NaiveDay[] = []
  const T = x.r.length
  for (let t = 0; t < T; t++) {
    const o: NaiveDay = {}
    const sec = x.sec[t]
    const reg = x.sub[t]
    const fallback = sec >= 0 && !(reg >= 0 && etfObs(x.etf[reg], t, p) >= p.minObs)
    const u = sec < 0 ? -1 : fallback ? sec : reg
    o.subEff = u
    const f1 = fitLevel(x, t, 1, -1, -1, p)
    o.l1_mkt_hr = f1 ? f1.hrM : Number.NaN
    o.l1_mkt_er = f1 ? f1.erM : Number.NaN
    o.l1_res_er = f1 ? f1.erRes : Number.NaN
    o.l1_mkt_beta = f1 ? f1.bM : Number.NaN
    const f2 = sec >= 0 ? fitLevel(x, t, 2, sec, -1, p) : null
    o.l2_mkt_hr = f2 ? f2.hrM : Number.NaN
    o.l2_sec_hr = f2 ? f2.hrS : Number.NaN
    o.l2_mkt_er = f2 ? f2.erM : Number.NaN
    o.l2_sec_er = f2 ? f2.erS : Number.NaN
    o.l2_res_er = f2 ? f2.erRes : Number.NaN
    o.l2_sec_beta = f2 ? f2.bS : Number.NaN
    const f3 = f2 && !fallback ? fitLevel(x, t, 3, sec, u, p) : null
    if (f2 && fallback) {
      Object.assign(o, {
        l3_mkt_hr: o.l2_mkt_hr,
        l3_sec_hr: o.l2_sec_hr,
        l3_sub_hr: 0,
        l3_mkt_er: o.l2_mkt_er,
        l3_sec_er: o.l2_sec_er,
        l3_sub_er: Number.isNaN(o.l2_mkt_er) ? Number.NaN : 0,
        l3_res_er: o.l2_res_er,
        l3_sub_beta: Number.NaN,
      })
    } else {
      o.l3_mkt_hr = f3 ? f3.hrM : Number.NaN
      o.l3_sec_hr = f3 ? f3.hrS : Number.NaN
      o.l3_sub_hr = f3 ? f3.hrU : Number.NaN
      o.l3_mkt_er = f3 ? f3.erM : Number.NaN
      o.l3_sec_er = f3 ? f3.erS : Number.NaN
      o.l3_sub_er = f3 ? f3.erU : Number.NaN
      o.l3_res_er = f3 ? f3.erRes : Number.NaN
      o.l3_sub_beta = f3 ? f3.bU : Number.NaN
    }
    const st =
      sec >= 0 && x.style && !Number.isNaN(o.l3_res_er)
        ? naiveStyle(x, t, fallback ? [sec] : [sec, u], p, o.l3_res_er)
        : { share: Number.NaN, mask: 0 }
    o.l3_style_er = st.share
    o.style_factors = st.mask
    const l2 = o.l2_sec_er
    const l3 = o.l3_sub_er
    o.lstar_level =
      Number.isNaN(l2) && Number.isNaN(l3) ? Number.NaN : l3 >= p.theta ? 3 : l2 >= p.theta ? 2 : 1
    o.recommended_level = recommend(o, p)
    const last23 = Array.from(x.r.subarray(Math.max(0, t - 22), t + 1)).filter((v) => !Number.isNaN(v))
    o.stock_var = last23.length >= 20 ? sampleVar(last23) : Number.NaN
    o.vol_23d = Math.sqrt(252 * o.stock_var)
    const last252 = Array.from(x.r.subarray(Math.max(0, t - 251), t + 1)).filter((v) => !Number.isNaN(v))
    o.vol_252d_ann = last252.length >= 20 ? Math.sqrt(252 * sampleVar(last252)) : Number.NaN
    decomposeNaive(x, days, o, t)
    days.push(o)
  }
  return days
}

function recommend(o: NaiveDay, p: ModelParams): number {
  if (Number.isNaN(o.l1_mkt_hr)) return Number.NaN
  let level = Number.isNaN(o.lstar_level) ? 1 : o.lstar_level
  if (
    level === 3 &&
    (Math.abs(o.l3_mkt_hr) + Math.abs(o.l3_sec_hr) + Math.abs(o.l3_sub_hr) > p.leverageCap ||
      0.7 * o.l3_sub_er < 0.01)
  )
    level = 2
  if (
    level === 2 &&
    (Math.abs(o.l2_mkt_hr) + Math.abs(o.l2_sec_hr) > p.leverageCap || 0.7 * o.l2_sec_er < 0.01)
  )
    level = 1
  return level
}

function decomposeNaive(x: NaiveInput, days: NaiveDay[], o: NaiveDay, t: number): void {
  const prev = days[t - 1]
  const r = x.r[t]
  const nul = Number.isNaN(r) || !prev
  const m = x.m[t]
  const s = prev && x.sec[t - 1] >= 0 ? x.etf[x.sec[t - 1]][t] : Number.NaN
  const u = prev && prev.subEff >= 0 ? x.etf[prev.subEff][t] : Number.NaN
  const c1 = nul ? Number.NaN : prev.l1_mkt_hr * m
  const c2 = nul ? Number.NaN : prev.l2_mkt_hr * m + prev.l2_sec_hr * s
  const c3 = nul ? Number.NaN : prev.l3_mkt_hr * m + prev.l3_sec_hr * s + prev.l3_sub_hr * u
  Object.assign(o, {
    l1_cfr: c1,
    l2_cfr: c2,
    l3_cfr: c3,
    l1_fr: c1,
    l2_fr: c2 - c1,
    l3_fr: c3 - c2,
    l1_rr: r - c1,
    l2_rr: r - c2,
    l3_rr: r - c3,
  })
  const ls = prev ? prev.lstar_level : Number.NaN
  o.lstar_rr = ls === 1 ? o.l1_rr : ls === 2 ? o.l2_rr : ls === 3 ? o.l3_rr : Number.NaN
}
