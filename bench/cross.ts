/**
 * Cross-sectional products (src/engine/model/cross) on a synthetic panel of 5,240 days × 3,400 symbols
 * (3,340 stocks + 60 ETFs; 40% of stocks list mid-sample, model outputs start 126 days after
 * listing, 0.1% scattered null days). Prints medians (wall and process CPU time, the latter less
 * disturbed by other work on a shared machine) and the ratio to a straightforward baseline
 * measured in the same run: comparator sorts, no shared work, direct windows.
 * Run: node --import tsx bench/cross.ts [runs]   (BENCH_DAYS, BENCH_SYMBOLS override the shape)
 */
import {
  activeMember,
  computeUniverses,
  industryPanelDay,
  orderBy,
  RANKING_METRICS,
  RANKING_WINDOWS,
  type RankingInput,
  rankAllMetrics,
  rankAllMetricsDays,
  rankDay,
  residualReversion,
  WINDOW_DAYS,
} from '../src/engine/model/cross/index.ts'
import type { Panel } from '../src/engine/model/panel.ts'

const DAYS = Number(process.env.BENCH_DAYS ?? 5240)
const SYMBOLS = Number(process.env.BENCH_SYMBOLS ?? 3400)
const ETFS = 60
const RUNS = Number(process.argv[2] ?? 5)

let seed = 12345
function rand(): number {
  seed = (seed + 0x6d2b79f5) | 0
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed)
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296
}

const listing = Array.from({ length: SYMBOLS }, () => (rand() < 0.4 ? Math.floor(rand() * DAYS * 0.7) : 0))
const isStock = Uint8Array.from({ length: SYMBOLS }, (_, i) => (i < SYMBOLS - ETFS ? 1 : 0))

/** A panel of draws from `listing + lag` on, with scattered nulls. */
function panel(lag: number, draw: () => number): Panel {
  return listing.map((from) => {
    const a = new Float64Array(DAYS).fill(Number.NaN)
    for (let t = from + lag; t < DAYS; t++) if (rand() >= 0.001) a[t] = draw()
    return a
  })
}
const ret = () => (rand() - 0.5) * 0.05
const groups = (count: number, base: number) =>
  listing.map(() => new Int16Array(DAYS).fill(base + Math.floor(rand() * count)))

const t0 = performance.now()
const calendar = Int32Array.from({ length: DAYS }, (_, t) => 13_149 + Math.floor((t * 7) / 5))
const close = panel(0, () => 5 + rand() * 200)
const returns = panel(0, ret)
const marketCap = panel(0, () => Math.exp(18 + rand() * 8))
const volume = panel(0, () => Math.floor(rand() * 5e6))
const rankingBase = {
  returns,
  marketCap,
  l2Rr: panel(126, ret),
  l3Rr: panel(126, ret),
  l1MktEr: panel(126, rand),
  l2MktEr: panel(126, rand),
  l2SecEr: panel(126, rand),
  l3ResEr: panel(126, rand),
  sectorEtf: groups(11, SYMBOLS - ETFS),
  subsectorEtf: groups(49, SYMBOLS - ETFS + 11),
}
const betas = { l1MktBeta: panel(126, ret), l2SecBeta: panel(126, ret), l3SubBeta: panel(126, ret) }
const industry = groups(150, 0)
console.log(
  `generated ${SYMBOLS} symbols × ${DAYS} days in ${((performance.now() - t0) / 1000).toFixed(1)} s`,
)

interface Timing {
  wall: number
  cpu: number
}
function measure(fn: () => unknown, runs = RUNS, per = 1): Timing {
  const wall: number[] = []
  const cpu: number[] = []
  for (let r = 0; r < runs; r++) {
    const c = process.cpuUsage()
    const s = performance.now()
    fn()
    wall.push((performance.now() - s) / per)
    const u = process.cpuUsage(c)
    cpu.push((u.user + u.system) / 1000 / per)
  }
  const mid = (xs: number[]) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)]
  return { wall: mid(wall), cpu: mid(cpu) }
}
const ms = (v: number) => (v < 10 ? v.toFixed(2) : v.toFixed(0)).padStart(7)
console.log(`${''.padEnd(40)}    wall     cpu   baseline wall/cpu   ratio (cpu)`)
function row(name: string, ours: Timing, base?: Timing, note = ''): void {
  const b = base ? `   ${ms(base.wall)} ${ms(base.cpu)}   ×${(base.cpu / ours.cpu).toFixed(1)}` : ''
  console.log(`${name.padEnd(40)} ${ms(ours.wall)} ${ms(ours.cpu)}${b}${note ? `   ${note}` : ''}`)
}

// ── universes ────────────────────────────────────────────────────────────────────────────────
const uniInput = { calendar, isStock, close, returns, marketCap, volume }
let u = computeUniverses(uniInput)
row(
  'computeUniverses, all days (ms)',
  measure(() => (u = computeUniverses(uniInput)), 3),
)
const active = activeMember(u)
const x: RankingInput = { ...rankingBase, active }
/** Month-end-like days, ascending, as the build would request them. */
const days = Array.from({ length: 20 }, (_, k) => DAYS - 1 - (19 - k) * 21)
let cohort = 0
for (let i = 0; i < SYMBOLS; i++) if (active(i, days[0])) cohort++

