import {
  activeCount,
  activeMember,
  COHORTS,
  computeUniverses,
  industryPanelDay,
  monthEnds,
  type PanelLevel,
  rankAllMetricsDays,
  residualReversion,
  reversionDeciles,
} from '../../model/cross/index.ts'
import { type Progress, silentProgress } from '../../platform/progress.ts'
import type { StoreBuildWriter } from '../../store/model-store/writer.ts'
import { writeArray1D, writeArray2D } from '../../store/zarr/index.ts'
import type { Kept } from './fields.ts'
import type { BuildInputs } from './inputs.ts'

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
): Promise<{ universeSize: number; names: string[] }> {
  const T = x.calendar.length
  const N = x.symbols.length
  const dir = w.dir
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
  await writeArray2D(dir, 'universe/mc_rank', u.mcRank, spec('int16'))
  await writeArray2D(dir, 'universe/dv_rank', u.dvRank, spec('int16'))
  await writeArray2D(dir, 'universe/valid', u.valid, spec('uint8'))
  await writeArray1D(dir, 'universe/mask_as_of', u.maskAsOf, {
    attributes: { units: 'days since 1970-01-01; -1 = no month-end yet' },
  })
  const active = activeMember(u)

  // Residual reversion: z for every stock-day, deciles and quality quintiles for every day.
  const z = residualReversion(kept.fields.l3_rr)
  await writeArray2D(dir, 'products/reversion_z', z, spec('float64'))
  const decile = Array.from({ length: N }, () => new Int8Array(T))
  const quality = Array.from({ length: N }, () => new Int8Array(T))
  progress.start('cross-sections', T)
  for (let t = 0; t < T; t++) {
    const d = reversionDeciles(z, kept.fields.l3_sub_er, t, (i) => active(i, t))
    for (let i = 0; i < N; i++) {
      decile[i][t] = d.decile[i]
      quality[i][t] = d.qualityQuintile[i]
    }
    if (t % 128 === 0) progress.update(t)
  }
  progress.stop()
  await writeArray2D(dir, 'products/reversion_decile', decile, spec('int8'))
  await writeArray2D(dir, 'products/quality_quintile', quality, spec('int8'))

  await writeIndustryPanel(w, x, kept, active)
  const rankDays = await writeRankings(w, x, kept, active, progress)
  return {
    universeSize: activeCount(u, 'mc', 3000, T - 1),
    names: ['universe', 'reversion', 'industry_panel', `rankings(${rankDays} days)`],
  }
}

/** Per level and day, each industry's weighted beta stats, stored as [day, industry] arrays. */
async function writeIndustryPanel(
  w: StoreBuildWriter,
  x: BuildInputs,
  kept: Kept,
  active: (i: number, t: number) => boolean,
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
    for (let t = 0; t < T; t++) {
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
    await writeArray2D(w.dir, `${base}/beta_mean`, mean, {
      dtype: 'float64',
      days: T,
      symbols: nInd,
      ...attrs,
    })
    await writeArray2D(w.dir, `${base}/beta_variance`, variance, {
      dtype: 'float64',
      days: T,
      symbols: nInd,
      ...attrs,
    })
    await writeArray2D(w.dir, `${base}/total_log_mcap_weight`, weight, {
      dtype: 'float64',
      days: T,
      symbols: nInd,
      ...attrs,
    })
    await writeArray2D(w.dir, `${base}/n_companies`, count, {
      dtype: 'int32',
      days: T,
      symbols: nInd,
      ...attrs,
    })
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
  progress.start('rankings', D)
  let d = 0
  for (const { rankings } of rankAllMetricsDays(input, days)) {
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
    progress.update(++d)
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
