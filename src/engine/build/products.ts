import { isoFromDay } from '../../platform/dates.ts'
import { type Progress, silentProgress } from '../../platform/progress.ts'
import { columnsOf } from '../model/columns.ts'
import {
  type Cohort,
  type DefaultUniverseBasis,
  decileScratch,
  defaultMember,
  rankAllMetrics,
  reversionDeciles,
  WINDOW_DAYS,
} from '../model/cross/index.ts'
import { chunkSymbolsFor, RANKING_COHORT_COLUMNS, STORE_FILES } from '../model-store/layout.ts'
import type { StoreBuildWriter } from '../model-store/writer.ts'
import { type Array2DSpec, writeArray1D, writeArray2D } from '../zarr/index.ts'
import { REVERSION_Z } from './fields.ts'
import type { IncrementalPlan } from './incremental.ts'
import { startIndustryPanel } from './industry-panel.ts'
import type { BuildInputs } from './inputs.ts'
import {
  type BuildReader,
  dayRanges,
  openBuildReader,
  readAhead,
  readDays,
  readFieldsDays,
} from './read-back.ts'
import { universesFrom } from './tail.ts'
import { appendOf, writer2D } from './write-2d.ts'

/** A [day, symbol] array in the store's symbol chunks (chunkSymbolsFor). */
const spec = (dtype: 'int16' | 'uint8' | 'int8' | 'float64', days: number, symbols: number) => ({
  dtype,
  days,
  symbols,
  chunkSymbols: chunkSymbolsFor(symbols),
})

/**
 * Default-universe membership of (symbol, day) (cross/universe.ts defaultMember), and the bits
 * it reads (on a SharedArrayBuffer: the products' worker thread reads them too).
 */
export type Membership = ((i: number, t: number) => boolean) & { readonly bits: Uint8Array[] }

const membership = (bits: Uint8Array[]): Membership =>
  Object.assign((i: number, t: number) => bits[i][t] === 1, { bits })

/**
 * The universes of docs/methodology.md §11, written under universe/ before the engine runs: they
 * need only the inputs, and once written the build no longer holds the volume panel (the only
 * other reader of it). Returns the default universe's membership, over `basis`.
 */
export async function writeUniverses(
  w: StoreBuildWriter,
  x: BuildInputs,
  basis: DefaultUniverseBasis,
  inc: IncrementalPlan | null = null,
): Promise<Membership> {
  const T = x.calendar.length
  const N = x.symbols.length
  const write2D = writer2D(w.dir, appendOf(inc))
  const u = universesFrom(x, inc ? inc.from : 0)
  await write2D('universe/mc_rank', u.mcRank, spec('int16', T, N))
  await write2D('universe/dv_rank', u.dvRank, spec('int16', T, N))
  await write2D('universe/valid', u.valid, spec('uint8', T, N))
  await writeArray1D(w.dir, 'universe/mask_as_of', u.maskAsOf, {
    attributes: { units: 'days since 1970-01-01; -1 = no month-end yet' },
  })
  // One byte per stock-day instead of the ranks and validity it is read from (which are dropped).
  const member = defaultMember(u, basis.universe_basis)
  const start = inc ? inc.from : 0
  const bits = columnsOf(Uint8Array, N, T, true, start)
  for (let i = 0; i < N; i++) for (let t = start; t < T; t++) bits[i][t] = member(i, t) ? 1 : 0
  return membership(bits)
}

/**
 * The cross-sectional products of docs/methodology.md §11–§12 besides the universes
 * (writeUniverses), computed from the finished per-stock fields and written under products/ and
 * rankings/, over the default universe `active` of `basis` (defaultUniverseBasis of the same
 * inputs). The reversion z was written with the fields (fields.ts); what needs whole
 * cross-sections reads the fields back from the new store one range of days at a time
 * (read-back.ts), so no per-stock panel is held whole.
 */
export async function writeProducts(
  w: StoreBuildWriter,
  x: BuildInputs,
  active: Membership,
  basis: DefaultUniverseBasis,
  progress: Progress = silentProgress,
  inc: IncrementalPlan | null = null,
  /** Compute the industry panel on a worker thread of its own (a full build of a large market). */
  panelThread = false,
): Promise<{ universeSize: number; names: string[] }> {
  const T = x.calendar.length
  const N = x.symbols.length
  const dir = w.dir
  const write2D = writer2D(dir, appendOf(inc))
  // An incremental build computes only the new days: older chunks are linked, and the chunk
  // holding the first new day keeps the earlier days' bytes.
  const start = inc ? inc.from : 0
  // Three steps: reversion deciles, rankings, industry panel (beside them on its own thread).
  progress.start('build: cross-sections (steps)', 3)
  const reader = await openBuildReader(dir, x)
  const panel = startIndustryPanel(
    {
      dir,
      append: appendOf(inc),
      days: T,
      industry: x.industry,
      nIndustries: x.industries.length,
      isStock: x.isStock,
      etfSymbols: x.etfSymbols,
      bits: active.bits,
      weightBasis: basis.weight_basis,
    },
    panelThread,
  )
  try {
    // Residual reversion: z was written per block; deciles and quality quintiles for every day.
    const { decile, quality } = await reversionBuckets(reader, x, active, start)
    // The panel lists the build's arrays first: none is created before it has.
    await panel.opened
    await write2D('products/reversion_decile', decile, spec('int8', T, N))
    await write2D('products/quality_quintile', quality, spec('int8', T, N))
    progress.update(1)
    await writeRankings(w, reader, x, active)
    progress.update(2)
    await panel.done
  } finally {
    await panel.stop()
    await reader.close()
  }
  progress.update(3)
  progress.stop()
  let universeSize = 0
  for (let i = 0; i < N; i++) if (active(i, T - 1)) universeSize++
  return {
    universeSize,
    names: ['universe', 'reversion', 'industry_panel', 'rankings(data_as_of)'],
  }
}

