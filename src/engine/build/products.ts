import { isoFromDay } from '../../platform/dates.ts'
import { type Progress, silentProgress } from '../../platform/progress.ts'
import {
  COHORTS,
  type DefaultUniverseBasis,
  defaultMember,
  industryPanelSeries,
  type PanelLevel,
  rankAllMetrics,
  reversionDeciles,
  type WeightBasis,
} from '../model/cross/index.ts'
import type { StoreBuildWriter } from '../model-store/writer.ts'
import {
  type Array2DSpec,
  type Column,
  writeArray1D,
  writeArray2D,
  writeArray2DIncremental,
} from '../zarr/index.ts'
import { columnsOf } from './columns.ts'
import type { Kept } from './fields.ts'
import type { IncrementalPlan } from './incremental.ts'
import type { BuildInputs } from './inputs.ts'
import { reversionFrom, universesFrom } from './tail.ts'

/**
 * Writes a [day, ·] array; incrementally (old day-chunks hard-linked) when a plan is given, in
 * which case the columns hold only the rewritten days (see tail.ts).
 */
function writer2D(w: StoreBuildWriter, inc: IncrementalPlan | null) {
  return (path: string, columns: Column[], spec: Array2DSpec) =>
    inc
      ? writeArray2DIncremental(w.dir, inc.prev.dir, path, columns, spec, inc.from, { requirePrevious: true })
      : writeArray2D(w.dir, path, columns, spec)
}

const LEVELS: PanelLevel[] = ['market', 'sector', 'subsector']

/**
 * The cross-sectional products of docs/methodology.md §11–§12, computed from the finished per-stock
 * panels and written under universe/, products/ and rankings/, over the default universe of
 * `basis` (defaultUniverseBasis of the same inputs).
 */
export async function writeProducts(
  w: StoreBuildWriter,
  x: BuildInputs,
  kept: Kept,
  basis: DefaultUniverseBasis,
  progress: Progress = silentProgress,
  inc: IncrementalPlan | null = null,
): Promise<{ universeSize: number; names: string[] }> {
  const T = x.calendar.length
  const N = x.symbols.length
  const dir = w.dir
  const write2D = writer2D(w, inc)
  // An incremental build computes only the new days: older chunks are linked, and the chunk
  // holding the first new day keeps the earlier days' bytes.
  const start = inc ? inc.from : 0
  // Five steps: universes, reversion z, deciles, industry panel, rankings.
  progress.start('build: cross-sections (steps)', 5)
  const u = universesFrom(x, start)
  const spec = (dtype: 'int16' | 'uint8' | 'int8' | 'float64', days = T, symbols = N) => ({
    dtype,
    days,
    symbols,
  })
  await write2D('universe/mc_rank', u.mcRank, spec('int16'))
  await write2D('universe/dv_rank', u.dvRank, spec('int16'))
  await write2D('universe/valid', u.valid, spec('uint8'))
  await writeArray1D(dir, 'universe/mask_as_of', u.maskAsOf, {
    attributes: { units: 'days since 1970-01-01; -1 = no month-end yet' },
  })
  const active = defaultMember(u, basis.universe_basis)
  progress.update(1)

  // Residual reversion: z for every stock-day, deciles and quality quintiles for every day.
  const z = reversionFrom(kept.fields.l3_rr, start)
  await write2D('products/reversion_z', z, spec('float64'))
  progress.update(2)
  const decile = columnsOf(Int8Array, N, T)
  const quality = columnsOf(Int8Array, N, T)
  for (let t = start; t < T; t++) {
    const d = reversionDeciles(z, kept.fields.l3_sub_er, t, (i) => active(i, t))
    for (let i = 0; i < N; i++) {
      decile[i][t] = d.decile[i]
      quality[i][t] = d.qualityQuintile[i]
    }
  }
  await write2D('products/reversion_decile', decile, spec('int8'))
  await write2D('products/quality_quintile', quality, spec('int8'))
  progress.update(3)
  await writeIndustryPanel(x, kept, active, basis.weight_basis, start, write2D)
  progress.update(4)
  await writeRankings(w, x, kept, active)
  progress.update(5)
  progress.stop()
  let universeSize = 0
  for (let i = 0; i < N; i++) if (active(i, T - 1)) universeSize++
  return {
    universeSize,
    names: ['universe', 'reversion', 'industry_panel', 'rankings(data_as_of)'],
  }
}

