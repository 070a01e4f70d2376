import { BETA_FIELDS, DECOMP_FIELDS, LEVEL_FIELDS } from '../../platform/metric-fields.ts'
import { emptyFit, type LevelFit, type Moments, solveLevel } from './cascade.ts'
import { lstarLevel, recommendedLevel } from './levels.ts'
import { WindowMoments } from './moments.ts'
import type { ModelParams } from './params.ts'
import { StyleDays, styleSplit, styleStateSize } from './style.ts'
import type { StyleBasis } from './style-basis.ts'

/** Per stock-day state fields (the model after the close of t). */
export const STATE_FIELDS = [
  ...LEVEL_FIELDS,
  ...BETA_FIELDS,
  'lstar_level',
  'recommended_level',
  'stock_var',
  'vol_23d',
  'vol_252d_ann',
  'l3_style_er',
  'style_factors',
] as const

export type StockField = (typeof STATE_FIELDS)[number] | (typeof DECOMP_FIELDS)[number]
export const STOCK_FIELDS: readonly StockField[] = [...STATE_FIELDS, ...DECOMP_FIELDS]

/** Shared by all stocks of a build. */
export interface MarketContext {
  /** Market ETF returns. */
  m: Float64Array
  /** Returns per ETF index (NaN = null). */
  etf: Float64Array[]
  /** Per ETF: non-null returns in the window ending at t (subsector fallback rule). */
  etfObs: Int32Array[]
  weights: Float64Array
  params: ModelParams
  /** The style split's shared factorisations (engine/model/style.ts); none → the split is null. */
  styleBasis?: StyleBasis
}

export interface StockSeries {
  r: Float64Array
  /** Sector ETF index per day (-1 = none). */
  sec: Int16Array
  /** Registry subsector ETF index per day (-1 = the industry has none). */
  sub: Int16Array
}

export interface StockOutput {
  fields: Record<StockField, Float64Array>
  /** Subsector ETF in effect per day (the sector ETF on fallback days; -1 = none). */
  subEff: Int16Array
  /**
   * The kernel's running state after the last day run (kernelStateSize values), written when
   * given. With `resume`, it must hold the state a run ending at `from` saved: the run continues
   * from it instead of replaying from the rebase day (same numbers, bit for bit).
   */
  state?: Float64Array
  resume?: boolean
}

/** Moment matrices of the kernel's state: L1 (r, m), L2 (r, m, s), L3 (r, m, s, u), the 252-day volatility. */
const M1_AT = 4
const M2_AT = M1_AT + WindowMoments.stateSize(2)
const M3_AT = M2_AT + WindowMoments.stateSize(3)
const VOL_AT = M3_AT + WindowMoments.stateSize(4)
const STYLE_AT = VOL_AT + WindowMoments.stateSize(2)

/**
 * Values of one stock's saved kernel state with `styleFactors` style factors (0: no style split):
 * a header (saved, previous sector ETF, previous level-3 ETF, previous fallback), the four moment
 * matrices, then the style split's state (style.ts).
 */
export function kernelStateSize(styleFactors: number): number {
  return STYLE_AT + (styleFactors > 0 ? styleStateSize(styleFactors) : 0)
}

/** vol_252d_ann is a 252-day volatility whatever the estimation window is. */
const VOL_WINDOW = 252

const ONES_CACHE = new Map<number, Float64Array>()
function ones(n: number): Float64Array {
  let a = ONES_CACHE.get(n)
  if (!a) {
    a = new Float64Array(n).fill(1)
    ONES_CACHE.set(n, a)
  }
  return a
}

/**
 * Runs one stock over days [from, to). State is replayed from the last scheduled rebase day
 * at or before `from` (outputs before `from` are read, never written), so an incremental run
 * produces exactly the numbers of a full run. One long function on purpose: it is the inner
 * loop of the build, and splitting it would add calls per stock-day.
 */
