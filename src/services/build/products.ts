import {
  activeCount,
  activeMember,
  COHORTS,
  computeUniverses,
  industryPanelDay,
  monthEnds,
  type PanelLevel,
  RANKING_METRICS,
  RANKING_WINDOWS,
  rankAllMetricsDays,
  residualReversion,
  reversionDeciles,
} from '../../model/cross/index.ts'
import { type Progress, silentProgress } from '../../platform/progress.ts'
import type { StoreBuildWriter } from '../../store/model-store/writer.ts'
import {
  type Array2DSpec,
  type Column,
  writeArray1D,
  writeArray2D,
  writeArray2DIncremental,
} from '../../store/zarr/index.ts'
import type { Kept } from './fields.ts'
import type { IncrementalPlan } from './incremental.ts'
import type { BuildInputs } from './inputs.ts'

/** Writes a [day, ·] array; incrementally (old day-chunks hard-linked) when a plan is given. */
function writer2D(w: StoreBuildWriter, inc: IncrementalPlan | null) {
  return (path: string, columns: Column[], spec: Array2DSpec) =>
    inc
      ? writeArray2DIncremental(w.dir, inc.prev.dir, path, columns, spec, inc.from)
      : writeArray2D(w.dir, path, columns, spec)
}

/** Trading days at the end of the history whose rankings are precomputed besides every month-end. */
export const RECENT_RANK_DAYS = 63

const LEVELS: PanelLevel[] = ['market', 'sector', 'subsector']

/**
 * The cross-sectional products of METHODOLOGY §9–§10, computed from the finished per-stock
 * panels and written under universe/, products/ and rankings/.
 */
export async function writeProducts(
  w: StoreBuildWriter,
  x: BuildInputs,
  kept: Kept,
  progress: Progress = silentProgress,
  inc: IncrementalPlan | null = null,
): Promise<{ universeSize: number; names: string[] }> {
  const T = x.calendar.length
  const N = x.symbols.length
  const dir = w.dir
  const write2D = writer2D(w, inc)
  // An incremental build recomputes only the rewritten tail; older chunks are linked.
  const start = inc ? inc.chunkStart : 0
  const u = computeUniverses({
    calendar: x.calendar,
    isStock: x.isStock,
    close: x.close,
    returns: x.returns,
    marketCap: x.marketCap,
    volume: x.volume,
  })
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
  const active = activeMember(u)

  // Residual reversion: z for every stock-day, deciles and quality quintiles for every day.
  const z = residualReversion(kept.fields.l3_rr)
  await write2D('products/reversion_z', z, spec('float64'))
  const decile = Array.from({ length: N }, () => new Int8Array(T))
  const quality = Array.from({ length: N }, () => new Int8Array(T))
  progress.start('cross-sections', T)
  for (let t = start; t < T; t++) {
    const d = reversionDeciles(z, kept.fields.l3_sub_er, t, (i) => active(i, t))
    for (let i = 0; i < N; i++) {
      decile[i][t] = d.decile[i]
      quality[i][t] = d.qualityQuintile[i]
    }
    if (t % 128 === 0) progress.update(t)
  }
  progress.stop()
  await write2D('products/reversion_decile', decile, spec('int8'))
  await write2D('products/quality_quintile', quality, spec('int8'))

  await writeIndustryPanel(x, kept, active, start, write2D)
  const rankDays = await writeRankings(w, x, kept, active, progress, inc)
  return {
    universeSize: activeCount(u, 'mc', 3000, T - 1),
    names: ['universe', 'reversion', 'industry_panel', `rankings(${rankDays} days)`],
  }
}

/** Per level and day, each industry's weighted beta stats, stored as [day, industry] arrays. */
async function writeIndustryPanel(
  x: BuildInputs,
  kept: Kept,
  active: (i: number, t: number) => boolean,
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
  }
  for (const level of LEVELS) {
    const mean = Array.from({ length: nInd }, () => new Float64Array(T).fill(Number.NaN))
    const variance = Array.from({ length: nInd }, () => new Float64Array(T).fill(Number.NaN))
    const weight = Array.from({ length: nInd }, () => new Float64Array(T).fill(Number.NaN))
    const count = Array.from({ length: nInd }, () => new Int32Array(T))
    for (let t = start; t < T; t++) {
      // minPeers 1: every industry is stored; the API applies the caller's min_peers.
      const day = industryPanelDay(input, t, level, 1)
      for (let k = 0; k < day.industry.length; k++) {
        const j = day.industry[k]
        mean[j][t] = day.beta_mean[k]
        variance[j][t] = day.beta_variance[k]
        weight[j][t] = day.total_log_mcap_weight[k]
        count[j][t] = day.n_companies[k]
      }
    }
    const base = `products/industry_panel/${level}`
    const attrs = { attributes: { dimension: 'industry index into meta/industries.json' } }
    const dims = { days: T, symbols: nInd, chunkSymbols: Math.max(1, nInd), ...attrs }
    await write2D(`${base}/beta_mean`, mean, { dtype: 'float64', ...dims })
    await write2D(`${base}/beta_variance`, variance, { dtype: 'float64', ...dims })
    await write2D(`${base}/total_log_mcap_weight`, weight, { dtype: 'float64', ...dims })
    await write2D(`${base}/n_companies`, count, { dtype: 'int32', ...dims })
  }
}

