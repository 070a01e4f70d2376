import { MARKET_ETF } from '../../engine/data/etf-registry.ts'
import type { ModelStore, StoreField } from '../../engine/model-store/reader.ts'
import type { Logger } from '../../platform/logger.ts'
import { BETA_FIELDS, LEVEL_FIELDS } from '../../platform/metric-fields.ts'
import type { ModelEnvironment, ModelRegistry } from '../models.ts'
import { etfOf, hedgeLevelsBlock, type Num, num } from './hedge-levels.ts'
import { confidenceOf, stateDay, stateOn } from './metrics.ts'
import { resolveTicker } from './tickers.ts'

/**
 * POST /decompose and POST /v4/decompose: one L3 state (the latest, or as_of a past day, read as
 * /metrics reads it), two shapes.
 *
 * Style / stock-specific split (attribution only, never a hedge): the build splits the residual
 * variance l3_res_er into l3_style_er, the share of the stock's variance the style ETFs explain
 * in its residual (docs/methodology.md §7, "Style split"), and the rest; `style_factors`
 * says which style ETFs took part. Neither part is hedgeable with the factor ETFs.
 */
const STYLE_ROLE = 'diagnostic'
/** The handler warns (and still answers) when the four L3 ERs stray this far from 1. */
const ER_SUM_TOLERANCE = 0.05

const FIELDS = [
  ...LEVEL_FIELDS,
  ...BETA_FIELDS,
  'lstar_level',
  'recommended_level',
  'sector_etf',
  'subsector_etf',
  'l3_style_er',
  'style_factors',
] as const satisfies readonly StoreField[]

/** −HR as a hedge position; `0 - x` keeps a zero HR a plain 0 (not −0). */
const hedgeOf = (hr: Num): Num => (hr === null ? null : 0 - hr)

/** The L3 state on as_of (point in time; undefined = the latest), as /metrics reads it. */
async function stateAt(
  models: ModelRegistry,
  env: ModelEnvironment,
  rawTicker: string,
  asOf: string | undefined,
  log: Logger,
) {
  const store = models.store(env)
  const { day, note } = stateDay(store, asOf)
  const r = resolveTicker(store, rawTicker, day === null ? undefined : store.calendar[day])
  const { t, values } = await stateOn(store, r.index, day, FIELDS)
  const m: Record<string, Num> = {}
  for (const f of FIELDS) m[f] = num(values[f])
  const sectorEtf = etfOf(store, values.sector_etf)
  // On fallback days the stored subsector code already names the sector ETF (docs/methodology.md §3).
  const subsectorEtf = etfOf(store, values.subsector_etf)
  const teo = t >= 0 ? store.date(t) : store.dataAsOf
  const ers = [m.l3_mkt_er, m.l3_sec_er, m.l3_sub_er, m.l3_res_er]
  const populated = ers.every((x) => x !== null && x !== undefined)
  const erSum = populated ? ers.reduce<number>((a, x) => a + (x ?? 0), 0) : null
  if (erSum !== null && Math.abs(erSum - 1) > ER_SUM_TOLERANCE)
    log.warn({ symbol: r.symbol, teo, er_sum: erSum }, 'decompose: L3 ERs do not sum to 1 within 0.05')
  return {
    store,
    r,
    m,
    values,
    sectorEtf,
    subsectorEtf,
    teo,
    health: { er_populated: populated, er_sum: erSum },
    confidence: confidenceOf(m, teo === (day === null ? store.dataAsOf : store.date(day))),
    metadata: { ...models.metadata(store, [teo, teo], r), ...note },
    styleMask: typeof values.style_factors === 'number' ? values.style_factors : 0,
    etf: store.symbols[r.index]?.asset_type === 'etf',
  }
}

/** Why the style share is null: no residual yet, or no style ETF covered the window. */
const STYLE_NO_RESIDUAL = 'no L3 residual at this date (too few observations for the model window)'
const STYLE_NO_FACTOR = 'no style ETF has returns over the whole model window at this date'
const STYLE_ETF = 'an ETF has no factor decomposition, so no residual to split'

/**
 * The style/stock_specific blocks from the stored split: style = l3_style_er, stock_specific =
 * l3_res_er − l3_style_er (so the two sum to l3_res_er exactly as stored), with the style factors
 * that took part (bit j of style_factors = the j-th style factor of meta/factors.json).
 */