export function runStock(
  ctx: MarketContext,
  s: StockSeries,
  out: StockOutput,
  from: number,
  to: number,
): void {
  const p = ctx.params
  const T = to
  const st = out.state
  const resume = out.resume === true
  if (resume && !(from > 0 && st && st[0] === 1))
    throw new Error('stock kernel: no saved state to resume from')
  const start = resume ? from : from - (from % p.rebaseEvery)
  const f = out.fields
  const w = ctx.weights
  const m1 = new WindowMoments(2, w)
  const m2 = new WindowMoments(3, w)
  const m3 = new WindowMoments(4, w)
  const volW = new WindowMoments(2, ones(VOL_WINDOW))
  const one = ones(s.r.length)
  const fit = emptyFit()
  const q: Moments = { rr: 0, rm: 0, mm: 0, rs: 0, sm: 0, ss: 0, ru: 0, um: 0, us: 0, uu: 0 }
  let prevSec = -2
  let prevU = -2
  // Variable lists are rebuilt only when an ETF changes identity (no allocation per day).
  const v1 = [s.r, ctx.m]
  const vv = [s.r, one]
  let v2: Float64Array[] = []
  let v3: Float64Array[] = []
  // Style split (engine/model/style.ts): this loop only records what the split needs of each day (its
  // level, the level's rebases and moments); styleSplit then runs over the recorded days.
  const basis = ctx.styleBasis
  const sd = basis ? StyleDays.scratch(T) : null
  let prevFallback = false
  if (resume && st) {
    prevSec = st[1]
    prevU = st[2]
    prevFallback = st[3] === 1
    m1.loadState(st, M1_AT)
    // The L2 and L3 sums matter only while their ETFs stay (saveState): otherwise the first day
    // rebases them.
    if (prevSec >= 0) {
      m2.loadState(st, M2_AT)
      v2 = [s.r, ctx.m, ctx.etf[prevSec]]
    }
    if (prevU >= 0) {
      m3.loadState(st, M3_AT)
      v3 = [s.r, ctx.m, ctx.etf[prevSec], ctx.etf[prevU]]
    }
    volW.loadState(st, VOL_AT)
    out.subEff[from - 1] = prevSec < 0 ? -1 : prevFallback ? prevSec : prevU
  }
  // The decomposition of day `start` reads the subsector ETF in effect the day before, which no
  // replayed day writes when `from` is itself a rebase day.
  else if (start > 0) out.subEff[start - 1] = effectiveSub(ctx, s, start - 1)
  for (let t = start; t < T; t++) {
    const scheduled = (t === start && !resume) || t % p.rebaseEvery === 0
    const sec = s.sec[t]
    const reg = s.sub[t]
    const fallback = sec >= 0 && !(reg >= 0 && ctx.etfObs[reg][t] >= p.minObs)
    const u = sec < 0 ? -1 : fallback ? sec : reg
    // L1 (r, m)
    if (scheduled) m1.rebase(v1, t)
    else m1.advance(v1, t)
    // L2 (r, m, s) and L3 (r, m, s, u): rebuilt when the ETF they use changes identity
    let rebased2 = false
    let rebased3 = false
    if (sec >= 0) {
      if (sec !== prevSec) v2 = [s.r, ctx.m, ctx.etf[sec]]
      if (scheduled || sec !== prevSec) {
        m2.rebase(v2, t)
        rebased2 = true
      } else rebased2 = !m2.advance(v2, t)
      if (!fallback) {
        const changed = sec !== prevSec || u !== prevU
        if (changed) v3 = [s.r, ctx.m, ctx.etf[sec], ctx.etf[u]]
        if (scheduled || changed) {
          m3.rebase(v3, t)
          rebased3 = true
        } else rebased3 = !m3.advance(v3, t)
      }
    }
    if (sd) {
      if (sec >= 0) {
        const level = fallback ? m2 : m3
        // The level's <r, f> follow its moment matrix's rebases (and start afresh on a switch).
        const rebased = fallback ? rebased2 || !prevFallback : rebased3
        sd.key[t] = (sec << 16) | (fallback ? 0xffff : u)
        sd.flags[t] = (fallback ? 1 : 0) | (rebased ? 2 : 0) | (level.entered ? 4 : 0) | (level.left ? 8 : 0)
        sd.count[t] = level.count
        const ls = level.sums
        sd.sums[4 * t] = ls[0]
        sd.sums[4 * t + 1] = ls[1]
        sd.sums[4 * t + 2] = ls[2]
        sd.sums[4 * t + 3] = ls[3]
      } else sd.key[t] = -1
    }
    prevFallback = fallback
    if (scheduled) volW.rebase(vv, t)
    else volW.advance(vv, t)
    prevSec = sec
    prevU = fallback ? -1 : u
    out.subEff[t] = u
    if (t < from) continue

    // ---- state after the close of t
    writeLevel1(f, t, m1, q, p, fit)
    const l2ok = sec >= 0 && writeLevel2(f, t, m2, q, p, fit)
    if (!l2ok) clearLevel(f, t, 2)
    if (!l2ok) clearLevel(f, t, 3)
    else if (fallback) copyFallback(f, t)
    else if (!writeLevel3(f, t, m3, q, p, fit)) clearLevel(f, t, 3)
    const lstar = lstarLevel(f.l2_sec_er[t], f.l3_sub_er[t], p.theta)
    f.lstar_level[t] = lstar
    f.recommended_level[t] = recommendedLevel(f, t, lstar, p)
    writeVols(f, s.r, t, volW)
    // ---- decomposition of day t's return with the state after t-1
    decompose(ctx, s, out, t)
  }
  const saved = st ? { state: st, at: STYLE_AT, resume } : undefined
  if (basis && sd)
    styleSplit(basis, s.r, sd, start, from, T, f.l3_res_er, f.l3_style_er, f.style_factors, saved)
  else {
    f.l3_style_er.fill(Number.NaN, from, T)
    f.style_factors.fill(0, from, T)
  }
  if (st) saveKernelState(st, [m1, m2, m3, volW], prevSec, prevU, prevFallback)
}

