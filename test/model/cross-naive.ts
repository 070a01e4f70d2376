/**
 * Direct, deliberately plain reference implementations of the cross-sectional products
 * (docs/methodology.md §11–§12) for the property tests in cross.test.ts: straightforward loops and full
 * comparator sorts, written from the spec, sharing no code with src/engine/model/cross. Sums and
 * products run in textbook order, so values agree with the kernels to rounding only; the tests
 * make exact ties from values that are exact in any order (one-day windows, sums of quarters)
 * and from cloned symbols, whose values are bit-identical whatever the order of operations.
 */

type Series = Float64Array[]
const isNum = (v: number) => !Number.isNaN(v)
const month = (day: number) => new Date(day * 86_400_000).toISOString().slice(0, 7)

/** Ranks by value descending, ties by index ascending: Map index → 1-based rank. */
function rankDesc(items: { i: number; v: number }[]): Map<number, number> {
  const sorted = [...items].sort((a, b) => (a.v === b.v ? a.i - b.i : b.v - a.v))
  return new Map(sorted.map((it, k) => [it.i, k + 1]))
}

export interface NaiveUniverseInput {
  calendar: Int32Array
  isStock: Uint8Array
  close: Series
  returns: Series
  marketCap: Series
  volume: Series | null
}

export function naiveUniverses(x: NaiveUniverseInput) {
  const S = x.isStock.length
  const T = x.calendar.length
  const valid = (i: number, t: number) => x.isStock[i] === 1 && isNum(x.close[i][t]) && isNum(x.returns[i][t])
  const isMonthEnd = (t: number) => t + 1 < T && month(x.calendar[t]) !== month(x.calendar[t + 1])
  const mcRank: number[][] = Array.from({ length: S }, () => new Array(T).fill(0))
  const dvRank: number[][] = Array.from({ length: S }, () => new Array(T).fill(0))
  const maskAsOf: number[] = new Array(T).fill(-1)
  const validOut: number[][] = Array.from({ length: S }, (_, i) =>
    Array.from({ length: T }, (_, t) => (valid(i, t) ? 1 : 0)),
  )
  for (let t = 0; t < T; t++) {
    let e = -1
    for (let d = t - 1; d >= 0; d--) {
      if (isMonthEnd(d)) {
        e = d
        break
      }
    }
    if (e < 0) continue
    maskAsOf[t] = x.calendar[e]
    const mc: { i: number; v: number }[] = []
    const dv: { i: number; v: number }[] = []
    for (let i = 0; i < S; i++) {
      if (!valid(i, e)) continue
      if (Number.isFinite(x.marketCap[i][e])) mc.push({ i, v: x.marketCap[i][e] })
      if (x.volume) {
        let sum = 0
        let n = 0
        for (let d = e - 62; d <= e; d++) {
          if (d < 0) continue
          const v = x.close[i][d] * x.volume[i][d]
          if (isNum(v)) {
            sum += v
            n++
          }
        }
        if (n > 0) dv.push({ i, v: sum / n })
      }
    }
    for (const [i, r] of rankDesc(mc)) mcRank[i][t] = Math.min(r, 32767)
    for (const [i, r] of rankDesc(dv)) dvRank[i][t] = Math.min(r, 32767)
  }
  return { mcRank, dvRank, maskAsOf, valid: validOut }
}

export interface NaiveRankingInput {
  returns: Series
  marketCap: Series
  l2Rr: Series
  l3Rr: Series
  l1MktEr: Series
  l2MktEr: Series
  l2SecEr: Series
  l3ResEr: Series
  sectorEtf: Int16Array[]
  subsectorEtf: Int16Array[]
  active: (i: number, t: number) => boolean
}

/**
 * A metric's value and the magnitude of the terms that made it: the largest partial product
 * (compounded returns, whose `prod - 1` cancels near 0) or the mean of absolute values (window
 * means). Comparisons scale their tolerance with `scale`, never with a cancelled value.
 */
export function naiveMetricScaled(
  x: NaiveRankingInput,
  metric: string,
  w: number,
  i: number,
  t: number,
): { value: number; scale: number } {
  const nan = { value: Number.NaN, scale: Number.NaN }
  if (metric === 'mkt_cap') return { value: x.marketCap[i][t], scale: Math.abs(x.marketCap[i][t]) }
  if (t - w + 1 < 0) return nan
  const day = (d: number): number => {
    switch (metric) {
      case 'gross_return':
        return x.returns[i][d]
      case 'sector_residual':
        return x.l2Rr[i][d]
      case 'subsector_residual':
        return x.l3Rr[i][d]
      case 'er_l1':
        return x.l1MktEr[i][d]
      case 'er_l2':
        return x.l2MktEr[i][d] + x.l2SecEr[i][d]
      default:
        return 1 - x.l3ResEr[i][d]
    }
  }
  const compounded = metric === 'gross_return' || metric.endsWith('_residual')
  let acc = compounded ? 1 : 0
  let scale = compounded ? 1 : 0
  for (let d = t - w + 1; d <= t; d++) {
    const v = day(d)
    if (!isNum(v)) return nan
    acc = compounded ? acc * (1 + v) : acc + v
    scale = compounded ? Math.max(scale, Math.abs(acc)) : scale + Math.abs(v)
  }
  return compounded ? { value: acc - 1, scale } : { value: acc / w, scale: scale / w }
}

