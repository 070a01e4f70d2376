import assert from 'node:assert/strict'
import { SECTOR_ETFS } from '../../src/engine/data/etf-registry.ts'
import type { ModelStore, StoreField } from '../../src/engine/model-store/reader.ts'

/**
 * The portfolio risk of docs/methodology.md §13 ("Portfolio risk") written out independently for
 * the snapshot tests: plain arrays and loops, inputs read through the store reader only (never
 * src/engine/model or src/services). Everything is as of the last calendar day T over the lookback W.
 */

export const MARKET = 'SPY'
export const SQRT252 = Math.sqrt(252)

const STOCK_FIELDS = [
  'returns_gross',
  'price_close',
  'l1_mkt_hr',
  'l2_mkt_hr',
  'l2_sec_hr',
  'l3_mkt_hr',
  'l3_sec_hr',
  'l3_sub_hr',
  'l3_mkt_er',
  'l3_sec_er',
  'l3_sub_er',
  'l3_res_er',
  'l1_fr',
  'l2_fr',
  'l3_fr',
  'l1_rr',
  'l2_rr',
  'l3_rr',
  'vol_23d',
  'sector_etf',
  'subsector_etf',
  'recommended_level',
] as const satisfies readonly StoreField[]

export const fin = (x: number | undefined): x is number => x !== undefined && Number.isFinite(x)
export const nul = (x: number | undefined): number | null => (fin(x) ? x : null)

/** One stock as the methodology sees it at T over W. */
export interface Stock {
  index: number
  ticker: string
  /** Deepest level of its state at T (0: no L1 state). */
  level: number
  sector: string | null
  subsector: string | null
  /** Level-k exposure (k = 1..3 at [k-1]): ETF → HR, legs on the same ETF summed, level min(k, d). */
  b: [Map<string, number>, Map<string, number>, Map<string, number>]
  recommended: number
  /** Latest price_close (its last priced day). */
  price: number
  /** Fields at T. */
  at: Record<string, number>
  /** Fields over W (index 0 = first day of W). */
  w: Record<string, ArrayLike<number>>
  /**
   * Non-null residual returns l{d}_rr in W, and their sample variance (null below 2); under
   * ewma_nw expectedSnapshot replaces resVar by ewmaSpecific's and sets specShrink.
   */
  nRes: number
  resVar: number | null
  specShrink?: number
  covered: boolean
  /** An ETF held as a position. */
  isEtf: boolean
  /** Set by expectedSnapshot for an uncovered stock it proxies: the ETF and the peer count. */
  proxy?: { etf: string; peers: number; peers_of: string | null; given: boolean }
}

export interface Window {
  T: number
  from: number
  days: number
}

export function lookbackWindow(store: ModelStore, lookback: number, at?: number): Window {
  const T = at ?? store.calendar.length - 1
  const from = Math.max(0, T - lookback + 1)
  return { T, from, days: T - from + 1 }
}

export function sampleVar(x: readonly number[]): number | null {
  const n = x.length
  if (n < 2) return null
  const m = x.reduce((a, b) => a + b, 0) / n
  let s = 0
  for (const v of x) s += (v - m) ** 2
  return s / (n - 1)
}

export async function loadStock(store: ModelStore, index: number, win: Window): Promise<Stock> {
  const all = await store.history(index, [...STOCK_FIELDS], win.from, win.T + 1)
  // The state at T exists only while the stock is listed (its first to its last priced day).
  const life = await store.listedLife(index)
  const listed = life.first >= 0 && life.first <= win.T && life.last >= win.T
  const at: Record<string, number> = {}
  for (const f of STOCK_FIELDS)
    at[f] = listed ? ((all[f] as ArrayLike<number>)[win.days - 1] as number) : Number.NaN
  const code = (c: number) => (c >= 0 ? (store.etfs[c] as string) : null)
  const sector = code(at.sector_etf as number)
  const subsector = code(at.subsector_etf as number)
  let level = 0
  if (fin(at.l1_mkt_hr)) level = 1
  if (level === 1 && sector && fin(at.l2_mkt_hr) && fin(at.l2_sec_hr)) level = 2
  if (level === 2 && subsector && fin(at.l3_mkt_hr) && fin(at.l3_sec_hr) && fin(at.l3_sub_hr)) level = 3
  const legs = (pairs: [string | null, number | undefined][]) => {
    const m = new Map<string, number>()
    for (const [e, hr] of pairs) if (e && fin(hr)) m.set(e, (m.get(e) ?? 0) + hr)
    return m
  }
  const byLevel = [
    legs([[MARKET, at.l1_mkt_hr]]),
    legs([
      [MARKET, at.l2_mkt_hr],
      [sector, at.l2_sec_hr],
    ]),
    legs([
      [MARKET, at.l3_mkt_hr],
      [sector, at.l3_sec_hr],
      [subsector, at.l3_sub_hr],
    ]),
  ]
  const d = Math.max(level, 1)
  const b = [0, 1, 2].map((k) =>
    level === 0 ? new Map() : (byLevel[Math.min(k + 1, d) - 1] as Map<string, number>),
  )
  const res: number[] = []
  const rr = all[`l${d}_rr`] as ArrayLike<number>
  for (let t = 0; t < win.days; t++) if (fin(rr[t])) res.push(rr[t] as number)
  const { values } = await store.latest(index, ['price_close'])
  const meta = store.symbols[index]
  const current = meta?.tickers.find((x) => x.to === null) ?? meta?.tickers.at(-1)
  return {
    index,
    ticker: current?.ticker ?? (meta?.symbol as string),
    level,
    sector,
    subsector,
    b: b as Stock['b'],
    recommended: at.recommended_level as number,
    price: values.price_close as number,
    at,
    w: all as Record<string, ArrayLike<number>>,
    nRes: res.length,
    resVar: sampleVar(res),
    covered: meta?.asset_type === 'etf' || (level >= 1 && res.length >= 20),
    isEtf: meta?.asset_type === 'etf',
  }
}

/** Median of stock_var × l3_res_er at T over the stocks whose sector ETF at T is `etf` (all stocks for null). */
export async function peerVariance(
  store: ModelStore,
  T: number,
  etf: string | null,
): Promise<{ variance: number; peers: number }> {
  const code = etf === null ? -1 : store.etfs.indexOf(etf)
  const [sec, v, er] = await Promise.all([
    store.crossSection('sector_etf', T),
    store.crossSection('stock_var', T),
    store.crossSection('l3_res_er', T),
  ])
  const xs: number[] = []
  for (let i = 0; i < store.symbols.length; i++) {
    if (store.symbols[i]?.asset_type !== 'stock') continue
    const x = (v[i] as number) * (er[i] as number)
    if (!(x >= 0)) continue
    if (etf === null || sec[i] === code) xs.push(x)
  }
  xs.sort((a, b) => a - b)
  const n = xs.length
  const median =
    n === 0
      ? Number.NaN
      : n % 2
        ? (xs[(n - 1) / 2] as number)
        : ((xs[n / 2 - 1] as number) + (xs[n / 2] as number)) / 2
  return { variance: median, peers: n }
}

