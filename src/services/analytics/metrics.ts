import { METRICS_V3_FIELDS } from '../../contract/ops/metrics.ts'
import { etfName, MARKET_ETF } from '../../engine/data/etf-registry.ts'
import type { ModelStore, StoreField } from '../../engine/model-store/reader.ts'
import { AppError } from '../../platform/errors.ts'
import type { ModelEnvironment, ModelRegistry } from '../models.ts'
import { etfOf, hedgeLevelsBlock, type Num, num } from './hedge-levels.ts'
import { resolveTicker } from './tickers.ts'
import { resolveTeo } from './trading-day.ts'

const LEVEL_CODE_FIELDS = ['lstar_level', 'recommended_level', 'sector_etf', 'subsector_etf'] as const
const FIELDS = [...METRICS_V3_FIELDS, ...LEVEL_CODE_FIELDS]

/**
 * The `fields` on `day` (null: the latest state). Point in time: a stock listed that day answers
 * that day's row; one that stopped trading before answers its last state; one not yet listed is a 404.
 */
export async function stateOn<F extends string>(
  store: ModelStore,
  index: number,
  day: number | null,
  fields: readonly F[],
) {
  const life = await store.listedLife(index)
  if (day === null || day >= life.last) return store.latest(index, fields as unknown as StoreField[])
  if (day < life.first)
    throw new AppError(
      'DATE_NOT_AVAILABLE',
      `${store.symbols[index]?.symbol} first traded on ${store.date(life.first)}, after as_of ${store.date(day)}`,
    )
  const row = await store.history(index, fields as unknown as StoreField[], day, day + 1)
  return {
    t: day,
    values: Object.fromEntries(fields.map((f) => [f, (row[f] as ArrayLike<number>)[0] as number])),
  }
}

/**
 * `as_of` of a per-stock state operation resolved: the calendar index (null = the latest state)
 * and the `_metadata` note when the day asked was not a trading day.
 */
export function stateDay(store: ModelStore, asOf: string | undefined) {
  if (asOf === undefined) return { day: null, note: {} }
  const x = resolveTeo(store, asOf, 'as_of')
  const note =
    x.requested === null
      ? {}
      : {
          as_of_requested: x.requested,
          as_of_note: `as_of ${x.requested} is not a trading day: the latest trading day on or before it, ${x.teo}, is used`,
        }
  return { day: x.t, note }
}

/** A confidence in [0, 1] per factor and overall (their minimum); defined in the AgentMeta schema (contract/schemas.ts). */
export function confidenceOf(
  m: Record<string, Num>,
  fresh: boolean,
): { overall: number; factors: Record<string, number> } {
  const ers = [m.l3_mkt_er, m.l3_sec_er, m.l3_sub_er, m.l3_res_er]
  const populated = ers.filter((x) => x !== null).length / 4
  const sum = ers.reduce<number>((a, x) => a + (x ?? 0), 0)
  const factors = {
    model_coverage: populated,
    er_identity: populated === 0 ? 0 : Math.max(0, 1 - Math.abs(sum - 1) / 0.05),
    freshness: fresh ? 1 : 0.5,
  }
  return { overall: Math.min(...Object.values(factors)), factors }
}

/** MetricsSnapshotResponse of a ticker's latest model state (or its state as of a past day), without `_agent`. */
export async function metricsSnapshot(
  models: ModelRegistry,
  env: ModelEnvironment,
  rawTicker: string,
  asOf?: string,
) {
  const store = models.store(env)
  const { day, note } = stateDay(store, asOf)
  const r = resolveTicker(store, rawTicker, day === null ? undefined : store.calendar[day])
  const meta = store.symbols[r.index]
  const { t, values } = await stateOn(store, r.index, day, FIELDS)
  const metrics: Record<string, Num> = {}
  for (const f of METRICS_V3_FIELDS) metrics[f] = num(values[f])
  const lstar = values.lstar_level
  metrics.lstar_level = lstar === 1 || lstar === 2 || lstar === 3 ? lstar : null
  const sectorEtf = etfOf(store, values.sector_etf)
  const subsectorEtf = etfOf(store, values.subsector_etf)
  const teo = t >= 0 ? store.date(t) : store.dataAsOf
  const hedgeLevels = hedgeLevelsBlock(metrics, values, sectorEtf, subsectorEtf)
  const display: Record<string, string> = {
    name: meta?.name ?? r.symbol,
    market_etf: `${MARKET_ETF} — ${etfName(MARKET_ETF)}`,
  }
  if (sectorEtf) display.sector_etf = `${sectorEtf} — ${etfName(sectorEtf)}`
  if (subsectorEtf) display.subsector_etf = `${subsectorEtf} — ${etfName(subsectorEtf)}`
  if (meta?.sector) display.sector = meta.sector
  if (meta?.industry) display.industry = meta.industry
  const body = {
    symbol: r.symbol,
    ticker: r.ticker,
    teo,
    periodicity: 'daily',
    metrics,
    display,
    meta: { sector_etf: sectorEtf, asset_type: meta?.asset_type ?? null },
    hedge_levels: hedgeLevels,
    _metadata: { ...models.metadata(store, [teo, teo], r), ...note },
  }
  return {
    body,
    store,
    confidence: confidenceOf(metrics, teo === (day === null ? store.dataAsOf : store.date(day))),
  }
}
