import { Rng } from '../../../engine/model/random.ts'
import { median } from '../../../engine/model/risk-forecast/covariance.ts'
import {
  ESTIMATORS,
  type EstimatorName,
  type EstimatorSpec,
  forecastCovariance,
  vixMultiplier,
} from '../../../engine/model/risk-forecast/estimators.ts'
import {
  regimeMultiplier,
  SPECIFIC_DAYS,
  specificVariance,
} from '../../../engine/model/risk-forecast/specific.ts'
import type { ModelStore } from '../../../engine/model-store/reader.ts'
import { type Progress, silentProgress } from '../../../platform/progress.ts'
import { type DayState, dayState, type EvalPanel, type Legs, loadPanel, stockLegs } from './panel.ts'
import { type RegimeSeries, regimeSeries } from './regime.ts'
import { type EvaluationResult, summarise } from './summary.ts'

/**
 * `erm3 evaluate` (docs/model-quality.md): at past dates every `step` trading days, each
 * estimator forecasts the risk of single stocks and random equal-weight books; the forecast is
 * compared with the return realised over the next `horizon` days (z = realised / forecast), and
 * the model's L1, L2, L3 and Lstar hedges are held over the same days.
 */
export interface EvaluateOptions {
  horizon: number
  step: number
  /** At most this many dates (evenly thinned); 0: all. */
  maxDates: number
  singles: number
  booksPerSize: number
  sizes: number[]
  seed: number
  estimators: EstimatorName[]
}

export const DEFAULT_EVALUATE: EvaluateOptions = {
  horizon: 21,
  step: 21,
  maxDates: 0,
  singles: 300,
  booksPerSize: 30,
  sizes: [10, 30, 100],
  seed: 7,
  estimators: Object.keys(ESTIMATORS) as EstimatorName[],
}

/** Residual returns a stock needs in the last 252 days to be drawn (as /snapshot covers a position). */
const MIN_RESIDUAL_DAYS = 20
const SPECIFIC = SPECIFIC_DAYS

export interface DateRecord {
  t: number
  /** z per estimator, per size key ('1', '10', …), per slot. */
  z: Record<string, Record<string, number[]>>
  /** Σ unhedged² and Σ hedged² per level, for single stocks and for books of the middle size. */
  hedge: Record<
    'single' | 'book',
    { n: number; unhedged: number; l1: number; l2: number; l3: number; lstar: number }
  >
}

function evaluationDates(days: number, firstDay: number, o: EvaluateOptions): number[] {
  const all: number[] = []
  for (let t = firstDay; t + o.horizon < days; t += o.step) all.push(t)
  if (o.maxDates <= 0 || all.length <= o.maxDates) return all
  return Array.from(
    { length: o.maxDates },
    (_, k) => all[Math.round((k * (all.length - 1)) / Math.max(1, o.maxDates - 1))] as number,
  )
}

export async function evaluateStore(
  store: ModelStore,
  o: EvaluateOptions,
  progress: Progress = silentProgress,
): Promise<EvaluationResult> {
  const started = Date.now()
  const panel = await loadPanel(
    store,
    o.estimators.some((e) => ESTIMATORS[e].vix),
  )
  const specs = o.estimators.map((e) => ESTIMATORS[e])
  const maxWindow = Math.max(...specs.map((s) => s.window))
  const regimes = new Map<EstimatorSpec, RegimeSeries>()
  for (const s of specs) if (s.regime) regimes.set(s, regimeSeries(panel, s))
  const dates = evaluationDates(panel.days, maxWindow - 1, o)
  const records: DateRecord[] = []
  progress.start('evaluate dates', dates.length)
  for (const [k, t] of dates.entries()) {
    const rec = await evaluateDate(store, panel, t, o, specs, regimes)
    if (rec) records.push(rec)
    progress.update(k + 1)
  }
  progress.stop()
  return summarise(store, o, records, (Date.now() - started) / 1000)
}

/** The ETFs (codes) with a return on every day of [t − window + 1, t + horizon]. */
function completeEtfs(panel: EvalPanel, t: number, window: number, horizon: number): number[] {
  const out: number[] = []
  panel.etfRet.forEach((s, e) => {
    for (let d = t - window + 1; d <= t + horizon; d++) if (Number.isNaN(s[d] as number)) return
    out.push(e)
  })
  return out
}