/** A stock's non-null deepest-level residuals over lookback days [from, days) (oldest first). */
export function residualsOf(s: Stock, days: number, from = 0): number[] {
  const rr = s.w[`l${Math.max(s.level, 1)}_rr`] as ArrayLike<number>
  const out: number[] = []
  for (let t = from; t < days; t++) if (fin(rr[t])) out.push(rr[t] as number)
  return out
}

/** Exponentially weighted variance of x (oldest first, weight 0.5^((m−1−k)/H) on k), weighted mean removed, over Σw − Σw²/Σw. */
export function ewVar(x: readonly number[], H: number): number {
  const m = x.length
  const w = x.map((_, k) => 0.5 ** ((m - 1 - k) / H))
  const sw = w.reduce((a, b) => a + b, 0)
  const mean = x.reduce((a, v, k) => a + (w[k] as number) * v, 0) / sw
  const ss = x.reduce((a, v, k) => a + (w[k] as number) * (v - mean) ** 2, 0)
  return ss / (sw - w.reduce((a, b) => a + b * b, 0) / sw)
}

/**
 * A modelled stock's specific variance under ewma/ewma_nw: its non-null residuals over the last
 * min(days, 504) lookback days (m of them), v = ewVar(·, 42); with m < 126, shrunk toward its
 * sector's peerVariance at T: γ = clamp((m − 20)/(126 − 20), 0, 1), γ·v + (1 − γ)·prior.
 */
export async function ewmaSpecific(
  store: ModelStore,
  s: Stock,
  win: Window,
): Promise<{ variance: number; shrinkage: number; m: number; v: number; prior: number }> {
  const xs = residualsOf(s, win.days, Math.max(0, win.days - 504))
  const m = xs.length
  const v = ewVar(xs, 42)
  if (m >= 126) return { variance: v, shrinkage: 0, m, v, prior: Number.NaN }
  const prior = (await peerVariance(store, win.T, s.sector)).variance
  const gamma = Math.min(1, Math.max(0, (m - 20) / (126 - 20)))
  return { variance: gamma * v + (1 - gamma) * prior, shrinkage: 1 - gamma, m, v, prior }
}

/** A modelled stock with ewmaSpecific's variance as its resVar (ETFs and uncovered stocks as they are). */
async function withEwmaSpecific(store: ModelStore, s: Stock, win: Window): Promise<Stock> {
  if (!s.covered || s.isEtf) return s
  const e = await ewmaSpecific(store, s, win)
  return { ...s, resVar: e.variance, specShrink: e.shrinkage }
}

/** The ETF a stock without a model is proxied by: its sector ETF at T, else its classification's; else the market. */
function proxyEtfOf(store: ModelStore, s: Stock): string {
  const sector = store.symbols[s.index]?.sector
  const e = s.sector ?? (sector ? (SECTOR_ETFS[sector] ?? null) : null)
  return e !== null && store.resolve(e) >= 0 ? e : MARKET
}

/** Exposure 1 to `etf` per level: market itself; a sector ETF β·SPY then itself; another ETF β·SPY twice then itself. */
function etfExposures(etf: string, cov: Cov | null): Stock['b'] {
  const self = new Map([[etf, 1]])
  if (etf === MARKET) return [self, self, self]
  const beta = cov ? cov.s(etf, MARKET) / cov.s(MARKET, MARKET) : Number.NaN
  const m = new Map([[MARKET, beta]])
  return Object.values(SECTOR_ETFS).includes(etf) ? [m, self, self] : [m, m, self]
}

export async function etfReturns(store: ModelStore, etf: string, win: Window): Promise<ArrayLike<number>> {
  const i = store.resolve(etf)
  assert.ok(i >= 0 && store.symbols[i]?.asset_type === 'etf', `${etf} is an ETF of the store`)
  return (await store.history(i, ['returns_gross'], win.from, win.T + 1)).returns_gross as ArrayLike<number>
}

/** Sample covariance (n − 1), two-pass, of equally long series. */
export function sampleCov(xs: readonly number[][]): number[][] {
  const k = xs.length
  const n = xs[0]?.length ?? 0
  const mean = xs.map((x) => x.reduce((a, b) => a + b, 0) / n)
  const S = Array.from({ length: k }, () => new Array<number>(k).fill(0))
  for (let a = 0; a < k; a++)
    for (let c = a; c < k; c++) {
      let s = 0
      const xa = xs[a] as number[]
      const xc = xs[c] as number[]
      const ma = mean[a] as number
      const mc = mean[c] as number
      for (let t = 0; t < n; t++) s += ((xa[t] as number) - ma) * ((xc[t] as number) - mc)
      ;(S[a] as number[])[c] = s / (n - 1)
      ;(S[c] as number[])[a] = s / (n - 1)
    }
  return S
}

/** Each value clipped to median ± 5 × 1.4826 × MAD of the series' values (NaN stays NaN). */
export function clip5(x: number[]): number[] {
  const med = (v: number[]) => {
    const s = [...v].sort((a, b) => a - b)
    const m = s.length >> 1
    return s.length % 2 ? (s[m] as number) : ((s[m - 1] as number) + (s[m] as number)) / 2
  }
  const vals = x.filter(fin)
  const m = med(vals)
  const mad = 1.4826 * med(vals.map((v) => Math.abs(v - m)))
  return x.map((v) => (fin(v) ? Math.min(m + 5 * mad, Math.max(m - 5 * mad, v)) : v))
}

/**
 * Exponentially weighted covariance (half-life H, weight 0.5^((m−1−k)/H) on day k of m, oldest
 * first), weighted mean removed, divided by Σw − Σw²/Σw, plus Newey-West with 3 lags: each lag-l
 * cross-covariance (weighted by the later day) and its transpose times 1 − l/4.
 */
export function nwCov(cols: number[][], H: number): number[][] {
  const m = (cols[0] as number[]).length
  const w = Array.from({ length: m }, (_, k) => 0.5 ** ((m - 1 - k) / H))
  const sw = w.reduce((a, b) => a + b, 0)
  const norm = sw - w.reduce((a, b) => a + b * b, 0) / sw
  const dev = cols.map((x) => {
    const mean = x.reduce((a, v, k) => a + (w[k] as number) * v, 0) / sw
    return x.map((v) => v - mean)
  })
  const g = (a: number, b: number, l: number) => {
    let acc = 0
    for (let k = l; k < m; k++)
      acc += (w[k] as number) * (dev[a]?.[k] as number) * (dev[b]?.[k - l] as number)
    return acc
  }
  return cols.map((_, a) =>
    cols.map((_, b) => {
      let c = g(a, b, 0)
      for (let l = 1; l <= 3; l++) c += (1 - l / 4) * (g(a, b, l) + g(b, a, l))
      return c / norm
    }),
  )
}

