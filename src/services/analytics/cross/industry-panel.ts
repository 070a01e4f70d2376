import { DEFAULT_MIN_PEERS, type PanelLevel } from '../../../engine/model/cross/index.ts'
import type { ModelStore } from '../../../engine/model-store/reader.ts'
import { type ModelEnvironment, type ModelRegistry, universeBasisOf } from '../../models.ts'
import { etfOf, type Num, num, rowsTable } from '../series.ts'
import { dayConfidence, resolveTeo, teoNote } from '../trading-day.ts'

/**
 * The industry panel (docs/methodology.md §12), served from the stored per-day product: per industry, its
 * members' weighted risk and hedge ETFs on one day.
 */

/** `Application Software` → `application_software`: the stable identifier of an industry. */
function industryId(name: string): string {
  return name
    .toLowerCase()
    .replace(/&/g, ' and ')
    .replace(/[^a-z0-9]+/g, '_')
    .replace(/^_+|_+$/g, '')
}

/** The ETFs an industry's members are assigned on day t: the most common among them. */
async function industryEtfs(
  store: ModelStore,
  t: number,
): Promise<Map<string, { sector: number; subsector: number }>> {
  const [sec, sub] = await Promise.all([
    store.crossSection('sector_etf', t),
    store.crossSection('subsector_etf', t),
  ])
  const tally = new Map<string, { sector: Map<number, number>; subsector: Map<number, number> }>()
  store.symbols.forEach((s, i) => {
    if (s.asset_type !== 'stock' || s.industry === null) return
    const e = tally.get(s.industry) ?? { sector: new Map(), subsector: new Map() }
    tally.set(s.industry, e)
    if (sec[i] >= 0) e.sector.set(sec[i], (e.sector.get(sec[i]) ?? 0) + 1)
    if (sub[i] >= 0) e.subsector.set(sub[i], (e.subsector.get(sub[i]) ?? 0) + 1)
  })
  const top = (m: Map<number, number>) => {
    let best = -1
    let n = 0
    for (const [k, c] of m) if (c > n || (c === n && k < best)) [best, n] = [k, c]
    return best
  }
  const out = new Map<string, { sector: number; subsector: number }>()
  for (const [ind, e] of tally) out.set(ind, { sector: top(e.sector), subsector: top(e.subsector) })
  return out
}

interface IndustryRow {
  industry: string
  industry_name: string
  level: PanelLevel
  beta_mean: Num
  beta_variance: Num
  n_companies: number
  total_log_mcap_weight: Num
  sector_etf: string | null
  subsector_etf: string | null
}

/** GET /industry-panel. */
export async function getIndustryPanel(
  models: ModelRegistry,
  env: ModelEnvironment,
  q: { level?: PanelLevel; teo?: string; min_peers?: number },
) {
  const store = models.store(env)
  const x = resolveTeo(store, q.teo)
  const minPeers = q.min_peers ?? DEFAULT_MIN_PEERS
  const levels: PanelLevel[] = q.level ? [q.level] : ['market', 'sector', 'subsector']
  const etfs = await industryEtfs(store, x.t)
  const rows: IndustryRow[] = []
  for (const level of levels) {
    const base = `products/industry_panel/${level}`
    const [mean, variance, weight, count] = await Promise.all([
      store.readRow(`${base}/beta_mean`, x.t),
      store.readRow(`${base}/beta_variance`, x.t),
      store.readRow(`${base}/total_log_mcap_weight`, x.t),
      store.readRow(`${base}/n_companies`, x.t),
    ])
    store.industries.forEach((name, g) => {
      const n = count[g]
      if (!(n >= minPeers) || n === 0) return
      const e = etfs.get(name)
      rows.push({
        industry: industryId(name),
        industry_name: name,
        level,
        beta_mean: num(mean[g]),
        beta_variance: num(variance[g]),
        n_companies: n,
        total_log_mcap_weight: num(weight[g]),
        sector_etf: e ? etfOf(store, e.sector) : null,
        subsector_etf: e ? etfOf(store, e.subsector) : null,
      })
    })
  }
  const bases = universeBasisOf(store)
  const body = {
    teo: x.teo,
    ...teoNote(x),
    level: q.level ?? null,
    min_peers: minPeers,
    weight_basis: bases.weight_basis,
    universe_basis: bases.universe_basis,
    industries: rows,
    _metadata: models.metadata(store, [x.teo, x.teo]),
  }
  const table = () =>
    rowsTable(
      rows,
      {
        industry: 'text',
        industry_name: 'text',
        level: 'text',
        beta_mean: 'double',
        beta_variance: 'double',
        n_companies: 'int',
        total_log_mcap_weight: 'double',
        sector_etf: 'text',
        subsector_etf: 'text',
      },
      x.teo,
    )
  return {
    body,
    store,
    confidence: dayConfidence(store, x, rows.length > 0 ? 1 : 0),
    table,
    filename: `industry-panel_${q.level ?? 'all'}_${x.teo}`,
  }
}