/**
 * Deciles of z and quality quintiles of l3_sub_er for every day from `start` on, each day from
 * its own cross-section (docs/methodology.md §12), read back one range of days at a time.
 */
async function reversionBuckets(
  reader: BuildReader,
  x: BuildInputs,
  active: Membership,
  start: number,
): Promise<{ decile: Int8Array[]; quality: Int8Array[] }> {
  const T = x.calendar.length
  const N = x.symbols.length
  const decile = columnsOf(Int8Array, N, T, false, start)
  const quality = columnsOf(Int8Array, N, T, false, start)
  const scratch = decileScratch(N)
  const read = (a: number, b: number) =>
    Promise.all([
      readDays(reader, REVERSION_Z, Float64Array, N, a, b),
      readDays(reader, 'fields/l3_sub_er', Float64Array, N, a, b),
    ])
  await readAhead(dayRanges(start, T), read, ([z, subEr], a, b) => {
    for (let t = a; t < b; t++) {
      const d = reversionDeciles(z, subEr, t, (i) => active(i, t), scratch)
      for (let i = 0; i < N; i++) {
        decile[i][t] = d.decile[i]
        quality[i][t] = d.qualityQuintile[i]
      }
    }
  })
  return { decile, quality }
}

/**
 * Rankings of data_as_of, precomputed (docs/methodology.md §12): per metric × window the ranked values
 * and, per cohort, the ordinal and the cohort size, in two [ranking, symbol] arrays
 * (STORE_FILES.rankingValues, rankingCohorts). Rankings of any other day come from the same kernel on request
 * (all 28 cheaply; docs/performance.md), so a build never pays for days nobody asks for, and an
 * incremental build only recomputes the new last day.
 */
async function writeRankings(
  w: StoreBuildWriter,
  reader: BuildReader,
  x: BuildInputs,
  active: Membership,
): Promise<void> {
  const T = x.calendar.length
  const N = x.symbols.length
  // The longest window ends at T - 1 and a single day's sweep reads no day before it (the window
  // kernels' 16-day blocks are on the calendar index, which the read-back columns keep).
  const longest = Math.max(...Object.values(WINDOW_DAYS))
  const from = Math.max(0, T - longest)
  // Read together: the derived fields share their inputs' reads, the rest are read alongside.
  const [[marketCap, l2Rr, l3Rr, l1MktEr, l2MktEr, l2SecEr, l3ResEr], subsectorEtf] = await Promise.all([
    readFieldsDays(
      reader,
      ['market_cap', 'l2_rr', 'l3_rr', 'l1_mkt_er', 'l2_mkt_er', 'l2_sec_er', 'l3_res_er'],
      N,
      from,
      T,
    ),
    readDays(reader, 'codes/subsector_etf', Int16Array, N, from, T),
  ])
  const input = {
    returns: x.returns,
    marketCap,
    l2Rr,
    l3Rr,
    l1MktEr,
    l2MktEr,
    l2SecEr,
    l3ResEr,
    sectorEtf: x.sec,
    subsectorEtf,
    active,
  }
  const ranked = rankAllMetrics(input, T - 1)
  // Two [ranking, symbol] arrays (docs/model-store.md §rankings): one file each, not 196 arrays.
  const rows = ranked.map((r) => `${r.metric}_${r.window}`)
  const C = RANKING_COHORT_COLUMNS.length
  const values = columnsOf(Float64Array, N, ranked.length)
  const cohorts = columnsOf(Int16Array, N, ranked.length * C)
  ranked.forEach((r, q) => {
    const cols = RANKING_COHORT_COLUMNS.map((name) => {
      const [kind, cohort] = name.split('_') as ['ordinal' | 'size', Cohort]
      return kind === 'ordinal' ? r.ordinal[cohort] : r.cohortSize[cohort]
    })
    for (let j = 0; j < N; j++) {
      values[j][q] = r.values[j]
      for (let c = 0; c < C; c++) cohorts[j][q * C + c] = cols[c][j]
    }
  })
  const spec = (dtype: 'float64' | 'int16', names: string[]): Array2DSpec => ({
    dtype,
    days: names.length,
    symbols: N,
    chunkDays: Math.max(1, names.length),
    chunkSymbols: Math.max(1, N),
    dimensionNames: ['ranking', 'symbol'],
    attributes: { day: T - 1, date: isoFromDay(x.calendar[T - 1]), rows: names },
  })
  await Promise.all([
    writeArray2D(w.dir, STORE_FILES.rankingValues, values, spec('float64', rows)),
    writeArray2D(
      w.dir,
      STORE_FILES.rankingCohorts,
      cohorts,
      spec(
        'int16',
        rows.flatMap((key) => RANKING_COHORT_COLUMNS.map((c) => `${key}/${c}`)),
      ),
    ),
  ])
}