/**
 * The ewma_nw covariance of winsorised columns (common days, oldest first): volatilities from
 * half-life 42, correlations from half-life 126, both with Newey-West (3 lags).
 */
export function ewmaNwCov(cols: number[][]): number[][] {
  const vol = nwCov(cols, 42)
  const cor = nwCov(cols, 126)
  const v = (a: number) => (vol[a] as number[])[a] as number
  const c = (a: number, b: number) => (cor[a] as number[])[b] as number
  return cols.map((_, a) =>
    cols.map((_, b) => (a === b ? v(a) : (c(a, b) / Math.sqrt(c(a, a) * c(b, b))) * Math.sqrt(v(a) * v(b)))),
  )
}

/** A covariance over named ETFs: quadratic and bilinear forms of ETF → amount maps. */
export class Cov {
  readonly pos: Map<string, number>
  constructor(
    readonly etfs: string[],
    readonly S: number[][],
  ) {
    this.pos = new Map(etfs.map((e, i) => [e, i]))
  }
  s(a: string, b: string): number {
    return (
      ((this.S[this.pos.get(a) as number] as number[])[this.pos.get(b) as number] as number) ?? Number.NaN
    )
  }
  /** x'Σy and its magnitude bound Σ|x_e||y_f|·√(Σ_ee Σ_ff) (the scale a rounding error is relative to). */
  form(x: Map<string, number>, y: Map<string, number>): { v: number; scale: number } {
    let v = 0
    let scale = 0
    for (const [e, xe] of x)
      for (const [f, yf] of y) {
        v += xe * yf * this.s(e, f)
        scale += Math.abs(xe * yf) * Math.sqrt(this.s(e, e) * this.s(f, f))
      }
    return { v, scale }
  }
  /** (Σy)_e for every ETF e. */
  times(y: Map<string, number>): Map<string, number> {
    const out = new Map<string, number>()
    for (const e of this.etfs) {
      let v = 0
      for (const [f, yf] of y) v += this.s(e, f) * yf
      out.set(e, v)
    }
    return out
  }
}

export function addInto(acc: Map<string, number>, x: Map<string, number>, w: number): void {
  for (const [e, v] of x) acc.set(e, (acc.get(e) ?? 0) + w * v)
}

export function sub(a: Map<string, number>, b: Map<string, number>): Map<string, number> {
  const out = new Map(a)
  for (const [e, v] of b) out.set(e, (out.get(e) ?? 0) - v)
  return out
}

export interface Holding {
  stock: Stock
  weight: number
}

export interface BenchLeg {
  /** An ETF (market or sector) or a stock. */
  ticker: string
  weight: number
  stock?: Stock
}

export interface Split {
  market: number
  sector: number
  subsector: number
  residual: number
  systematic: number
}

export interface RiskOf {
  h: [Map<string, number>, Map<string, number>, Map<string, number>]
  Vk: [number, number, number]
  scaleK: [number, number, number]
  D: number
  V: number
  scale: number
  vol: number
  split: Split
}

export interface Expected {
  win: Window
  /** The book risk estimator the covariance was computed with. */
  estimator: 'sample' | 'ewma_nw'
  etfs: string[]
  etfDays: number
  cov: Cov | null
  book: Holding[]
  hRec: Map<string, number>
  risk: RiskOf | null
  positions: {
    stock: Stock
    weight: number
    marginal: number
    component: number
    scale: number
    sigma2: number
  }[]
  etfContrib: Map<string, { marginal: number; component: number; scale: number }>
  residualComponent: number
  dr: number | null
  strips: Record<'gross' | 'market' | 'sector' | 'subsector' | 'residual' | 'systematic', number[]>
  /** Σ|terms| of each day (every w·field added that day). */
  stripScale: number[]
  /** Days on which some position had a return. */
  anyReturn: boolean[]
  totals: Record<'gross' | 'market' | 'sector' | 'subsector' | 'residual' | 'systematic', number>
  bench: null | {
    legs: BenchLeg[]
    beta: Map<string, number>
    risk: RiskOf
    active: [Map<string, number>, Map<string, number>, Map<string, number>]
    Da: number
    te: number
    teScale: number
    activeSplit: Split
    daily: number[]
  }
}

function riskOf(cov: Cov, h: RiskOf['h'], D: number): RiskOf {
  const f = h.map((x) => cov.form(x, x))
  const Vk = f.map((x) => x.v) as [number, number, number]
  const scaleK = f.map((x) => x.scale) as [number, number, number]
  const V = Vk[2] + D
  const scale = scaleK[2] + scaleK[1] + scaleK[0] + D
  return {
    h,
    Vk,
    scaleK,
    D,
    V,
    scale,
    vol: Math.sqrt(252 * V),
    split: {
      market: Vk[0] / V,
      sector: (Vk[1] - Vk[0]) / V,
      subsector: (Vk[2] - Vk[1]) / V,
      residual: D / V,
      systematic: Vk[2] / V,
    },
  }
}

