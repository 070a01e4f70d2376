import {
  BLOCK_SHIFT,
  COHORTS,
  defaultMember,
  RANKING_METRICS,
  RANKING_WINDOWS,
  type RankDay,
  type RankingInput,
  type RankingMetric,
  type RankingWindow,
  rankAllMetrics,
  type Universes,
  WINDOW_DAYS,
} from '../../engine/model/cross/index.ts'
import { RANKING_COHORT_COLUMNS, STORE_FILES } from '../../engine/model-store/layout.ts'
import type { ModelStore, StoreField } from '../../engine/model-store/reader.ts'
import { universeBasisOf } from '../models.ts'

/**
 * The 28 metric × window rankings (docs/methodology.md §12) of any trading day of a store.
 *
 * - data_as_of: the build's precomputed [ranking, symbol] arrays (rankings/value and
 *   rankings/cohort), read once per store (storedRankings).
 * - Any other day t: the build's kernel (`rankAllMetrics`) on exactly the panels it reads — the
 *   seven per-stock series over the days ending at t that the longest window needs (one bulk
 *   read per field for all symbols), and at t alone the market cap, the sector and subsector ETF
 *   codes and the default-universe membership. The loaded days start on a 16-day block boundary
 *   of the calendar so the window sums add the same days in the same order as on the whole panel:
 *   the numbers are bit for bit those of `rankAllMetrics` on the full store at t (a test checks
 *   it at data_as_of against the stored arrays).
 * - Computed days are kept per store in a small LRU (DAY_CACHE days); concurrent requests for one
 *   day share one computation. RankDay arrays are shared between callers: never mutate them.
 */

/** Days kept per store (≈1.7 MB each for 3,000 stocks). */
const DAY_CACHE = 8

/** The per-stock series the window metrics read (ranking-values.ts), in any order. */
const SERIES = {
  returns: 'returns_gross',
  l2Rr: 'l2_rr',
  l3Rr: 'l3_rr',
  l1MktEr: 'l1_mkt_er',
  l2MktEr: 'l2_mkt_er',
  l2SecEr: 'l2_sec_er',
  l3ResEr: 'l3_res_er',
} as const satisfies Record<string, StoreField>

const LONGEST = WINDOW_DAYS[RANKING_WINDOWS[RANKING_WINDOWS.length - 1]]

/** First day loaded for day t: the start of the block holding the longest window's first day. */
function windowStart(t: number): number {
  return Math.max(0, ((t - LONGEST + 1) >> BLOCK_SHIFT) << BLOCK_SHIFT)
}

/**
 * `n` series of days [from, from + len), in one buffer, and the targets `readInto` fills: it
 * writes day d of symbol i at targets[i][d] (absolute day offsets), so target i is the view that
 * starts `from` elements before series i. The buffer leads with `from` spare elements so the
 * first target exists; a target's days before `from` overlap the previous series but are never
 * written (readInto writes days [from, to) only).
 */
function windowPanel(
  n: number,
  from: number,
  len: number,
  scratch: Scratch,
): { series: Float64Array[]; targets: Float64Array[] } {
  const buf = scratch.take(Float64Array, from + n * len)
  const series: Float64Array[] = []
  const targets: Float64Array[] = []
  for (let i = 0; i < n; i++) {
    series.push(buf.subarray(from + i * len, from + (i + 1) * len))
    targets.push(buf.subarray(i * len, from + (i + 1) * len))
  }
  return { series, targets }
}

/**
 * Buffers of the panels a computation loads (about 60 MB for 3,000 stocks), kept between
 * computations: fresh memory costs a page fault per 4 KiB on first touch, which on a VM was most
 * of a first call's time. A computation takes buffers and gives them all back when it is done;
 * concurrent computations simply allocate more, and at most POOLED buffers are kept.
 */
class Scratch {
  private static readonly pool: ArrayBuffer[] = []
  private static readonly POOLED = 32
  private readonly taken: ArrayBuffer[] = []

  take<A extends DayArray>(
    Ctor: { new (b: ArrayBuffer, o: number, n: number): A; BYTES_PER_ELEMENT: number },
    count: number,
  ): A {
    const bytes = count * Ctor.BYTES_PER_ELEMENT
    const pool = Scratch.pool
    let k = -1
    for (let j = 0; j < pool.length; j++) {
      if (pool[j].byteLength >= bytes && (k < 0 || pool[j].byteLength < pool[k].byteLength)) k = j
    }
    const b = k >= 0 ? (pool.splice(k, 1)[0] as ArrayBuffer) : new ArrayBuffer(bytes)
    this.taken.push(b)
    return new Ctor(b, 0, count)
  }