/**
 * Writes a stock's state after its last day (StockOutput.state). Canonical: a sum the next day
 * would rebase anyway (L2 without a sector ETF, L3 without a level-3 ETF) is saved as zeros, so
 * a full run, a replay and a resumed run save the same bytes.
 */
function saveKernelState(
  st: Float64Array,
  [m1, m2, m3, volW]: WindowMoments[],
  prevSec: number,
  prevU: number,
  prevFallback: boolean,
): void {
  st[0] = 1
  st[1] = prevSec
  st[2] = prevU
  st[3] = prevFallback ? 1 : 0
  m1.saveState(st, M1_AT)
  if (prevSec >= 0) m2.saveState(st, M2_AT)
  else st.fill(0, M2_AT, M3_AT)
  if (prevU >= 0) m3.saveState(st, M3_AT)
  else st.fill(0, M3_AT, VOL_AT)
  volW.saveState(st, VOL_AT)
}

/** The ETF of level 3 on day t: the subsector's, or the sector's when the subsector falls back (as in runStock). */
function effectiveSub(ctx: MarketContext, s: StockSeries, t: number): number {
  const sec = s.sec[t]
  const reg = s.sub[t]
  if (sec < 0) return -1
  return reg >= 0 && ctx.etfObs[reg][t] >= ctx.params.minObs ? reg : sec
}

function readMoments(mm: WindowMoments, level: 1 | 2 | 3, q: Moments): void {
  q.rr = mm.get(0, 0)
  q.rm = mm.get(0, 1)
  q.mm = mm.get(1, 1)
  if (level >= 2) {
    q.rs = mm.get(0, 2)
    q.sm = mm.get(1, 2)
    q.ss = mm.get(2, 2)
  }
  if (level === 3) {
    q.ru = mm.get(0, 3)
    q.um = mm.get(1, 3)
    q.us = mm.get(2, 3)
    q.uu = mm.get(3, 3)
  }
}

type Fields = Record<StockField, Float64Array>

function writeLevel1(
  f: Fields,
  t: number,
  mm: WindowMoments,
  q: Moments,
  p: ModelParams,
  fit: LevelFit,
): void {
  readMoments(mm, 1, q)
  if (mm.count < p.minObs || !solveLevel(1, q, p.degenerateTol, fit)) {
    clearLevel(f, t, 1)
    return
  }
  f.l1_mkt_hr[t] = fit.hrM
  f.l1_mkt_er[t] = fit.erM
  f.l1_res_er[t] = fit.erRes
  f.l1_mkt_beta[t] = fit.betaM
}

function writeLevel2(
  f: Fields,
  t: number,
  mm: WindowMoments,
  q: Moments,
  p: ModelParams,
  fit: LevelFit,
): boolean {
  readMoments(mm, 2, q)
  if (mm.count < p.minObs || !solveLevel(2, q, p.degenerateTol, fit)) return false
  f.l2_mkt_hr[t] = fit.hrM
  f.l2_sec_hr[t] = fit.hrS
  f.l2_mkt_er[t] = fit.erM
  f.l2_sec_er[t] = fit.erS
  f.l2_res_er[t] = fit.erRes
  f.l2_sec_beta[t] = fit.betaS
  return true
}

function writeLevel3(
  f: Fields,
  t: number,
  mm: WindowMoments,
  q: Moments,
  p: ModelParams,
  fit: LevelFit,
): boolean {
  readMoments(mm, 3, q)
  if (mm.count < p.minObs || !solveLevel(3, q, p.degenerateTol, fit)) return false
  f.l3_mkt_hr[t] = fit.hrM
  f.l3_sec_hr[t] = fit.hrS
  f.l3_sub_hr[t] = fit.hrU
  f.l3_mkt_er[t] = fit.erM
  f.l3_sec_er[t] = fit.erS
  f.l3_sub_er[t] = fit.erU
  f.l3_res_er[t] = fit.erRes
  f.l3_sub_beta[t] = fit.betaU
  return true
}