/** The whole §13 computation for a normalised book (weights sum to 1) and an optional benchmark. */
export async function expectedSnapshot(
  store: ModelStore,
  book: Holding[],
  win: Window,
  benchmark: BenchLeg[] | null = null,
  estimator: 'sample' | 'ewma_nw' = 'sample',
): Promise<Expected> {
  if (estimator === 'ewma_nw') {
    book = await Promise.all(
      book.map(async (p) => ({ ...p, stock: await withEwmaSpecific(store, p.stock, win) })),
    )
    if (benchmark)
      benchmark = await Promise.all(
        benchmark.map(async (l) =>
          l.stock ? { ...l, stock: await withEwmaSpecific(store, l.stock, win) } : l,
        ),
      )
  }
  const inPlay = new Set<string>([MARKET])
  // Stocks without a model: proxied by their sector ETF and their peers' median specific variance.
  const proxied: Holding[] = []
  for (const p of book) {
    if (p.stock.covered) continue
    const etf = proxyEtfOf(store, p.stock)
    const peer = await peerVariance(store, win.T, etf === MARKET ? null : etf)
    if (peer.peers === 0) continue
    p.stock.proxy = { etf, peers: peer.peers, peers_of: etf === MARKET ? null : etf, given: false }
    inPlay.add(etf)
    proxied.push({ stock: { ...p.stock, resVar: peer.variance }, weight: p.weight })
  }
  for (const p of book) if (p.stock.isEtf) inPlay.add(p.stock.ticker)
  for (const p of book)
    if (p.stock.covered && !p.stock.isEtf) for (const m of p.stock.b) for (const e of m.keys()) inPlay.add(e)
  if (benchmark)
    for (const l of benchmark) {
      if (l.stock) {
        if (l.stock.covered) for (const m of l.stock.b) for (const e of m.keys()) inPlay.add(e)
      } else inPlay.add(l.ticker)
    }
  const etfs = [...inPlay].sort()
  const raw = await Promise.all(etfs.map(async (e) => Array.from(await etfReturns(store, e, win))))
  // ewma_nw winsorises each ETF's returns over the lookback before choosing the common days.
  const series = estimator === 'ewma_nw' ? raw.map(clip5) : raw
  const days: number[] = []
  for (let t = 0; t < win.days; t++) if (series.every((x) => fin(x[t]))) days.push(t)
  const cols = series.map((x) => days.map((t) => x[t] as number))
  const cov =
    days.length >= 20 ? new Cov(etfs, estimator === 'ewma_nw' ? ewmaNwCov(cols) : sampleCov(cols)) : null
  // Every priced position: a stock with its model, an ETF (exposure 1 to itself, no residual), a proxy.
  const covered: Holding[] = [
    ...book
      .filter((p) => p.stock.covered)
      .map((p) =>
        p.stock.isEtf
          ? {
              stock: { ...p.stock, b: etfExposures(p.stock.ticker, cov), resVar: 0, recommended: 3 },
              weight: p.weight,
            }
          : p,
      ),
    ...proxied.map((p) => ({
      stock: { ...p.stock, b: etfExposures(p.stock.proxy?.etf as string, cov), recommended: 0 },
      weight: p.weight,
    })),
  ]
  const h = [new Map(), new Map(), new Map()] as RiskOf['h']
  const hRec = new Map<string, number>()
  let D = 0
  for (const p of covered) {
    for (let k = 0; k < 3; k++)
      addInto(h[k] as Map<string, number>, p.stock.b[k] as Map<string, number>, p.weight)
    const r = p.stock.recommended
    if (r >= 1 && r <= 3) addInto(hRec, p.stock.b[r - 1] as Map<string, number>, p.weight)
    D += p.weight ** 2 * (p.stock.resVar as number)
  }
  const risk = cov ? riskOf(cov, h, D) : null
  const positions: Expected['positions'] = []
  const etfContrib: Expected['etfContrib'] = new Map()
  let residualComponent = Number.NaN
  let dr: number | null = null
  if (cov && risk) {
    const sd = Math.sqrt(risk.V)
    let sumSigma = 0
    for (const p of covered) {
      const bh = cov.form(p.stock.b[2], h[2])
      const own = p.weight * (p.stock.resVar as number)
      const marginal = (SQRT252 * (bh.v + own)) / sd
      const sigma2 = cov.form(p.stock.b[2], p.stock.b[2]).v + (p.stock.resVar as number)
      sumSigma += Math.abs(p.weight) * Math.sqrt(sigma2)
      positions.push({
        stock: p.stock,
        weight: p.weight,
        marginal,
        component: p.weight * marginal,
        scale: (SQRT252 * (bh.scale + own)) / sd,
        sigma2,
      })
    }
    const sh = cov.times(h[2])
    for (const e of etfs) {
      const he = h[2].get(e) ?? 0
      let scale = 0
      for (const [f, hf] of h[2]) scale += Math.abs(hf) * Math.sqrt(cov.s(e, e) * cov.s(f, f))
      const marginal = (SQRT252 * (sh.get(e) as number)) / sd
      etfContrib.set(e, { marginal, component: he * marginal, scale: (SQRT252 * scale) / sd })
    }
    residualComponent = (SQRT252 * D) / sd
    dr = sumSigma / sd
  }
  // Attribution and time behaviour: frozen weights, every resolved position.
  const names = ['gross', 'market', 'sector', 'subsector', 'residual', 'systematic'] as const
  const strips = Object.fromEntries(
    names.map((n) => [n, new Array<number>(win.days).fill(0)]),
  ) as Expected['strips']
  const stripScale = new Array<number>(win.days).fill(0)
  const anyReturn = new Array<boolean>(win.days).fill(false)
  for (let t = 0; t < win.days; t++) {
    for (const p of book) {
      const f = (n: string) => (p.stock.w[n] as ArrayLike<number>)[t] as number
      const r = f('returns_gross')
      if (!fin(r)) continue
      anyReturn[t] = true
      const w = p.weight
      const add = (n: (typeof names)[number], x: number) => {
        strips[n][t] = (strips[n][t] as number) + w * x
        stripScale[t] = (stripScale[t] as number) + Math.abs(w * x)
      }
      add('gross', r)
      if (p.stock.isEtf) {
        // An ETF: β·r_market to market, the rest to its own layer (sector, or subsector for another ETF).
        const e = p.stock.ticker
        const rm = (await etfReturns(store, MARKET, win))[t] as number
        const beta = e === MARKET ? 1 : cov ? cov.s(e, MARKET) / cov.s(MARKET, MARKET) : Number.NaN
        if (!fin(rm) || !fin(beta)) add('residual', r)
        else {
          add('market', e === MARKET ? r : beta * rm)
          if (e !== MARKET)
            add(Object.values(SECTOR_ETFS).includes(e) ? 'sector' : 'subsector', r - beta * rm)
        }
      } else if (fin(f('l3_fr')) && fin(f('l2_fr')) && fin(f('l1_fr')) && fin(f('l3_rr'))) {
        add('market', f('l1_fr'))
        add('sector', f('l2_fr'))
        add('subsector', f('l3_fr'))
        add('residual', f('l3_rr'))
      } else if (fin(f('l2_fr')) && fin(f('l1_fr')) && fin(f('l2_rr'))) {
        add('market', f('l1_fr'))
        add('sector', f('l2_fr'))
        add('residual', f('l2_rr'))
      } else if (fin(f('l1_fr')) && fin(f('l1_rr'))) {
        add('market', f('l1_fr'))
        add('residual', f('l1_rr'))
      } else add('residual', r)
    }
    strips.systematic[t] =
      (strips.market[t] as number) + (strips.sector[t] as number) + (strips.subsector[t] as number)
  }
  let pm = 1
  let pms = 1
  let pmsu = 1
  let pg = 1
  for (let t = 0; t < win.days; t++) {
    const m = strips.market[t] as number
    const s = strips.sector[t] as number
    const u = strips.subsector[t] as number
    pm *= 1 + m
    pms *= 1 + m + s
    pmsu *= 1 + m + s + u
    pg *= 1 + (strips.gross[t] as number)
  }
  const totals = {
    gross: pg - 1,
    market: pm - 1,
    sector: pms - pm,
    subsector: pmsu - pms,
    residual: pg - pmsu,
    systematic: pmsu - 1,
  }
  let bench: Expected['bench'] = null
  if (benchmark && cov && risk) {
    const beta = new Map<string, number>()
    const hb = [new Map(), new Map(), new Map()] as RiskOf['h']
    let Db = 0
    for (const l of benchmark) {
      if (l.stock) {
        if (!l.stock.covered) continue
        for (let k = 0; k < 3; k++)
          addInto(hb[k] as Map<string, number>, l.stock.b[k] as Map<string, number>, l.weight)
        Db += l.weight ** 2 * (l.stock.resVar as number)
      } else if (l.ticker === MARKET) {
        for (let k = 0; k < 3; k++) addInto(hb[k] as Map<string, number>, new Map([[MARKET, 1]]), l.weight)
      } else {
        const bx = cov.s(l.ticker, MARKET) / cov.s(MARKET, MARKET)
        beta.set(l.ticker, bx)
        addInto(hb[0], new Map([[MARKET, bx]]), l.weight)
        addInto(hb[1], new Map([[l.ticker, 1]]), l.weight)
        addInto(hb[2], new Map([[l.ticker, 1]]), l.weight)
      }
    }
    const active = [sub(h[0], hb[0]), sub(h[1], hb[1]), sub(h[2], hb[2])] as RiskOf['h']
    const wp = new Map<number, { w: number; s: Stock }>()
    for (const p of covered) wp.set(p.stock.index, { w: p.weight, s: p.stock })
    const wb = new Map<number, { w: number; s: Stock }>()
    for (const l of benchmark)
      if (l.stock?.covered)
        wb.set(l.stock.index, { w: (wb.get(l.stock.index)?.w ?? 0) + l.weight, s: l.stock })
    let Da = 0
    for (const i of new Set([...wp.keys(), ...wb.keys()])) {
      const s = (wp.get(i) ?? wb.get(i))?.s as Stock
      Da += ((wp.get(i)?.w ?? 0) - (wb.get(i)?.w ?? 0)) ** 2 * (s.resVar as number)
    }
    const ar = riskOf(cov, active, Da)
    const brisk = riskOf(cov, hb, Db)
    // Benchmark daily returns Σ w_b·r_b over the components with a return that day.
    const daily = new Array<number>(win.days).fill(0)
    for (const l of benchmark) {
      const r = l.stock
        ? (l.stock.w.returns_gross as ArrayLike<number>)
        : await etfReturns(store, l.ticker, win)
      for (let t = 0; t < win.days; t++)
        if (fin(r[t])) daily[t] = (daily[t] as number) + l.weight * (r[t] as number)
    }
    bench = {
      legs: benchmark,
      beta,
      risk: brisk,
      active,
      Da,
      te: ar.vol,
      teScale: ar.scale,
      activeSplit: ar.split,
      daily,
    }
  }
  return {
    win,
    estimator,
    etfs,
    etfDays: days.length,
    cov,
    book,
    hRec,
    risk,
    positions,
    etfContrib,
    residualComponent,
    dr,
    strips,
    stripScale,
    anyReturn,
    totals,
    bench,
  }
}