  release(): void {
    for (const b of this.taken.splice(0)) if (Scratch.pool.length < Scratch.POOLED) Scratch.pool.push(b)
  }
}

type DayArray = Float64Array | Int16Array | Uint8Array

/** Per-symbol series of `len` days that hold `row[i]` at day `at` and `fill` (null) elsewhere. */
function onlyAt<A extends DayArray>(row: A, len: number, at: number, fill: number, scratch: Scratch): A[] {
  const Ctor = row.constructor as unknown as {
    new (b: ArrayBuffer, o: number, n: number): A
    BYTES_PER_ELEMENT: number
  }
  const buf = scratch.take(Ctor, row.length * len).fill(fill) as A
  const out: A[] = []
  for (let i = 0; i < row.length; i++) {
    buf[i * len + at] = row[i]
    out.push(buf.subarray(i * len, (i + 1) * len) as A)
  }
  return out
}

/**
 * The kernel's input for day t, indexed from `windowStart(t)`: returns the input and t's index
 * in it. Membership is the build's own rule (`defaultMember` of the store's universe basis) on
 * the stored ranks and validity at t.
 */
export async function rankingInputAt(
  store: ModelStore,
  t: number,
  scratch: Scratch = new Scratch(),
): Promise<{ input: RankingInput; at: number }> {
  const n = store.symbols.length
  const from = windowStart(t)
  const len = t - from + 1
  const at = t - from
  const panels = {} as Record<keyof typeof SERIES, Float64Array[]>
  const windows = Object.entries(SERIES).map(([key, field]) => {
    const p = windowPanel(n, from, len, scratch)
    panels[key as keyof typeof SERIES] = p.series
    return { path: `fields/${field}`, targets: p.targets }
  })
  // One read for all: the fields the store derives share their inputs' reads.
  const reads = store.readManyInto(
    windows.map((w) => w.path),
    0,
    from,
    t + 1,
    windows.map((w) => w.targets),
  )
  const rows = Promise.all([
    store.crossSection('market_cap', t),
    store.crossSection('sector_etf', t),
    store.crossSection('subsector_etf', t),
    store.readRow('universe/mc_rank', t),
    store.readRow('universe/dv_rank', t),
    store.readRow('universe/valid', t),
  ])
  await reads
  const [cap, sec, sub, mc, dv, valid] = await rows
  const u: Universes = {
    mcRank: onlyAt(mc as Int16Array, len, at, 0, scratch),
    dvRank: onlyAt(dv as Int16Array, len, at, 0, scratch),
    valid: onlyAt(valid as Uint8Array, len, at, 0, scratch),
    // Not read by the membership rule (the ranks already are the mask in force each day).
    maskAsOf: new Int32Array(0),
  }
  const input: RankingInput = {
    ...panels,
    marketCap: onlyAt(cap as Float64Array, len, at, Number.NaN, scratch),
    // int8 or int16 in the store (codeDType): the kernel takes int16.
    sectorEtf: onlyAt(Int16Array.from(sec), len, at, -1, scratch),
    subsectorEtf: onlyAt(Int16Array.from(sub), len, at, -1, scratch),
    active: defaultMember(u, universeBasisOf(store).universe_basis),
  }
  return { input, at }
}

/** All 28 rankings of day t computed from the store (never the precomputed arrays). */
export async function computeRankingsAt(store: ModelStore, t: number): Promise<RankDay[]> {
  const scratch = new Scratch()
  try {
    const { input, at } = await rankingInputAt(store, t, scratch)
    // The rankings own their arrays: nothing of the input outlives this call.
    return rankAllMetrics(input, at)
  } finally {
    scratch.release()
  }
}

/** One metric × window of data_as_of from the build's precomputed arrays. */
async function storedRanking(
  store: ModelStore,
  metric: RankingMetric,
  window: RankingWindow,
): Promise<RankDay> {
  const all = await storedRankings(store)
  const day = all.get(`${metric}_${window}`)
  if (!day) throw new Error(`the build's rankings have no ${metric}_${window}`)
  return day
}

const stored = new WeakMap<ModelStore, Promise<Map<string, RankDay>>>()