/** Subsector fell back to the sector ETF: L3 is L2 with a zero subsector leg (docs/methodology.md §5). */
function copyFallback(f: Fields, t: number): void {
  f.l3_mkt_hr[t] = f.l2_mkt_hr[t]
  f.l3_sec_hr[t] = f.l2_sec_hr[t]
  f.l3_sub_hr[t] = 0
  f.l3_mkt_er[t] = f.l2_mkt_er[t]
  f.l3_sec_er[t] = f.l2_sec_er[t]
  // Null ERs (<r,r> = 0) take precedence over the fallback's zero.
  f.l3_sub_er[t] = Number.isNaN(f.l2_mkt_er[t]) ? Number.NaN : 0
  f.l3_res_er[t] = f.l2_res_er[t]
  f.l3_sub_beta[t] = Number.NaN
}

function clearLevel(f: Fields, t: number, level: 1 | 2 | 3): void {
  const n = Number.NaN
  if (level === 1) {
    f.l1_mkt_hr[t] = n
    f.l1_mkt_er[t] = n
    f.l1_res_er[t] = n
    f.l1_mkt_beta[t] = n
  } else if (level === 2) {
    f.l2_mkt_hr[t] = n
    f.l2_sec_hr[t] = n
    f.l2_mkt_er[t] = n
    f.l2_sec_er[t] = n
    f.l2_res_er[t] = n
    f.l2_sec_beta[t] = n
  } else {
    f.l3_mkt_hr[t] = n
    f.l3_sec_hr[t] = n
    f.l3_sub_hr[t] = n
    f.l3_mkt_er[t] = n
    f.l3_sec_er[t] = n
    f.l3_sub_er[t] = n
    f.l3_res_er[t] = n
    f.l3_sub_beta[t] = n
  }
}

/**
 * stock_var / vol_23d from the last 23 days directly; vol_252d_ann from rolling sums
 * (docs/methodology.md §10).
 */
function writeVols(f: Fields, r: Float64Array, t: number, volW: WindowMoments): void {
  let n = 0
  let sum = 0
  for (let d = Math.max(0, t - 22); d <= t; d++) {
    if (!Number.isNaN(r[d])) {
      n++
      sum += r[d]
    }
  }
  if (n >= 20) {
    const mean = sum / n
    let ss = 0
    for (let d = Math.max(0, t - 22); d <= t; d++) if (!Number.isNaN(r[d])) ss += (r[d] - mean) ** 2
    f.stock_var[t] = ss / (n - 1)
    f.vol_23d[t] = Math.sqrt(252 * f.stock_var[t])
  } else {
    f.stock_var[t] = Number.NaN
    f.vol_23d[t] = Number.NaN
  }
  const cnt = volW.count
  if (cnt >= 20) {
    const s2 = volW.get(0, 0)
    const s1 = volW.get(0, 1)
    f.vol_252d_ann[t] = Math.sqrt((252 * Math.max(0, s2 - (s1 * s1) / cnt)) / (cnt - 1))
  } else f.vol_252d_ann[t] = Number.NaN
}

function decompose(ctx: MarketContext, s: StockSeries, out: StockOutput, t: number): void {
  const f = out.fields
  const r = s.r[t]
  const y = t - 1
  let c1 = Number.NaN
  let c2 = Number.NaN
  let c3 = Number.NaN
  if (!Number.isNaN(r) && y >= 0) {
    const m = ctx.m[t]
    c1 = f.l1_mkt_hr[y] * m
    const sec = s.sec[y]
    const sv = sec >= 0 ? ctx.etf[sec][t] : Number.NaN
    c2 = f.l2_mkt_hr[y] * m + f.l2_sec_hr[y] * sv
    const u = out.subEff[y]
    const uv = u >= 0 ? ctx.etf[u][t] : Number.NaN
    c3 = f.l3_mkt_hr[y] * m + f.l3_sec_hr[y] * sv + f.l3_sub_hr[y] * uv
  }
  f.l1_cfr[t] = c1
  f.l2_cfr[t] = c2
  f.l3_cfr[t] = c3
  f.l1_fr[t] = c1
  f.l2_fr[t] = c2 - c1
  f.l3_fr[t] = c3 - c2
  f.l1_rr[t] = r - c1
  f.l2_rr[t] = r - c2
  f.l3_rr[t] = r - c3
  const ls = y >= 0 ? f.lstar_level[y] : Number.NaN
  f.lstar_rr[t] = ls === 1 ? f.l1_rr[t] : ls === 2 ? f.l2_rr[t] : ls === 3 ? f.l3_rr[t] : Number.NaN
}