/** |got − want| ≤ tol, with a message that says both. */
export function near(got: number | null | undefined, want: number, tol: number, what: string): void {
  assert.ok(typeof got === 'number' && Number.isFinite(got), `${what}: got ${got}, expected ${want}`)
  assert.ok(
    Math.abs(got - want) <= tol,
    `${what}: got ${got}, expected ${want} (|diff| ${Math.abs(got - want)} > ${tol})`,
  )
}

/** An ETF → HR list as a map (legs on one ETF summed). */
export function legMap(legs: readonly { etf: string; hr: number }[]): Map<string, number> {
  const m = new Map<string, number>()
  for (const l of legs) m.set(l.etf, (m.get(l.etf) ?? 0) + l.hr)
  return m
}

/** Two ETF maps agree on every ETF either names (a missing one counts as 0). */
export function sameLegs(
  got: Map<string, number>,
  want: Map<string, number>,
  tol: number,
  what: string,
): void {
  for (const e of new Set([...got.keys(), ...want.keys()]))
    near(got.get(e) ?? 0, want.get(e) ?? 0, tol, `${what} ${e}`)
}

// ---------------------------------------------------------------------------------------------
// Response shape (the contract's fields this suite reads)

export interface Leg {
  etf: string
  hr: number
}
export interface SplitOut {
  market: number | null
  sector: number | null
  subsector: number | null
  residual: number | null
  systematic: number | null
}
export interface Contribution {
  marginal: number | null
  component: number | null
  percent: number | null
}
export interface PositionOut {
  ticker: string
  symbol: string
  weight: number
  shares: number | null
  price_close: number | null
  market_value: number | null
  covered: boolean
  reason: string | null
  risk_basis: 'model' | 'etf' | 'proxy' | 'none'
  proxy: { etf: string; peers: number; peers_of: string | null; given: boolean } | null
  in_dataset: boolean
  model_level: number | null
  hedge_etfs: { market: string; sector: string | null; subsector: string | null }
  l3_mkt_hr: number | null
  l3_sec_hr: number | null
  l3_sub_hr: number | null
  l3_mkt_er: number | null
  l3_sec_er: number | null
  l3_sub_er: number | null
  l3_res_er: number | null
  recommended_level: string | null
  vol_23d: number | null
  residual_vol_ann: number | null
  specific_shrinkage: number | null
  standalone_vol_ann: number | null
  risk_contribution: Contribution
}
export interface BenchmarkOut {
  id: string
  kind: string
  name: string
  components: { ticker: string; weight: number; asset_type: string; role: string | null }[]
}
export interface Body {
  snapshot: {
    type: string
    as_of: string
    lookback: { from: string; to: string; days: number; etf_days: number }
    positions: PositionOut[]
    positions_count: number
    covered_count: number
    weight_covered: number
    weight_proxied?: number
    hedges: { L1: Leg[]; L2: Leg[]; L3: Leg[]; recommended: Leg[] }
    volatility_ann: number | null
    systematic_vol_ann: number | null
    residual_vol_ann: number | null
    variance_decomposition: SplitOut
    diversification_ratio: number | null
    unresolved: { ticker: string; code: string; detail: string }[]
    benchmark: BenchmarkOut | null
    benchmark_context_id: string | null
    ticker_meta?: { ticker: string; symbol: string; factors: string[]; recommended_level: string | null }
    warnings: string[]
    exposure?: Record<string, number | null>
    forecast?: Record<string, number | null>
  }
  risk_summary: {
    total_risk_ann: number | null
    systematic_share: number | null
    contributions: {
      positions: ({ ticker: string; weight: number } & Contribution)[]
      etfs: ({ etf: string; exposure: number } & Contribution)[]
      residual: Contribution
    }
    active: null | {
      tracking_error_ann: number | null
      active_split: SplitOut
      active_weights: { ticker: string; portfolio: number; benchmark: number; active: number }[]
      active_exposures: { etf: string; portfolio: number; benchmark: number; active: number }[]
    }
    hedge_effectiveness: {
      realized_vol_ann: number | null
      L1: { residual_vol_ann: number | null; variance_reduction: number | null }
      L2: { residual_vol_ann: number | null; variance_reduction: number | null }
      L3: { residual_vol_ann: number | null; variance_reduction: number | null }
    }
    benchmark_risk: null | {
      volatility_ann: number | null
      systematic_vol_ann: number | null
      residual_vol_ann: number | null
      variance_decomposition: SplitOut
      hedges_L3: Leg[]
      weight_covered: number
    }
  }
  time_behavior: {
    dates: string[]
    portfolio_return: (number | null)[]
    cumulative_return: (number | null)[]
    drawdown: (number | null)[]
    max_drawdown: number | null
    realized_vol_ann: number | null
    benchmark_return?: (number | null)[]
    benchmark_cumulative_return?: (number | null)[]
    active_return?: (number | null)[]
  }
  attribution: {
    dates: string[]
    gross: number[]
    market: number[]
    sector: number[]
    subsector: number[]
    residual: number[]
    systematic: number[]
    totals: Record<string, number>
  }
  metadata: {
    data_as_of: string
    as_of: string
    lookback_days: number
    mode: string
    benchmark: string | null
    benchmark_context_id: string | null
  }
  _agent: { cost_usd: number; cache_status: string }
}

