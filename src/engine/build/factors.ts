import { FACTORS } from '../data/factors.ts'
import type { Dataset } from '../data/format.ts'
import type { FactorMeta } from '../model-store/layout.ts'
import { STORE_FILES } from '../model-store/layout.ts'
import type { StoreBuildWriter } from '../model-store/writer.ts'
import { writeArray2D, writeArray2DIncremental } from '../zarr/index.ts'
import type { IncrementalPlan } from './incremental.ts'
import type { BuildInputs } from './inputs.ts'

export interface FactorSeries {
  meta: FactorMeta[]
  /** Per factor (FACTORS order): its daily return on each calendar day, NaN = null. */
  returns: Float64Array[]
  /** The VIX level on each calendar day, NaN = null. */
  vixLevel: Float64Array
}

/** Daily change of a level, level(t) − level(t−1); null when either side is missing. */
function changes(level: Float64Array): Float64Array {
  const out = new Float64Array(level.length).fill(Number.NaN)
  for (let t = 1; t < level.length; t++) out[t] = level[t] - level[t - 1]
  return out
}

/**
 * The factor series of docs/methodology.md §13 on the build's calendar. An ETF factor's return is the
 * build's own return of that ETF (adjusted close over the previous one: null before inception and
 * next to a missing close); an index factor's is the change of its level. The proxy is the one
 * the dataset's registry names for the factor (else the built-in one); a proxy the dataset has no
 * series for leaves the factor's column null. On a tail read (incremental build) days before the
 * panels start are null too; the incremental writer takes them from the previous build.
 */
export function factorSeries(ds: Dataset, x: BuildInputs): FactorSeries {
  const T = x.calendar.length
  const index = new Map(x.symbols.map((s, i) => [s, i]))
  const registry = new Map(
    ds.factors.filter((f) => f.role === 'macro' || f.role === 'style').map((f) => [f.code, f.ticker]),
  )
  const series = new Map((ds.series?.names ?? []).map((n, k) => [n, ds.series?.values[k]]))
  const missing = () => new Float64Array(T).fill(Number.NaN)
  const meta: FactorMeta[] = []
  const returns: Float64Array[] = []
  for (const f of FACTORS) {
    const ticker = registry.get(f.code) ?? f.ticker
    let r: Float64Array | null = null
    if (f.kind === 'index') {
      const level = series.get(ticker)
      r = level ? changes(level) : null
    } else {
      const i = index.get(ticker)
      r = i !== undefined && !x.isStock[i] ? x.returns[i] : null
    }
    meta.push({ key: f.key, group: f.group, ticker, kind: f.kind, present: r !== null })
    returns.push(r ?? missing())
  }
  const vix = FACTORS.find((f) => f.key === 'vix_spot')
  const level = vix ? series.get(registry.get(vix.code) ?? vix.ticker) : undefined
  return { meta, returns, vixLevel: level ? Float64Array.from(level) : missing() }
}

/**
 * Writes meta/factors.json, factors/returns [day, factor] and factors/vix_level [day, 1]: one
 * chunk column each, so a factor's history is one read per 256 days. The level is 2-D so that
 * an incremental build can append to it like every other [day, ·] array.
 */
export async function writeFactorSeries(
  w: StoreBuildWriter,
  s: FactorSeries,
  inc: IncrementalPlan | null,
): Promise<void> {
  await w.writeFactorMeta(s.meta)
  const days = s.vixLevel.length
  const write = (path: string, columns: Float64Array[], attributes: Record<string, unknown>) => {
    const spec = {
      dtype: 'float64' as const,
      days,
      symbols: columns.length,
      chunkSymbols: columns.length,
      attributes,
    }
    return inc
      ? writeArray2DIncremental(w.dir, inc.prev.dir, path, columns, spec, inc.from, { requirePrevious: true })
      : writeArray2D(w.dir, path, columns, spec)
  }
  await write(STORE_FILES.factorReturns, s.returns, {
    dimension: 'factor index into meta/factors.json',
    units: 'daily total return (fraction); vix_spot: change of the VIX level in index points',
  })
  await write(STORE_FILES.vixLevel, [s.vixLevel], {
    dimension: 'one column: the VIX level',
    units: 'index points',
  })
}