export function naiveMetric(x: NaiveRankingInput, metric: string, w: number, i: number, t: number): number {
  return naiveMetricScaled(x, metric, w, i, t).value
}

export function naiveRankDay(x: NaiveRankingInput, t: number, metric: string, w: number) {
  const S = x.returns.length
  const scaled = Array.from({ length: S }, (_, i) =>
    x.active(i, t) ? naiveMetricScaled(x, metric, w, i, t) : { value: Number.NaN, scale: Number.NaN },
  )
  const values = scaled.map((v) => v.value)
  const scales = scaled.map((v) => v.scale)
  const members = values.flatMap((v, i) => (isNum(v) ? [{ i, v }] : []))
  const ordinal = {
    universe: new Array(S).fill(0),
    sector: new Array(S).fill(0),
    subsector: new Array(S).fill(0),
  }
  const size = {
    universe: new Array(S).fill(0),
    sector: new Array(S).fill(0),
    subsector: new Array(S).fill(0),
  }
  for (const [i, r] of rankDesc(members)) {
    ordinal.universe[i] = r
    size.universe[i] = members.length
  }
  for (const cohort of ['sector', 'subsector'] as const) {
    const etf = cohort === 'sector' ? x.sectorEtf : x.subsectorEtf
    for (const m of members) {
      const g = etf[m.i][t]
      if (g < 0) continue
      const peers = members.filter((p) => etf[p.i][t] === g)
      ordinal[cohort][m.i] = rankDesc(peers).get(m.i)
      size[cohort][m.i] = peers.length
    }
  }
  return { values, scales, ordinal, size }
}

export interface NaivePanelInput {
  industry: Int16Array[]
  nIndustries: number
  marketCap: Series
  beta: Series
  active: (i: number, t: number) => boolean
}

export function naiveIndustryPanel(x: NaivePanelInput, t: number, minPeers: number) {
  const rows: {
    industry: number
    mean: number
    meanScale: number
    variance: number
    n: number
    sw: number
  }[] = []
  for (let g = 0; g < x.nIndustries; g++) {
    const m: { w: number; b: number }[] = []
    for (let i = 0; i < x.beta.length; i++) {
      const cap = x.marketCap[i][t]
      if (x.industry[i][t] !== g || !x.active(i, t) || !isNum(x.beta[i][t])) continue
      if (!Number.isFinite(cap) || cap < 0) continue
      m.push({ w: Math.log(1 + cap), b: x.beta[i][t] })
    }
    if (m.length < minPeers || m.length === 0) continue
    const sw = m.reduce((a, p) => a + p.w, 0)
    const mean = m.reduce((a, p) => a + p.w * p.b, 0) / sw
    // Signed betas can cancel in the mean: its rounding is relative to the mean of |β|.
    const meanScale = m.reduce((a, p) => a + p.w * Math.abs(p.b), 0) / sw
    const variance = m.reduce((a, p) => a + p.w * (p.b - mean) ** 2, 0) / sw
    rows.push({ industry: g, mean, meanScale, variance, n: m.length, sw })
  }
  return rows
}

export function naiveReversion(l3Rr: Series, shortDays = 5, longDays = 60, minObs = 30): number[][] {
  return l3Rr.map((x) =>
    Array.from({ length: x.length }, (_, t) => {
      if (t < shortDays - 1) return Number.NaN
      const last = Array.from(x.subarray(t - shortDays + 1, t + 1))
      if (!last.every(isNum)) return Number.NaN
      const win = Array.from(x.subarray(Math.max(0, t - longDays + 1), t + 1)).filter(isNum)
      if (win.length < minObs || win.length < 2) return Number.NaN
      if (win.every((v) => v === win[0])) return Number.NaN // std exactly 0
      const mean = win.reduce((a, b) => a + b, 0) / win.length
      const sd = Math.sqrt(win.reduce((a, b) => a + (b - mean) ** 2, 0) / (win.length - 1))
      if (!(sd > 0)) return Number.NaN
      return last.reduce((a, b) => a + b, 0) / (sd * Math.sqrt(shortDays))
    }),
  )
}

/** Buckets 1..k by ascending value (ties by index) over the given members: ceil(k × ordinal / n). */
export function naiveBuckets(members: { i: number; v: number }[], k: number, S: number): number[] {
  const out = new Array(S).fill(0)
  const sorted = [...members].sort((a, b) => (a.v === b.v ? a.i - b.i : a.v - b.v))
  sorted.forEach((m, r) => {
    out[m.i] = Math.ceil((k * (r + 1)) / sorted.length)
  })
  return out
}