function styleBlocks(store: ModelStore, m: Record<string, Num>, mask: number, etf: boolean) {
  const res = m.l3_res_er ?? null
  const share = res === null ? null : (m.l3_style_er ?? null)
  const styleKeys = (store.factors ?? []).filter((f) => f.group === 'style').map((f) => f.key)
  const factors = share === null ? [] : styleKeys.filter((_, j) => (mask >> j) & 1)
  const noResidual = etf ? STYLE_ETF : STYLE_NO_RESIDUAL
  const note = res === null ? noResidual : share === null ? STYLE_NO_FACTOR : null
  return {
    style: { explained_variance: share, hedgeable: false as const, role: STYLE_ROLE, factors, note },
    stock_specific: {
      explained_variance: res === null || share === null ? res : res - share,
      hedgeable: false as const,
    },
  }
}

/** DecomposeResponse without `_agent`. */
export async function decompose(
  models: ModelRegistry,
  env: ModelEnvironment,
  rawTicker: string,
  log: Logger,
  asOf?: string,
) {
  const s = await stateAt(models, env, rawTicker, asOf, log)
  const { m } = s
  const exposure = {
    market: { er: m.l3_mkt_er ?? null, hr: m.l3_mkt_hr ?? null, hedge_etf: MARKET_ETF },
    sector: { er: m.l3_sec_er ?? null, hr: m.l3_sec_hr ?? null, hedge_etf: s.sectorEtf },
    subsector: { er: m.l3_sub_er ?? null, hr: m.l3_sub_hr ?? null, hedge_etf: s.subsectorEtf },
    residual: { er: m.l3_res_er ?? null, hr: null, hedge_etf: null },
  }
  // One entry per ETF: a subsector that fell back to the sector ETF adds to the sector's entry.
  const hedge: Record<string, number> = {}
  for (const layer of [exposure.market, exposure.sector, exposure.subsector]) {
    const h = hedgeOf(layer.hr)
    if (h === null || layer.hedge_etf === null) continue
    hedge[layer.hedge_etf] = (hedge[layer.hedge_etf] ?? 0) + h
  }
  const body = {
    ticker: s.r.ticker,
    symbol: s.r.symbol,
    data_as_of: s.store.dataAsOf,
    teo: s.teo,
    exposure,
    hedge,
    hedge_levels: hedgeLevelsBlock(m, s.values, s.sectorEtf, s.subsectorEtf),
    ...styleBlocks(s.store, m, s.styleMask, s.etf),
    _metadata: s.metadata,
    _data_health: s.health,
  }
  return { body, store: s.store, confidence: s.confidence }
}

/** POST /v4/decompose: the named-block form, hedge notionals in ETF dollars per $1 long. */
export async function decomposeV4(
  models: ModelRegistry,
  env: ModelEnvironment,
  rawTicker: string,
  log: Logger,
  asOf?: string,
) {
  const s = await stateAt(models, env, rawTicker, asOf, log)
  const { m } = s
  // beta is the hierarchical beta; hedge_notional the L3 hedge ratio: each says which field it is.
  const block = (etf: string | null, beta: Num, er: Num, hr: Num, src: [string, string] | null = null) => ({
    etf,
    beta,
    beta_source: src?.[0] ?? null,
    explained_variance: er,
    hedge_notional: hedgeOf(hr),
    hedge_source: src?.[1] ?? null,
  })
  const { style, stock_specific } = styleBlocks(s.store, m, s.styleMask, s.etf)
  const body = {
    ticker: s.r.ticker,
    symbol: s.r.symbol,
    data_as_of: s.store.dataAsOf,
    teo: s.teo,
    market: block(MARKET_ETF, m.l1_mkt_beta ?? null, m.l3_mkt_er ?? null, m.l3_mkt_hr ?? null, [
      'l1_mkt_beta',
      'l3_mkt_hr',
    ]),
    industry: {
      sector: block(s.sectorEtf, m.l2_sec_beta ?? null, m.l3_sec_er ?? null, m.l3_sec_hr ?? null, [
        'l2_sec_beta',
        'l3_sec_hr',
      ]),
      subsector: block(s.subsectorEtf, m.l3_sub_beta ?? null, m.l3_sub_er ?? null, m.l3_sub_hr ?? null, [
        'l3_sub_beta',
        'l3_sub_hr',
      ]),
    },
    style: {
      ...block(null, null, style.explained_variance, null),
      hedgeable: false as const,
      role: style.role,
      factors: style.factors,
      note: style.note,
    },
    stock_specific: {
      ...block(null, null, stock_specific.explained_variance, null),
      hedgeable: false as const,
    },
    _metadata: s.metadata,
    _data_health: s.health,
  }
  return { body, store: s.store, confidence: s.confidence }
}