/**
 * Rankings for every month-end and the last RECENT_RANK_DAYS days (other days are computed on
 * request by the same kernel): per metric × window the ranked values, and per cohort the
 * ordinal and cohort size, as [rank day, symbol] arrays.
 */
async function writeRankings(
  w: StoreBuildWriter,
  x: BuildInputs,
  kept: Kept,
  active: (i: number, t: number) => boolean,
  progress: Progress,
  inc: IncrementalPlan | null,
): Promise<number> {
  const T = x.calendar.length
  const N = x.symbols.length
  const days = [
    ...new Set([
      ...monthEnds(x.calendar),
      ...Array.from({ length: Math.min(T, RECENT_RANK_DAYS) }, (_, k) => T - 1 - k),
    ]),
  ].sort((a, b) => a - b)
  const D = days.length
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
  const values = new Map<string, Float64Array[]>()
  const ordinals = new Map<string, Int16Array[]>()
  const sizes = new Map<string, Int16Array[]>()
  const panel = <A>(m: Map<string, A[]>, key: string, make: () => A): A[] => {
    let p = m.get(key)
    if (!p) {
      p = Array.from({ length: N }, make)
      m.set(key, p)
    }
    return p
  }
  // Days the previous build already ranked are copied (same kernel, same inputs, same numbers).
  const oldDays = inc ? Array.from(await inc.prev.readArray1D('rankings/days')) : []
  const oldRow = new Map(oldDays.map((t, r) => [t, r]))
  const fresh = days.filter((t) => !oldRow.has(t))
  if (inc) {
    for (const path of rankingPaths()) {
      const old = await inc.prev.readAll(`rankings/${path}`)
      const isValue = path.endsWith('/value')
      const cols = (isValue ? values : path.includes('/ordinal_') ? ordinals : sizes) as Map<string, Column[]>
      const key = isValue ? path.slice(0, -'/value'.length) : path
      const target = panel(cols, key, () =>
        isValue ? new Float64Array(D).fill(Number.NaN) : new Int16Array(D),
      )
      days.forEach((t, dd) => {
        const r = oldRow.get(t)
        if (r !== undefined) for (let i = 0; i < N; i++) target[i][dd] = old[i][r]
      })
    }
  }
  const row = new Map(days.map((t, dd) => [t, dd]))
  progress.start('rankings', fresh.length)
  let done = 0
  for (const { t, rankings } of rankAllMetricsDays(input, fresh)) {
    const d = row.get(t) ?? 0
    for (const r of rankings) {
      const key = `${r.metric}_${r.window}`
      const v = panel(values, key, () => new Float64Array(D).fill(Number.NaN))
      for (let i = 0; i < N; i++) v[i][d] = r.values[i]
      for (const c of COHORTS) {
        const o = panel(ordinals, `${key}/ordinal_${c}`, () => new Int16Array(D))
        const s = panel(sizes, `${key}/size_${c}`, () => new Int16Array(D))
        for (let i = 0; i < N; i++) {
          o[i][d] = r.ordinal[c][i]
          s[i][d] = r.cohortSize[c][i]
        }
      }
    }
    progress.update(++done)
  }
  progress.stop()
  await writeArray1D(w.dir, 'rankings/days', Int32Array.from(days), {
    attributes: { units: 'calendar index' },
  })
  for (const [key, v] of values)
    await writeArray2D(w.dir, `rankings/${key}/value`, v, { dtype: 'float64', days: D, symbols: N })
  for (const [key, v] of ordinals)
    await writeArray2D(w.dir, `rankings/${key}`, v, { dtype: 'int16', days: D, symbols: N })
  for (const [key, v] of sizes)
    await writeArray2D(w.dir, `rankings/${key}`, v, { dtype: 'int16', days: D, symbols: N })
  return D
}

/** Paths (under rankings/) of every ranking array. */
function rankingPaths(): string[] {
  const out: string[] = []
  for (const m of RANKING_METRICS) {
    for (const wdw of RANKING_WINDOWS) {
      const key = `${m}_${wdw}`
      out.push(`${key}/value`)
      for (const c of COHORTS) out.push(`${key}/ordinal_${c}`, `${key}/size_${c}`)
    }
  }
  return out
}