/**
 * Every ranking of data_as_of from the build's two [ranking, symbol] arrays
 * (STORE_FILES.rankingValues and rankingCohorts), read once per store, by `<metric>_<window>`.
 */
function storedRankings(store: ModelStore): Promise<Map<string, RankDay>> {
  let p = stored.get(store)
  if (!p) {
    p = readStoredRankings(store)
    stored.set(store, p)
    p.catch(() => stored.delete(store))
  }
  return p
}

async function readStoredRankings(store: ModelStore): Promise<Map<string, RankDay>> {
  const n = store.symbols.length
  const rows = (path: string): string[] => {
    const names = store.arrayAttributes(path)?.rows
    if (!Array.isArray(names)) throw new Error(`${path} has no rows attribute`)
    return names.map(String)
  }
  const keys = rows(STORE_FILES.rankingValues)
  const C = RANKING_COHORT_COLUMNS.length
  // Per symbol, as the store keeps them (each symbol's rows are contiguous in the chunk).
  const values = Array.from({ length: n }, () => new Float64Array(keys.length))
  const cohorts = Array.from({ length: n }, () => new Int16Array(keys.length * C))
  if (rows(STORE_FILES.rankingCohorts).length !== keys.length * C)
    throw new Error(`${STORE_FILES.rankingCohorts} does not hold ${C} rows per ranking`)
  await Promise.all([
    store.readInto(STORE_FILES.rankingValues, 0, 0, keys.length, values),
    store.readInto(STORE_FILES.rankingCohorts, 0, 0, keys.length * C, cohorts),
  ])
  const out = new Map<string, RankDay>()
  keys.forEach((key, q) => {
    const cut = key.lastIndexOf('_')
    const cols = RANKING_COHORT_COLUMNS.map((_, c) => Int16Array.from(cohorts, (s) => s[q * C + c]))
    const by = (name: 'ordinal' | 'size') =>
      Object.fromEntries(
        COHORTS.map((h) => [h, cols[RANKING_COHORT_COLUMNS.indexOf(`${name}_${h}`)]]),
      ) as Record<(typeof COHORTS)[number], Int16Array>
    out.set(key, {
      metric: key.slice(0, cut) as RankingMetric,
      window: key.slice(cut + 1) as RankingWindow,
      values: Float64Array.from(values, (s) => s[q]),
      ordinal: by('ordinal'),
      cohortSize: by('size'),
    })
  })
  return out
}

const days = new WeakMap<ModelStore, Map<number, Promise<RankDay[]>>>()

/** The computed rankings of day t (t ≠ data_as_of), through the per-store LRU. */
function cachedDay(store: ModelStore, t: number): Promise<RankDay[]> {
  let lru = days.get(store)
  if (!lru) {
    lru = new Map()
    days.set(store, lru)
  }
  const hit = lru.get(t)
  if (hit) {
    // Map order is insertion order: re-inserting makes the first key the least recently used.
    lru.delete(t)
    lru.set(t, hit)
    return hit
  }
  const computing = computeRankingsAt(store, t)
  lru.set(t, computing)
  const cache = lru
  computing.catch(() => {
    if (cache.get(t) === computing) cache.delete(t)
  })
  // Not empty (size > DAY_CACHE): the first key, the oldest, exists.
  while (lru.size > DAY_CACHE) lru.delete(lru.keys().next().value as number)
  return computing
}

/** The 28 rankings of trading day t (calendar index), in RANKING_METRICS × RANKING_WINDOWS order. */
export async function rankingsAt(store: ModelStore, t: number): Promise<RankDay[]> {
  if (!Number.isInteger(t) || t < 0 || t >= store.calendar.length) {
    throw new RangeError(`day ${t} is not in 0..${store.calendar.length - 1}`)
  }
  if (t === store.calendar.length - 1) {
    return Promise.all(RANKING_METRICS.flatMap((m) => RANKING_WINDOWS.map((w) => storedRanking(store, m, w))))
  }
  return cachedDay(store, t)
}

/** One metric × window of day t: at data_as_of only its 7 stored arrays are read. */
export async function rankingAt(
  store: ModelStore,
  t: number,
  metric: RankingMetric,
  window: RankingWindow,
): Promise<RankDay> {
  if (t === store.calendar.length - 1) return storedRanking(store, metric, window)
  const all = await rankingsAt(store, t)
  return all[RANKING_METRICS.indexOf(metric) * RANKING_WINDOWS.length + RANKING_WINDOWS.indexOf(window)]
}