// ── rankings ─────────────────────────────────────────────────────────────────────────────────
function direct(metric: string, w: number, i: number, t: number): number {
  if (metric === 'mkt_cap') return x.marketCap[i][t]
  if (t < w - 1) return Number.NaN
  const er = metric.startsWith('er_')
  let acc = er ? 0 : 1
  for (let d = t - w + 1; d <= t; d++) {
    const v =
      metric === 'gross_return'
        ? x.returns[i][d]
        : metric === 'sector_residual'
          ? x.l2Rr[i][d]
          : metric === 'subsector_residual'
            ? x.l3Rr[i][d]
            : metric === 'er_l1'
              ? x.l1MktEr[i][d]
              : metric === 'er_l2'
                ? x.l2MktEr[i][d] + x.l2SecEr[i][d]
                : 1 - x.l3ResEr[i][d]
    if (Number.isNaN(v)) return Number.NaN
    acc = er ? acc + v : acc * (1 + v)
  }
  return er ? acc / w : acc - 1
}
/** The straightforward ranking: per metric × window, direct values, comparator sort, grouping. */
function baselineRankAll(t: number): number {
  let checksum = 0
  for (const metric of RANKING_METRICS) {
    for (const window of RANKING_WINDOWS) {
      const members: number[] = []
      const v = new Float64Array(SYMBOLS)
      for (let i = 0; i < SYMBOLS; i++) {
        if (!x.active(i, t)) continue
        v[i] = direct(metric, WINDOW_DAYS[window], i, t)
        if (!Number.isNaN(v[i])) members.push(i)
      }
      members.sort((a, b) => v[b] - v[a] || a - b)
      for (const etf of [x.sectorEtf, x.subsectorEtf]) {
        const seen = new Map<number, number>()
        for (const i of members) seen.set(etf[i][t], (seen.get(etf[i][t]) ?? 0) + 1)
        checksum += seen.size
      }
      checksum += members.length
    }
  }
  return checksum
}
const perDay = (fn: (t: number) => unknown, runs = RUNS) =>
  measure(
    () =>
      days.forEach((t) => {
        fn(t)
      }),
    runs,
    days.length,
  )
rankAllMetrics(x, days[0])
const rankBase = perDay(baselineRankAll, 1)
row(
  'rankAllMetrics, per day',
  perDay((t) => rankAllMetrics(x, t)),
  rankBase,
  `(universe ${cohort})`,
)
const batch = measure(() => [...rankAllMetricsDays(x, days)], RUNS, days.length)
row('rankAllMetricsDays (20 days), per day', batch, rankBase)
const singles = perDay((t) => {
  for (const m of RANKING_METRICS) for (const w of RANKING_WINDOWS) rankDay(x, t, m, w)
}, 1)
row('28 × rankDay (ad hoc API), per day', singles, rankBase)

// Fresh keys for every sort: re-sorting one array lets the branch predictor learn it.
const keySets = Array.from({ length: 50 }, () => Float64Array.from({ length: 3000 }, ret))
const members = Int32Array.from(keySets[0].keys())
const sortOurs = measure(
  () => {
    for (const keys of keySets) orderBy(keys, members, members.length, true)
  },
  RUNS,
  keySets.length,
)
const sortBase = measure(
  () => {
    for (const keys of keySets) Int32Array.from(members).sort((a, b) => keys[b] - keys[a] || a - b)
  },
  RUNS,
  keySets.length,
)
row('orderBy, 3,000 keys', sortOurs, sortBase, '(baseline: Int32Array comparator sort)')

// ── industry panel ───────────────────────────────────────────────────────────────────────────
const panelInput = { industry, nIndustries: 150, marketCap, ...betas, active }
function baselinePanel(t: number): number {
  const by = new Map<number, { w: number; b: number }[]>()
  for (let i = 0; i < SYMBOLS; i++) {
    const b = betas.l1MktBeta[i][t]
    const cap = marketCap[i][t]
    if (!active(i, t) || Number.isNaN(b) || !Number.isFinite(cap)) continue
    const list = by.get(industry[i][t]) ?? []
    list.push({ w: Math.log(1 + cap), b })
    by.set(industry[i][t], list)
  }
  let s = 0
  for (const m of by.values()) {
    const sw = m.reduce((a, p) => a + p.w, 0)
    const mean = m.reduce((a, p) => a + p.w * p.b, 0) / sw
    s += m.reduce((a, p) => a + p.w * (p.b - mean) ** 2, 0) / sw
  }
  return s
}
row(
  'industryPanelDay (one level), per day',
  perDay((t) => industryPanelDay(panelInput, t, 'market')),
  perDay(baselinePanel),
)

// ── residual reversion ───────────────────────────────────────────────────────────────────────
const l3 = rankingBase.l3Rr
const sample = 200
function baselineReversion(series: Float64Array): Float64Array {
  const out = new Float64Array(series.length).fill(Number.NaN)
  for (let t = 4; t < series.length; t++) {
    let n = 0
    let sum = 0
    for (let d = Math.max(0, t - 59); d <= t; d++) {
      if (Number.isNaN(series[d])) continue
      sum += series[d]
      n++
    }
    if (n < 30) continue
    const mean = sum / n
    let ss = 0
    for (let d = Math.max(0, t - 59); d <= t; d++) if (!Number.isNaN(series[d])) ss += (series[d] - mean) ** 2
    const s5 = series[t] + series[t - 1] + series[t - 2] + series[t - 3] + series[t - 4]
    out[t] = s5 / Math.sqrt((ss / (n - 1)) * 5)
  }
  return out
}
const scaled = (t: Timing): Timing => ({ wall: (t.wall * SYMBOLS) / sample, cpu: (t.cpu * SYMBOLS) / sample })
row(
  'residualReversion, all days',
  measure(() => residualReversion(l3), 3),
  scaled(measure(() => l3.slice(0, sample).map(baselineReversion), 3)),
  `(baseline: direct 60-day windows on ${sample} symbols, scaled)`,
)