export interface Raw {
  status: number
  headers: Record<string, string>
  text: string
  bytes: Buffer
  json: unknown
}

// ---------------------------------------------------------------------------------------------
// Independent checks

/** A seeded generator (mulberry32): the same portfolios on every run. */
export function rng(seed: number) {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

export const STRIPS = ['gross', 'market', 'sector', 'subsector', 'residual', 'systematic'] as const
export const LEVEL = (k: number) => (k >= 1 && k <= 3 ? `L${k}` : null)

/** Tolerance of a variance-like figure: relative to the magnitude of its terms, never to the result. */
export const REL = 1e-11

export function checkSplit(got: SplitOut, want: RiskOf, what: string) {
  const tol = (REL * want.scale) / want.V + 1e-14
  near(got.market, want.split.market, tol, `${what} market`)
  near(got.sector, want.split.sector, tol, `${what} sector`)
  near(got.subsector, want.split.subsector, tol, `${what} subsector`)
  near(got.residual, want.split.residual, tol, `${what} residual`)
  near(got.systematic, want.split.systematic, tol, `${what} systematic`)
  near(
    (got.market as number) + (got.sector as number) + (got.subsector as number) + (got.residual as number),
    1,
    tol,
    `${what}: the four layers sum to 1`,
  )
}

/** Every figure of a snapshot body against the independent computation. */
export function checkBody(store: ModelStore, body: Body, exp: Expected, what: string) {
  const s = body.snapshot
  const { win } = exp
  assert.equal(s.as_of, store.date(win.T), `${what} as_of`)
  assert.equal(body.metadata.as_of, store.date(win.T))
  assert.equal(body.metadata.data_as_of, store.dataAsOf)
  assert.equal(body.metadata.mode, 'frozen')
  const rm = (body as unknown as { _metadata?: { risk_model?: { estimator?: string } } })._metadata
    ?.risk_model
  assert.equal(rm?.estimator, exp.estimator, `${what}: the answer used the estimator the computation assumes`)
  assert.deepEqual(
    s.lookback,
    { from: store.date(win.from), to: store.date(win.T), days: win.days, etf_days: exp.etfDays },
    `${what} lookback`,
  )
  // The book: normalised weights, sorted largest first.
  assert.equal(s.positions.length, exp.book.length, `${what} positions`)
  assert.equal(s.positions_count, exp.book.length)
  for (let i = 1; i < s.positions.length; i++)
    assert.ok(
      Math.abs((s.positions[i - 1] as PositionOut).weight) >=
        Math.abs((s.positions[i] as PositionOut).weight),
      `${what}: positions sorted by gross weight`,
    )
  const byTicker = new Map(s.positions.map((p) => [p.ticker, p]))
  let wc = 0
  let nc = 0
  let hedgeScale = 0
  for (const h of exp.book) {
    const p = byTicker.get(h.stock.ticker)
    assert.ok(p, `${what}: position ${h.stock.ticker}`)
    const pw = `${what} ${h.stock.ticker}`
    near(p.weight, h.weight, 1e-15, `${pw} weight`)
    assert.equal(
      p.covered,
      h.stock.covered,
      `${pw} covered (level ${h.stock.level}, ${h.stock.nRes} residual days)`,
    )
    if (!h.stock.covered) {
      assert.ok(p.reason && p.reason.length > 0, `${pw}: an uncovered position says why`)
      assert.deepEqual(p.proxy, h.stock.proxy ?? null, `${pw}: its proxy`)
      assert.equal(p.risk_basis, h.stock.proxy ? 'proxy' : 'none', `${pw}: risk_basis`)
      const e = exp.positions.find((x) => x.stock.index === h.stock.index)
      if (!e || !exp.risk)
        assert.equal(p.risk_contribution.component, null, `${pw}: unpriced, no contribution`)
      else
        near(
          p.risk_contribution.component,
          e.component,
          REL * e.scale * Math.abs(e.weight) + 1e-14,
          `${pw} proxy component`,
        )
      continue
    }
    wc += Math.abs(h.weight)
    nc++
    if (h.stock.isEtf) {
      assert.equal(p.risk_basis, 'etf', `${pw}: an ETF position`)
      const e = exp.positions.find((x) => x.stock.index === h.stock.index)
      if (e && exp.risk)
        near(
          p.risk_contribution.component,
          e.component,
          REL * e.scale * Math.abs(e.weight) + 1e-14,
          `${pw} component`,
        )
      continue
    }
    for (const m of h.stock.b) for (const v of m.values()) hedgeScale += Math.abs(h.weight * v)
    const at = h.stock.at
    for (const f of [
      'l3_mkt_hr',
      'l3_sec_hr',
      'l3_sub_hr',
      'l3_mkt_er',
      'l3_sec_er',
      'l3_sub_er',
      'l3_res_er',
      'vol_23d',
    ])
      assert.equal(p[f as keyof PositionOut], nul(at[f]), `${pw} ${f} is the stored value at T`)
    assert.equal(p.model_level, h.stock.level, `${pw} model_level`)
    assert.equal(p.recommended_level, LEVEL(h.stock.recommended), `${pw} recommended_level`)
    assert.deepEqual(p.hedge_etfs, { market: MARKET, sector: h.stock.sector, subsector: h.stock.subsector })
    if (exp.risk) {
      const e = exp.positions.find((x) => x.stock.index === h.stock.index)
      assert.ok(e)
      near(
        p.residual_vol_ann,
        Math.sqrt(252 * (h.stock.resVar as number)),
        1e-10 * Math.sqrt(252 * (h.stock.resVar as number)),
        `${pw} residual_vol_ann`,
      )
      // Under ewma_nw a short history's specific variance leans on its peers; sample never does.
      near(p.specific_shrinkage, h.stock.specShrink ?? 0, 1e-12, `${pw} specific_shrinkage`)
      near(
        p.standalone_vol_ann,
        Math.sqrt(252 * e.sigma2),
        REL * Math.sqrt(252 * e.sigma2),
        `${pw} standalone_vol_ann`,
      )
      near(p.risk_contribution.marginal, e.marginal, REL * e.scale + 1e-14, `${pw} marginal`)
      near(
        p.risk_contribution.component,
        e.component,
        REL * e.scale * Math.abs(e.weight) + 1e-14,
        `${pw} component`,
      )
    }
  }
  assert.equal(s.covered_count, nc, `${what} covered_count`)
  near(s.weight_covered, wc, 1e-14, `${what} weight_covered`)
  // Hedges per level and at the recommended level.
  for (const e of exp.positions)
    if (!e.stock.covered || e.stock.isEtf)
      for (const m of e.stock.b) for (const v of m.values()) hedgeScale += Math.abs(e.weight * v)
  const hTol = 1e-13 * hedgeScale + 1e-15
  if (exp.risk) {
    sameLegs(legMap(s.hedges.L1), exp.risk.h[0], hTol, `${what} hedge L1`)
    sameLegs(legMap(s.hedges.L2), exp.risk.h[1], hTol, `${what} hedge L2`)
    sameLegs(legMap(s.hedges.L3), exp.risk.h[2], hTol, `${what} hedge L3`)
  }
  if (exp.book.every((h) => !h.stock.covered || h.stock.recommended > 0))
    sameLegs(legMap(s.hedges.recommended), exp.hRec, hTol, `${what} hedge recommended`)
  // Variance, its split, volatility and diversification.
  if (!exp.risk) {
    assert.equal(s.volatility_ann, null, `${what}: fewer than 20 ETF days, no volatility`)
  } else {
    const r = exp.risk
    const volTol = (252 * REL * r.scale) / (2 * r.vol) + 1e-15
    near(s.volatility_ann, r.vol, volTol, `${what} volatility_ann`)
    near(body.risk_summary.total_risk_ann, r.vol, volTol, `${what} total_risk_ann`)
    const sys = Math.sqrt(252 * r.Vk[2])
    near(
      s.systematic_vol_ann,
      sys,
      (252 * REL * r.scale) / (2 * Math.max(sys, 1e-300)) + 1e-15,
      `${what} systematic_vol_ann`,
    )
    const res = Math.sqrt(252 * r.D)
    near(s.residual_vol_ann, res, 1e-12 * res + 1e-15, `${what} residual_vol_ann`)
    checkSplit(s.variance_decomposition, r, `${what} variance_decomposition`)
    near(
      body.risk_summary.systematic_share,
      r.split.systematic,
      (REL * r.scale) / r.V,
      `${what} systematic_share`,
    )
    near(
      s.diversification_ratio,
      exp.dr as number,
      REL * (exp.dr as number) * (r.scale / r.V),
      `${what} diversification_ratio`,
    )
    // Euler: positions' components and ETF components + residual each sum to the volatility.
    const c = body.risk_summary.contributions
    assert.equal(c.positions.length, exp.positions.length, `${what}: a contribution row per covered position`)
    assert.ok(c.etfs.length > 0, `${what}: ETF contribution rows`)
    let sumPos = 0
    let posScale = 0
    for (const e of exp.positions) {
      const row = c.positions.find((x) => x.ticker === e.stock.ticker)
      assert.ok(row, `${what}: contribution row ${e.stock.ticker}`)
      near(row.marginal, e.marginal, REL * e.scale + 1e-14, `${what} contribution marginal ${e.stock.ticker}`)
      near(
        row.component,
        e.component,
        REL * e.scale * Math.abs(e.weight) + 1e-14,
        `${what} contribution ${e.stock.ticker}`,
      )
      near(
        row.percent,
        e.component / r.vol,
        (REL * e.scale * Math.abs(e.weight)) / r.vol + 1e-12,
        `${what} percent ${e.stock.ticker}`,
      )
      sumPos += row.component as number
      posScale += e.scale * Math.abs(e.weight)
    }
    near(
      sumPos,
      s.volatility_ann as number,
      1e-13 * posScale + 1e-15,
      `${what}: position components sum to the volatility`,
    )
    let sumEtf = c.residual.component as number
    let etfScale = Math.abs(sumEtf)
    for (const row of c.etfs) {
      const e = exp.etfContrib.get(row.etf)
      assert.ok(e, `${what}: ETF row ${row.etf} is an ETF in play (${exp.etfs.join(',')})`)
      const he = exp.risk.h[2].get(row.etf) ?? 0
      near(row.exposure, he, hTol, `${what} ETF exposure ${row.etf}`)
      near(row.marginal, e.marginal, REL * e.scale + 1e-14, `${what} ETF marginal ${row.etf}`)
      near(
        row.component,
        e.component,
        REL * e.scale * Math.abs(he) + 1e-14,
        `${what} ETF component ${row.etf}`,
      )
      sumEtf += row.component as number
      etfScale += e.scale * Math.abs(he)
    }
    for (const [etf, e] of exp.etfContrib)
      if (!c.etfs.some((x) => x.etf === etf))
        assert.ok(Math.abs(e.component) <= 1e-15, `${what}: ETF ${etf} (component ${e.component}) has a row`)
    near(
      c.residual.component,
      exp.residualComponent,
      REL * exp.residualComponent + 1e-15,
      `${what} residual component`,
    )
    near(
      sumEtf,
      s.volatility_ann as number,
      1e-13 * etfScale + 1e-15,
      `${what}: ETF + residual components sum to the volatility`,
    )
  }
  // Attribution: the daily strips and their geometric totals.
  const a = body.attribution
  const dates = Array.from({ length: win.days }, (_, t) => store.date(win.from + t))
  assert.deepEqual(a.dates, dates, `${what} attribution dates`)
  for (const n of STRIPS) assert.equal(a[n].length, win.days, `${what} ${n} strip length`)
  for (let t = 0; t < win.days; t++) {
    const sc = exp.stripScale[t] as number
    for (const n of STRIPS)
      near(a[n][t], exp.strips[n][t] as number, 1e-14 * sc + 1e-300, `${what} ${n} strip ${dates[t]}`)
    const sum =
      (a.market[t] as number) +
      (a.sector[t] as number) +
      (a.subsector[t] as number) +
      (a.residual[t] as number)
    near(sum, a.gross[t] as number, 1e-15 * sc + 1e-300, `${what}: strips sum to gross on ${dates[t]}`)
    near(
      a.systematic[t],
      (a.market[t] as number) + (a.sector[t] as number) + (a.subsector[t] as number),
      1e-15 * sc + 1e-300,
      `${what}: systematic strip ${dates[t]}`,
    )
  }
  const prodScale = STRIPS.reduce((m, n) => Math.max(m, Math.abs(exp.totals[n]) + 1), 1)
  for (const n of STRIPS) near(a.totals[n], exp.totals[n], 1e-12 * prodScale, `${what} total ${n}`)
  near(
    (a.totals.market as number) +
      (a.totals.sector as number) +
      (a.totals.subsector as number) +
      (a.totals.residual as number),
    a.totals.gross as number,
    1e-13 * prodScale,
    `${what}: totals sum to the gross total`,
  )
  // Time behaviour.
  const tb = body.time_behavior
  assert.deepEqual(tb.dates, dates, `${what} time_behavior dates`)
  let cum = 1
  let peak = 1
  let mdd = 0
  const used: number[] = []
  for (let t = 0; t < win.days; t++) {
    const got = tb.portfolio_return[t]
    const g = exp.strips.gross[t] as number
    if (got === null) {
      assert.ok(
        !exp.anyReturn[t],
        `${what}: portfolio_return null on ${dates[t]} when a position has a return`,
      )
    } else {
      near(got, g, 1e-14 * (exp.stripScale[t] as number) + 1e-300, `${what} portfolio_return ${dates[t]}`)
      used.push(g)
    }
    cum *= 1 + g
    peak = Math.max(peak, cum)
    const dd = cum / peak - 1
    mdd = Math.min(mdd, dd)
    near(tb.cumulative_return[t], cum - 1, 1e-12 * cum, `${what} cumulative_return ${dates[t]}`)
    near(tb.drawdown[t], dd, 1e-12 * cum, `${what} drawdown ${dates[t]}`)
  }
  near(Math.abs(tb.max_drawdown as number), Math.abs(mdd), 1e-12, `${what} max_drawdown`)
  const m = used.reduce((x, y) => x + y, 0) / used.length
  const rv = Math.sqrt((252 * used.reduce((x, y) => x + (y - m) ** 2, 0)) / (used.length - 1))
  near(tb.realized_vol_ann, rv, 1e-10 * rv, `${what} realized_vol_ann`)
  // Hedge effectiveness: the book after each level's hedge = gross − market (L1), − sector (L2),
  // the residual strip (L3); annualised sample volatility and 1 − var(level)/var(gross).
  const he = body.risk_summary.hedge_effectiveness
  const sx = exp.strips
  const series = {
    L1: sx.gross.map((g, t) => g - (sx.market[t] as number)),
    L2: sx.gross.map((g, t) => g - (sx.market[t] as number) - (sx.sector[t] as number)),
    L3: [...sx.residual],
  }
  // One rule for every realised volatility: a day no position has a return is skipped, never a 0.
  const obs = (x: readonly number[]) => x.filter((_, t) => exp.anyReturn[t])
  const varOf = (x: readonly number[]) => {
    const mean = x.reduce((a, b) => a + b, 0) / x.length
    return x.reduce((a, b) => a + (b - mean) ** 2, 0) / (x.length - 1)
  }
  const vg = varOf(obs(sx.gross))
  near(
    he.realized_vol_ann,
    Math.sqrt(252 * vg),
    1e-10 * Math.sqrt(252 * vg),
    `${what} hedge realized_vol_ann`,
  )
  for (const k of ['L1', 'L2', 'L3'] as const) {
    const v = varOf(obs(series[k]))
    near(
      he[k].residual_vol_ann,
      Math.sqrt(252 * v),
      1e-10 * Math.sqrt(252 * vg),
      `${what} ${k} residual_vol_ann`,
    )
    near(he[k].variance_reduction, 1 - v / vg, 1e-10, `${what} ${k} variance_reduction`)
  }
}

/** Stocks loaded once per lookback; request rows → normalised holdings; benchmark parts → legs. */
export class BookMath {
  private readonly stocks = new Map<string, Promise<Stock>>()
  constructor(readonly store: ModelStore) {}

  stock(ticker: string, lookback: number): Promise<Stock> {
    const k = `${ticker}@${lookback}`
    let s = this.stocks.get(k)
    if (!s) {
      s = loadStock(this.store, this.store.resolve(ticker), lookbackWindow(this.store, lookback))
      this.stocks.set(k, s)
    }
    return s
  }

  /** Normalised holdings from request rows (weights, or shares × latest price_close; a repeat summed). */
  async holdings(
    rows: { ticker: string; weight?: number; shares?: number }[],
    lookback: number,
  ): Promise<Holding[]> {
    const dollars = new Map<string, number>()
    for (const r of rows) {
      const s = await this.stock(r.ticker, lookback)
      const d = r.weight ?? (r.shares as number) * s.price
      dollars.set(r.ticker, (dollars.get(r.ticker) ?? 0) + d)
    }
    const total = [...dollars.values()].reduce((a, b) => a + b, 0)
    const out: Holding[] = []
    for (const [ticker, d] of dollars)
      out.push({ stock: await this.stock(ticker, lookback), weight: d / total })
    return out
  }

  async benchLegs(parts: { ticker: string; weight: number }[], lookback: number): Promise<BenchLeg[]> {
    const out: BenchLeg[] = []
    for (const p of parts) {
      const i = this.store.resolve(p.ticker)
      if (this.store.symbols[i]?.asset_type === 'etf') out.push({ ticker: p.ticker, weight: p.weight })
      else out.push({ ticker: p.ticker, weight: p.weight, stock: await this.stock(p.ticker, lookback) })
    }
    return out
  }
}

/** Listed stocks with a model at data_as_of: current ticker, an L1 state and a price at T. */
export async function modelledTickers(store: ModelStore): Promise<string[]> {
  const T = store.calendar.length - 1
  const out: string[] = []
  for (let i = 0; i < store.symbols.length; i++) {
    const m = store.symbols[i]
    if (m?.asset_type !== 'stock') continue
    const cur = m.tickers.find((w) => w.to === null)
    if (!cur || store.resolve(cur.ticker) !== i) continue
    const h = await store.history(i, ['l1_mkt_hr', 'price_close'], T, T + 1)
    if (fin(h.l1_mkt_hr?.[0]) && fin(h.price_close?.[0])) out.push(cur.ticker)
  }
  return out
}

/** A POST /snapshot through the app (body kept as bytes for the tabular forms). */
export async function snapshotCall(
  app: {
    fastify: {
      inject: (
        o: object,
      ) => Promise<{ statusCode: number; headers: Record<string, unknown>; body: string; rawPayload: Buffer }>
    }
  },
  body: Record<string, unknown>,
  key: string,
  headers: Record<string, string> = {},
): Promise<Raw> {
  const res = await app.fastify.inject({
    method: 'POST',
    url: '/snapshot',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...headers },
    payload: JSON.stringify(body),
  })
  const h: Record<string, string> = {}
  for (const [n, v] of Object.entries(res.headers)) if (v !== undefined) h[n] = String(v)
  let json: unknown = null
  try {
    json = JSON.parse(res.body)
  } catch {}
  return { status: res.statusCode, headers: h, text: res.body, bytes: res.rawPayload, json }
}
