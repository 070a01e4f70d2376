/**
 * How often a stock's subsector hedge ratio changes sign from one day to the next, how often that
 * coincides with a large one-day move of a member of the same subsector ETF, and whether the L3
 * hedge of a stock whose subsector hedge just flipped still beats its L2 hedge out of sample
 * (docs/model-quality.md "Hedges that flip"). Reads a built model store; prints a report.
 *
 *   node --import tsx scripts/hedge-flips.ts --store <model store root> [--move 0.10] [--min-hr 0.1]
 */
import { parseArgs } from 'node:util'
import { MARKET_ETF } from '../src/engine/data/etf-registry.ts'
import { ModelStore } from '../src/engine/model-store/reader.ts'

const HORIZON = 21
const FIELDS = [
  'returns_gross',
  'l2_mkt_hr',
  'l2_sec_hr',
  'l3_mkt_hr',
  'l3_sec_hr',
  'l3_sub_hr',
  'sector_etf',
  'subsector_etf',
] as const
type Field = (typeof FIELDS)[number]
type Series = Record<Field, Float64Array>

const fin = (x: number) => Number.isFinite(x)

/** Stock-days on which the subsector ETF is its own (not the sector's) on t − 1 and t, and the ratio on both. */
function subsectorDay(s: Series, t: number): number | null {
  const e = s.subsector_etf[t] as number
  if (!(e >= 0) || e === s.sector_etf[t] || e !== s.subsector_etf[t - 1]) return null
  return fin(s.l3_sub_hr[t] as number) && fin(s.l3_sub_hr[t - 1] as number) ? e : null
}

interface FlipCounts {
  days: number
  flips: number
  material: number
  withMove: number
  materialWithMove: number
  daysWithMove: number
  /** Per subsector ETF: members that flipped on one day (ETF-day key). */
  byEtfDay: Map<string, { flips: number; members: number; move: boolean }>
}

function countFlips(stocks: Series[], days: number, move: number, minHr: number): FlipCounts {
  // Largest one-day |return| of a member of each subsector ETF, per day.
  const biggest = new Map<number, Float64Array>()
  const members = new Map<string, number>()
  for (const s of stocks)
    for (let t = 1; t < days; t++) {
      const e = subsectorDay(s, t)
      if (e === null) continue
      members.set(`${e}|${t}`, (members.get(`${e}|${t}`) ?? 0) + 1)
      const r = Math.abs(s.returns_gross[t] as number)
      if (!fin(r)) continue
      const b = biggest.get(e) ?? new Float64Array(days)
      biggest.set(e, b)
      if (r > (b[t] as number)) b[t] = r
    }
  const c: FlipCounts = {
    days: 0,
    flips: 0,
    material: 0,
    withMove: 0,
    materialWithMove: 0,
    daysWithMove: 0,
    byEtfDay: new Map(),
  }
  for (const s of stocks)
    for (let t = 1; t < days; t++) {
      const e = subsectorDay(s, t)
      if (e === null) continue
      const a = s.l3_sub_hr[t - 1] as number
      const b = s.l3_sub_hr[t] as number
      const moved = ((biggest.get(e)?.[t] as number) ?? 0) >= move
      c.days++
      if (moved) c.daysWithMove++
      if (a * b >= 0) continue
      const key = `${e}|${t}`
      const ev = c.byEtfDay.get(key) ?? { flips: 0, members: members.get(key) ?? 0, move: moved }
      ev.flips++
      c.byEtfDay.set(key, ev)
      c.flips++
      if (moved) c.withMove++
      if (Math.min(Math.abs(a), Math.abs(b)) >= minHr) {
        c.material++
        if (moved) c.materialWithMove++
      }
    }
  return c
}

interface HedgeSums {
  n: number
  unhedged: number
  l2: number
  l3: number
}

/**
 * Σ squared next-21-day return, unhedged and after the L2 and L3 hedges frozen at t (dates every
 * 21 days from day 252), for stock-dates whose subsector hedge flipped in the 21 days up to t and
 * for the others.
 */