interface Candidate {
  i: number
  legs: NonNullable<ReturnType<typeof stockLegs>>
  /** Σ of the next `horizon` daily returns. */
  realised: number
}

function universe(
  panel: EvalPanel,
  state: DayState,
  t: number,
  etfs: Set<number>,
  horizon: number,
): Candidate[] {
  const out: Candidate[] = []
  for (const i of panel.stocks) {
    const legs = stockLegs(state, i, panel.market)
    if (!legs?.l3.every((l) => etfs.has(l.etf))) continue
    const r = panel.ret[i] as Float64Array
    let realised = 0
    let ok = true
    for (let d = t + 1; d <= t + horizon && ok; d++) {
      ok = !Number.isNaN(r[d] as number)
      realised += r[d] as number
    }
    if (!ok) continue
    const u = panel.res[i] as Float64Array
    let n = 0
    for (let d = Math.max(0, t - 251); d <= t; d++) if (!Number.isNaN(u[d] as number)) n++
    if (n >= MIN_RESIDUAL_DAYS) out.push({ i, legs, realised })
  }
  return out
}

/** `n` distinct members of `pool`, drawn with a stream of its own per (seed, date, size, slot). */
function draw<T>(pool: readonly T[], n: number, rng: Rng): T[] {
  const idx = Array.from(pool.keys())
  const k = Math.min(n, idx.length)
  for (let j = 0; j < k; j++) {
    const r = j + rng.int(0, idx.length - j - 1)
    ;[idx[j], idx[r]] = [idx[r] as number, idx[j] as number]
  }
  return idx.slice(0, k).map((j) => pool[j] as T)
}

/** Per stock, its specific variance under `spec` at t, shrunk toward its sector's median when the spec says so. */
function specificOf(
  panel: EvalPanel,
  pool: readonly Candidate[],
  t: number,
  spec: EstimatorSpec,
): Map<number, number> {
  const opts = { halfLife: spec.specificHalfLife, ...SPECIFIC }
  const from = t - spec.window + 1
  const own = pool.map((c) => specificVariance(panel.res[c.i] as Float64Array, from, t + 1, Number.NaN, opts))
  const out = new Map<number, number>()
  if (!spec.shrink) {
    pool.forEach((c, k) => {
      out.set(c.i, (own[k] as { variance: number }).variance)
    })
    return out
  }
  const bySector = new Map<number, number[]>()
  pool.forEach((c, k) => {
    const o = own[k] as { variance: number; n: number }
    if (o.n < SPECIFIC.fullDays || Number.isNaN(o.variance)) return
    const sec = (c.legs.l2[1] as { etf: number }).etf
    bySector.set(sec, [...(bySector.get(sec) ?? []), o.variance])
  })
  pool.forEach((c) => {
    const prior = median(bySector.get((c.legs.l2[1] as { etf: number }).etf) ?? [])
    out.set(c.i, specificVariance(panel.res[c.i] as Float64Array, from, t + 1, prior, opts).variance)
  })
  return out
}

