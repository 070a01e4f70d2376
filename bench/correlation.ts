/**
 * Macro/style correlation kernel (src/engine/model/correlation.ts) at its budgets: one stock
 * against 18 factors over 252 paired days (≤ 3 ms) and a batch of 50 stocks × 18 (≤ 40 ms), on
 * 5,240-day series with late factor inceptions and 1% scattered nulls (stocks and a third of the
 * factors; the rest pair on the stock's own days, so `correlations` can share the stock's
 * Spearman ranks between them). Prints medians (wall and
 * process CPU) and the ratio to a straightforward baseline measured in the same run: filtered
 * JS arrays, textbook Pearson, ranks by a comparator sort, fresh memory per call.
 * Run: node --import tsx bench/correlation.ts [runs]
 */
import {
  type CorrelationMethod,
  correlations,
  createCorrelationScratch,
  MIN_PAIRS,
} from '../src/engine/model/correlation.ts'
import { Rng } from '../src/engine/model/random.ts'

const DAYS = 5240
const FACTORS = 18
const STOCKS = 50
const WINDOW = 252
const RUNS = Number(process.argv[2] ?? 101)

const rng = new Rng(20_260_514)
/** Returns loading `beta` on a common market, from day `from` on, with scattered nulls. */
const series = (from: number, beta: number, noise: number, nullRate: number) =>
  Float64Array.from({ length: DAYS }, (_, t) =>
    t < from || rng.chance(nullRate) ? Number.NaN : beta * market[t] + noise * rng.normal(),
  )
const market = Float64Array.from({ length: DAYS }, () => 0.01 * rng.normal())
// Every third factor starts late (as BITO or MTUM do); two in three trade every day after
// inception, one in three has 1% null days like the stocks (which list at random dates).
const factors = Array.from({ length: FACTORS }, (_, k) =>
  series(k % 3 === 0 ? rng.int(0, DAYS - 400) : 0, rng.normal(), 0.01, k % 3 === 1 ? 0.01 : 0),
)
const stocks = Array.from({ length: STOCKS }, () => series(rng.int(0, 2000), rng.normal(), 0.02, 0.01))
const END = DAYS - 1

// ── baseline ──────────────────────────────────────────────────────────────────────────────────
function basePearson(xs: number[], ys: number[]): number {
  const n = xs.length
  const mx = xs.reduce((s, v) => s + v, 0) / n
  const my = ys.reduce((s, v) => s + v, 0) / n
  let sxy = 0
  let sxx = 0
  let syy = 0
  for (let i = 0; i < n; i++) {
    sxy += (xs[i] - mx) * (ys[i] - my)
    sxx += (xs[i] - mx) ** 2
    syy += (ys[i] - my) ** 2
  }
  return sxy / Math.sqrt(sxx * syy)
}
function baseRanks(xs: number[]): number[] {
  const order = xs.map((_, i) => i).sort((a, b) => xs[a] - xs[b])
  const ranks = new Array<number>(xs.length)
  for (let s = 0; s < order.length; ) {
    let e = s + 1
    while (e < order.length && xs[order[e]] === xs[order[s]]) e++
    for (let j = s; j < e; j++) ranks[order[j]] = (s + 1 + e) / 2
    s = e
  }
  return ranks
}
function baseline(x: Float64Array, y: Float64Array, method: CorrelationMethod): number | null {
  const xs: number[] = []
  const ys: number[] = []
  for (let t = END; t >= 0 && xs.length < WINDOW; t--)
    if (!Number.isNaN(x[t]) && !Number.isNaN(y[t])) {
      xs.push(x[t])
      ys.push(y[t])
    }
  if (xs.length < MIN_PAIRS) return null
  return method === 'pearson' ? basePearson(xs, ys) : basePearson(baseRanks(xs), baseRanks(ys))
}

// ── measurement ───────────────────────────────────────────────────────────────────────────────
const scratch = createCorrelationScratch(WINDOW)
let sink = 0
function ours(method: CorrelationMethod, count: number): void {
  for (let s = 0; s < count; s++)
    for (const r of correlations(stocks[s], factors, END, { windowDays: WINDOW, method, scratch }))
      sink += r.value ?? 0
}
function base(method: CorrelationMethod, count: number): void {
  for (let s = 0; s < count; s++) for (const f of factors) sink += baseline(stocks[s], f, method) ?? 0
}

/** Median wall and CPU milliseconds of `RUNS` calls. */
function median(fn: () => void): [wall: number, cpu: number] {
  const runs = Array.from({ length: RUNS }, () => {
    const c = process.cpuUsage()
    const w = performance.now()
    fn()
    const u = process.cpuUsage(c)
    return [performance.now() - w, (u.user + u.system) / 1000]
  })
  const mid = (k: number) => runs.map((r) => r[k]).sort((a, b) => a - b)[RUNS >> 1]
  return [mid(0), mid(1)]
}

const f3 = (v: number) => v.toFixed(3).padStart(8)
console.log(`${''.padEnd(34)}   wall ms   cpu ms   base wall   ratio   budget`)
for (const [label, count, budget] of [
  ['1 stock × 18 factors', 1, 3],
  [`${STOCKS} stocks × 18 factors`, STOCKS, 40],
] as const) {
  for (const method of ['pearson', 'spearman'] as const) {
    for (let i = 0; i < 20; i++) ours(method, count) // warm-up
    const [wall, cpu] = median(() => ours(method, count))
    const [baseWall] = median(() => base(method, count))
    const verdict = wall <= budget ? `≤ ${budget} ok` : `> ${budget} OVER`
    console.log(
      `${`${label}, ${method}`.padEnd(34)} ${f3(wall)} ${f3(cpu)}  ${f3(baseWall)}   ×${(baseWall / wall).toFixed(1).padEnd(4)}  ${verdict}`,
    )
  }
}
if (Number.isNaN(sink)) console.log('(checksum NaN)')
