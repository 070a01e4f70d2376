import type { ModelParams } from '../../model/params.ts'

/**
 * The model store: a directory of Zarr v3 arrays [day, symbol] plus manifest.json, readable by
 * zarr-python / xarray as well as by erm3. A store root holds several builds and a pointer:
 *
 *   <root>/CURRENT            {"build": "<id>"}, replaced atomically (rename) at the end of a build
 *   <root>/builds/<id>/       one complete build (manifest.json, zarr.json, arrays …)
 *
 * Readers resolve CURRENT once and never see a half-written build.
 */
export const STORE_FORMAT = 'erm3-model-store'
export const STORE_VERSION = 1
/** METHODOLOGY version: bump when the numbers change for the same inputs. */
export const METHODOLOGY_VERSION = 1
export const MODEL_VERSION = `ERM3-L3-v${METHODOLOGY_VERSION}`
export const FACTOR_SET_ID = 'SPY_uni_mc_3000'

export const STORE_FILES = {
  current: 'CURRENT',
  builds: 'builds',
  manifest: 'manifest.json',
  calendar: 'calendar',
  symbols: 'meta/symbols.json',
  etfs: 'meta/etfs.json',
  industries: 'meta/industries.json',
  field: (name: string) => `fields/${name}`,
  code: (name: string) => `codes/${name}`,
  product: (name: string) => `products/${name}`,
} as const

/** Float fields stored per stock-day, named as in the interface spec (MetricsV3). */
export const FLOAT_FIELDS = [
  'returns_gross',
  'price_close',
  'market_cap',
  'stock_var',
  'vol_23d',
  'vol_252d_ann',
  'l1_mkt_hr',
  'l1_mkt_er',
  'l1_res_er',
  'l2_mkt_hr',
  'l2_sec_hr',
  'l2_mkt_er',
  'l2_sec_er',
  'l2_res_er',
  'l3_mkt_hr',
  'l3_sec_hr',
  'l3_sub_hr',
  'l3_mkt_er',
  'l3_sec_er',
  'l3_sub_er',
  'l3_res_er',
  'l1_cfr',
  'l2_cfr',
  'l3_cfr',
  'l1_fr',
  'l2_fr',
  'l3_fr',
  'l1_rr',
  'l2_rr',
  'l3_rr',
  'lstar_rr',
  'l1_mkt_beta',
  'l2_sec_beta',
  'l3_sub_beta',
] as const
export type FloatField = (typeof FLOAT_FIELDS)[number]

/** Small-integer codes per stock-day: levels (0 = null) and ETF indices (-1 = none). */
export const CODE_FIELDS = ['lstar_level', 'recommended_level', 'sector_etf', 'subsector_etf'] as const
export type CodeField = (typeof CODE_FIELDS)[number]

export interface SymbolMeta {
  symbol: string
  /** Ticker windows, oldest first; `to` null = current. */
  tickers: { ticker: string; from: string; to: string | null }[]
  name: string
  asset_type: 'stock' | 'etf'
  sector: string | null
  industry: string | null
  cik: number | null
}

/** Digests of the dataset's price panels a build was made from (services/build/input-digests.ts). */
export interface InputDigests {
  /** Days per dataset row group. */
  row_group_days: number
  /** The dataset's day count. */
  days: number
  /** Per price field: the manifest digest of each complete row group, and a sha256 of the values
   * of the incomplete last one (dataset column order; null when there is none). */
  files: Record<string, { row_groups: string[]; partial: string | null }>
}

export interface StoreManifest {
  format: typeof STORE_FORMAT
  store_version: number
  model_version: string
  methodology_version: number
  data_as_of: string
  factor_set_id: string
  universe_size: number
  parameters: ModelParams
  /** classification = hash of the securities and factor tables (an incremental build needs them unchanged). */
  dataset: { digest: string; classification: string; source: unknown }
  calendar: { first: string; last: string; days: number }
  counts: { symbols: number; stocks: number; etfs: number }
  float_fields: string[]
  code_fields: string[]
  products: string[]
  /** null for a full build; the first recomputed day for an incremental one. */
  incremental_from: string | null
  /** Lets an incremental build check that history was not restated without reading it back; null when the dataset gives no row-group digests. */
  input_digests: InputDigests | null
  /** What the build decided (e.g. why an incremental request became a full build). */
  notes: string[]
  timings_s: Record<string, number>
  built_at: string
}