async function evaluateDate(
  store: ModelStore,
  panel: EvalPanel,
  t: number,
  o: EvaluateOptions,
  specs: EstimatorSpec[],
  regimes: Map<EstimatorSpec, RegimeSeries>,
): Promise<DateRecord | null> {
  const window = Math.max(...specs.map((s) => s.window))
  const etfs = completeEtfs(panel, t, window, o.horizon)
  if (!etfs.includes(panel.market)) return null
  const pos = new Map(etfs.map((e, k) => [e, k]))
  const pool = universe(panel, await dayState(store, t), t, new Set(etfs), o.horizon)
  if (pool.length < 2) return null
  const books: Record<string, Candidate[][]> = {
    '1': draw(pool, o.singles, new Rng(o.seed ^ (t * 7919))).map((c) => [c]),
  }
  // A size larger than the day's eligible stocks has no book that day (its figures then say n = 0).
  for (const size of o.sizes.filter((s) => s <= pool.length))
    books[String(size)] = Array.from({ length: o.booksPerSize }, (_, b) =>
      draw(pool, size, new Rng((o.seed * 1_000_003) ^ (t * 7919) ^ (size * 131) ^ (b * 65_537))),
    )
  const series = etfs.map((e) => panel.etfRet[e] as Float64Array)
  const z: DateRecord['z'] = {}
  const specificCache = new Map<string, Map<number, number>>()
  for (const spec of specs) {
    const reg = regimes.get(spec)
    const lf = reg
      ? regimeMultiplier(reg.factor, t - spec.window + 1, t + 1, spec.regimeHalfLife)
      : spec.vix
        ? vixMultiplier(panel.vix, t - spec.window + 1, t, spec.volHalfLife)
        : 1
    const ls = reg ? regimeMultiplier(reg.specific, t - spec.window + 1, t + 1, spec.regimeHalfLife) : 1
    const { cov } = forecastCovariance(series, t, spec, lf)
    const key = `${spec.specificHalfLife}|${spec.window}|${spec.shrink}`
    let specific = specificCache.get(key)
    if (!specific) {
      specific = specificOf(panel, pool, t, spec)
      specificCache.set(key, specific)
    }
    const zs: Record<string, number[]> = {}
    for (const [size, list] of Object.entries(books))
      zs[size] = list.map((book) => bookZ(book, cov, pos, specific, ls, o.horizon))
    z[spec.name] = zs
  }
  const mid = books[String(o.sizes[Math.floor(o.sizes.length / 2)])] ?? []
  return {
    t,
    z,
    hedge: {
      single: hedgeSums(
        panel,
        pool.map((c) => [c]),
        t,
        o.horizon,
      ),
      book: hedgeSums(panel, mid, t, o.horizon),
    },
  }
}

/** z = realised / √(horizon · (h'Σh + λ_s·Σ w²σ²)) of an equal-weight book. */
function bookZ(
  book: readonly Candidate[],
  cov: Float64Array,
  pos: Map<number, number>,
  specific: Map<number, number>,
  ls: number,
  horizon: number,
): number {
  const n = pos.size
  const w = 1 / book.length
  const h = new Float64Array(n)
  let realised = 0
  let d = 0
  for (const c of book) {
    for (const l of c.legs.l3) h[pos.get(l.etf) as number] += w * l.hr
    realised += w * c.realised
    d += w * w * ((specific.get(c.i) as number) * ls)
  }
  let v = 0
  for (let a = 0; a < n; a++) {
    if (h[a] === 0) continue
    for (let b = 0; b < n; b++) v += h[a] * cov[a * n + b] * h[b]
  }
  const sd = Math.sqrt(horizon * (v + d))
  return sd > 0 ? realised / sd : Number.NaN
}

/** Σ over books of the squared horizon return unhedged and after each level's hedge (frozen at t). */
function hedgeSums(
  panel: EvalPanel,
  books: readonly Candidate[][],
  t: number,
  horizon: number,
): DateRecord['hedge']['single'] {
  const out = { n: 0, unhedged: 0, l1: 0, l2: 0, l3: 0, lstar: 0 }
  const etfSum = (e: number) => {
    let s = 0
    for (let d = t + 1; d <= t + horizon; d++) s += (panel.etfRet[e] as Float64Array)[d] as number
    return s
  }
  const cache = new Map<number, number>()
  const hedged = (legs: Legs) =>
    legs.reduce((a, l) => {
      let s = cache.get(l.etf)
      if (s === undefined) {
        s = etfSum(l.etf)
        cache.set(l.etf, s)
      }
      return a + l.hr * s
    }, 0)
  for (const book of books) {
    const w = 1 / book.length
    const r = book.reduce((a, c) => a + w * c.realised, 0)
    const part = (k: 'l1' | 'l2' | 'l3' | 'lstar') => r - book.reduce((a, c) => a + w * hedged(c.legs[k]), 0)
    out.n++
    out.unhedged += r * r
    for (const k of ['l1', 'l2', 'l3', 'lstar'] as const) out[k] += part(k) ** 2
  }
  return out
}