function hedgeByFlip(stocks: Series[], etfRet: Float64Array[], market: number, days: number, minHr: number) {
  const groups = { flipped: blank(), steady: blank(), material: blank() }
  const sum = (x: Float64Array, t: number) => {
    let s = 0
    for (let d = t + 1; d <= t + HORIZON; d++) s += x[d] as number
    return s
  }
  for (let t = 252; t + HORIZON < days; t += HORIZON)
    for (const s of stocks) {
      if (subsectorDay(s, t) === null) continue
      const sec = s.sector_etf[t] as number
      const sub = s.subsector_etf[t] as number
      const r = sum(s.returns_gross, t)
      const rm = sum(etfRet[market] as Float64Array, t)
      const rs = sum(etfRet[sec] as Float64Array, t)
      const ru = sum(etfRet[sub] as Float64Array, t)
      const hr = (f: Field) => s[f][t] as number
      const l2 = r - hr('l2_mkt_hr') * rm - hr('l2_sec_hr') * rs
      const l3 = r - hr('l3_mkt_hr') * rm - hr('l3_sec_hr') * rs - hr('l3_sub_hr') * ru
      if (![r, l2, l3].every(fin)) continue
      let flipped = false
      let material = false
      for (let d = t - HORIZON + 1; d <= t; d++) {
        const a = s.l3_sub_hr[d - 1] as number
        const b = s.l3_sub_hr[d] as number
        if (subsectorDay(s, d) === null || a * b >= 0) continue
        flipped = true
        material ||= Math.min(Math.abs(a), Math.abs(b)) >= minHr
      }
      for (const g of [flipped ? groups.flipped : groups.steady, ...(material ? [groups.material] : [])]) {
        g.n++
        g.unhedged += r * r
        g.l2 += l2 * l2
        g.l3 += l3 * l3
      }
    }
  return groups
}

function blank(): HedgeSums {
  return { n: 0, unhedged: 0, l2: 0, l3: 0 }
}

async function load(store: ModelStore) {
  const days = store.calendar.length
  const stocks: Series[] = []
  for (const [i, sym] of store.symbols.entries()) {
    if (sym.asset_type !== 'stock') continue
    const h = await store.history(i, [...FIELDS], 0, days)
    stocks.push(
      Object.fromEntries(FIELDS.map((f) => [f, Float64Array.from(h[f] as ArrayLike<number>)])) as Series,
    )
  }
  // ETF returns by code (store.etfs order).
  const etfRet = await Promise.all(
    store.etfs.map(async (etf) => {
      const i = store.resolve(etf)
      if (i < 0) return new Float64Array(days).fill(Number.NaN)
      const h = await store.history(i, ['returns_gross'], 0, days)
      return Float64Array.from(h.returns_gross as ArrayLike<number>)
    }),
  )
  return { days, stocks, etfRet }
}

const WHAT = {
  flipped: 'flipped in the last 21 days',
  steady: 'steady',
  material: 'flipped with |hr| ≥ min-hr on both days (of the flipped)',
}

const pct = (a: number, b: number) => `${((100 * a) / Math.max(1, b)).toFixed(2)} %`

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      store: { type: 'string' },
      move: { type: 'string', default: '0.10' },
      'min-hr': { type: 'string', default: '0.1' },
    },
  })
  if (!values.store) throw new Error('--store <model store root> is required')
  const move = Number(values.move)
  const minHr = Number(values['min-hr'])
  const store = await ModelStore.open(values.store)
  try {
    const { days, stocks, etfRet } = await load(store)
    const c = countFlips(stocks, days, move, minHr)
    const events = [...c.byEtfDay.values()].filter((e) => e.members >= 2 && e.flips >= e.members / 2)
    const lines = [
      `${values.store}: ${stocks.length} stocks, ${days} days`,
      `stock-days with an own subsector ETF on both days: ${c.days}`,
      `subsector hedge ratio changes sign: ${c.flips} (${pct(c.flips, c.days)} of stock-days); with |hr| ≥ ${minHr} on both days: ${c.material} (${pct(c.material, c.days)})`,
      `a member of the same subsector ETF moved ≥ ${100 * move} % that day: on ${pct(c.daysWithMove, c.days)} of all stock-days, on ${pct(c.withMove, c.flips)} of the flips, ${pct(c.materialWithMove, c.material)} of the material flips`,
      `ETF-days on which at least half of an ETF's members (≥ 2) flipped: ${events.length}, of which with a member move ≥ ${100 * move} %: ${events.filter((e) => e.move).length}`,
    ]
    const g = hedgeByFlip(stocks, etfRet, store.etfs.indexOf(MARKET_ETF), days, minHr)
    for (const [name, s] of Object.entries(g))
      lines.push(
        `hedged ÷ unhedged variance of the next ${HORIZON} days, subsector hedge ${WHAT[name as keyof typeof WHAT]}: ` +
          `L2 ${(s.l2 / s.unhedged).toFixed(3)}, L3 ${(s.l3 / s.unhedged).toFixed(3)} (${s.n} stock-dates)`,
      )
    const all = g.flipped.unhedged + g.steady.unhedged
    lines.push(
      `all stock-dates: L3 ${((g.flipped.l3 + g.steady.l3) / all).toFixed(4)}; L2 instead of L3 for 21 days after a flip: ` +
        `${((g.flipped.l2 + g.steady.l3) / all).toFixed(4)}`,
    )
    process.stdout.write(`${lines.join('\n')}\n`)
  } finally {
    await store.close()
  }
}

await main()