/** Per level and day, each industry's weighted beta stats, stored as [day, industry] arrays. */
async function writeIndustryPanel(
  x: BuildInputs,
  kept: Kept,
  active: (i: number, t: number) => boolean,
  weightBasis: WeightBasis,
  start: number,
  write2D: ReturnType<typeof writer2D>,
): Promise<void> {
  const T = x.calendar.length
  const nInd = x.industries.length
  const input = {
    industry: x.industry,
    nIndustries: nInd,
    marketCap: x.marketCap,
    l1MktBeta: kept.fields.l1_mkt_beta,
    l2SecBeta: kept.fields.l2_sec_beta,
    l3SubBeta: kept.fields.l3_sub_beta,
    active,
    weightBasis,
  }
  // Days before start come from the previous build, so only the rest is computed.
  const series = LEVELS.map(() => ({
    beta_mean: columnsOf(Float64Array, nInd, T),
    beta_variance: columnsOf(Float64Array, nInd, T),
    total_log_mcap_weight: columnsOf(Float64Array, nInd, T),
    n_companies: columnsOf(Int32Array, nInd, T),
  }))
  industryPanelSeries(input, LEVELS, start, series)
  for (const [l, level] of LEVELS.entries()) {
    const p = series[l]
    const base = `products/industry_panel/${level}`
    const attrs = { attributes: { dimension: 'industry index into meta/industries.json' } }
    const dims = { days: T, symbols: nInd, chunkSymbols: Math.max(1, nInd), ...attrs }
    await write2D(`${base}/beta_mean`, p.beta_mean, { dtype: 'float64', ...dims })
    await write2D(`${base}/beta_variance`, p.beta_variance, { dtype: 'float64', ...dims })
    await write2D(`${base}/total_log_mcap_weight`, p.total_log_mcap_weight, { dtype: 'float64', ...dims })
    await write2D(`${base}/n_companies`, p.n_companies, { dtype: 'int32', ...dims })
  }
}

/**
 * Rankings of data_as_of, precomputed (docs/methodology.md §12): per metric × window the ranked values
 * and, per cohort, the ordinal and the cohort size, as [symbol] arrays under
 * rankings/<metric>_<window>/. Rankings of any other day come from the same kernel on request
 * (all 28 cheaply; docs/performance.md), so a build never pays for days nobody asks for, and an
 * incremental build only recomputes the new last day.
 */
async function writeRankings(
  w: StoreBuildWriter,
  x: BuildInputs,
  kept: Kept,
  active: (i: number, t: number) => boolean,
): Promise<void> {
  const T = x.calendar.length
  const input = {
    returns: x.returns,
    marketCap: x.marketCap,
    l2Rr: kept.fields.l2_rr,
    l3Rr: kept.fields.l3_rr,
    l1MktEr: kept.fields.l1_mkt_er,
    l2MktEr: kept.fields.l2_mkt_er,
    l2SecEr: kept.fields.l2_sec_er,
    l3ResEr: kept.fields.l3_res_er,
    sectorEtf: x.sec,
    subsectorEtf: kept.subEff,
    active,
  }
  const attributes = { day: T - 1, date: isoFromDay(x.calendar[T - 1]) }
  const writes: [string, Column][] = []
  for (const r of rankAllMetrics(input, T - 1)) {
    const key = `rankings/${r.metric}_${r.window}`
    writes.push([`${key}/value`, r.values])
    for (const c of COHORTS) {
      writes.push([`${key}/ordinal_${c}`, r.ordinal[c]])
      writes.push([`${key}/size_${c}`, r.cohortSize[c]])
    }
  }
  // Nearly 200 tiny arrays: in flight together, their directory and file creations overlap.
  await Promise.all(writes.map(([path, values]) => writeArray1D(w.dir, path, values, { attributes })))
}
