import { BETA_FIELDS, DECOMP_FIELDS, LEVEL_FIELDS } from '../../platform/metric-fields.ts'
import type { DefaultUniverseName, UniverseBasis, WeightBasis } from '../model/cross/universe.ts'
import type { ModelParams } from '../model/params.ts'

/**
 * The model store: a directory of Zarr v3 arrays [day, symbol] plus manifest.json, readable by
 * zarr-python / xarray as well as by erm3. A store root holds several builds and a pointer:
 *
 *   <root>/CURRENT            {"build": "<id>"}, replaced atomically (rename) at the end of a build
 *   <root>/builds/<id>/       one complete build (manifest.json, zarr.json, arrays …)
 *
 * The same layout under s3://bucket/prefix or an HTTP URL is a published store (erm3 publish):
 * its builds also hold STORE_FILES.listing.
 *
 * Readers resolve CURRENT once and never see a half-written build.
 */
export const STORE_FORMAT = 'erm3-model-store'
/**
 * 2: the fields derived at read time (engine/model-store/derived.ts) are no longer stored. 3: more
 * fields derived, symbol chunks fitted to the universe. 4: chunk files "c.<i>.<k>" beside each
 * array's zarr.json (no chunk directories), the rankings of data_as_of in two arrays instead of
 * 196, the kernel state. A store of another version is refused (`rebuild the store`): `erm3
 * start` and the sandbox rebuild it, and an incremental build becomes a full one.
 */
export const STORE_VERSION = 4
/** The methodology and model versions live in platform (one source for code and docs). */
export { METHODOLOGY_VERSION, MODEL_VERSION } from '../../platform/model-version.ts'
export const FACTOR_SET_ID = 'SPY_uni_mc_3000'

export const STORE_FILES = {
  current: 'CURRENT',
  builds: 'builds',
  /**
   * {"files": {"<path>": bytes}}: every file of a published build (erm3 publish), written after
   * them and before CURRENT. Remote readers find the arrays and absent chunks from it.
   */
  listing: 'erm3-files.json',
  manifest: 'manifest.json',
  calendar: 'calendar',
  symbols: 'meta/symbols.json',
  etfs: 'meta/etfs.json',
  industries: 'meta/industries.json',
  field: (name: string) => `fields/${name}`,
  code: (name: string) => `codes/${name}`,
  product: (name: string) => `products/${name}`,
  factors: 'meta/factors.json',
  factorReturns: 'factors/returns',
  vixLevel: 'factors/vix_level',
  /**
   * Parsed SEC fundamentals, one gzip-compressed JSON document per company
   * (engine/data/fundamentals/stored.ts). Builds made before the digests were compressed hold
   * `fundamentals/CIK##########.json` instead: ModelStore.document reads that name when this one
   * is missing.
   */
  fundamentals: (cik: number) => `fundamentals/CIK${String(cik).padStart(10, '0')}.json.gz`,
  /** Interest-rate curves on their own dates: {tenors, days, values (null = none)}. */
  rates: 'meta/rates.json',
  /**
   * float64 [value, symbol]: each stock's per-stock kernel state after the build's last day
   * (engine/build/kernel-state.ts), from which the next incremental build continues.
   */
  kernelState: 'kernel/state',
  /**
   * The rankings of data_as_of (docs/model-store.md §rankings): float64 [ranking, symbol], the
   * ranked values of the 28 metric × window rankings (RANKING_ROWS order).
   */
  rankingValues: 'rankings/value',
  /** int16 [ranking × cohort column, symbol]: per ranking, RANKING_COHORT_COLUMNS. */
  rankingCohorts: 'rankings/cohort',
} as const

/** The rows of a ranking's cohort columns in STORE_FILES.rankingCohorts, in order. */
export const RANKING_COHORT_COLUMNS = [
  'ordinal_universe',
  'ordinal_sector',
  'ordinal_subsector',
  'size_universe',
  'size_sector',
  'size_subsector',
] as const

/** The most symbols in one chunk of a [day, symbol] array. */
const MAX_CHUNK_SYMBOLS = 256

/**
 * Symbols per chunk of every [day, symbol] array of a store of `n` symbols: the fewest chunks of
 * at most MAX_CHUNK_SYMBOLS, filled evenly, so the last one pads fewer than one symbol per chunk
 * (3,383 symbols: 14 chunks of 242, 5 padding; 257: 2 of 129). The build's engine blocks are one
 * chunk column each. Readers take the shape from each array's zarr.json.
 */
export function chunkSymbolsFor(n: number): number {
  if (n <= 0) return MAX_CHUNK_SYMBOLS
  return Math.ceil(n / Math.ceil(n / MAX_CHUNK_SYMBOLS))
}

/**
 * One column of `factors/returns` (meta/factors.json, in column order): the macro and style
 * factors of docs/methodology.md §13. `present` is false when the dataset has no series for the proxy
 * (its column is then all null).
 */
export interface FactorMeta {
  key: string
  group: 'macro' | 'style'
  ticker: string
  kind: 'etf' | 'index'
  present: boolean
}

/**
 * Float fields per stock-day, named as in the interface spec (MetricsV3). The store holds those of
 * derived.ts's STORED_FLOAT_FIELDS; the others are computed from them when read.
 */
export const FLOAT_FIELDS = [
  'returns_gross',
  'price_close',
  'market_cap',
  'stock_var',
  'vol_23d',
  'vol_252d_ann',
  ...LEVEL_FIELDS,
  ...DECOMP_FIELDS,
  ...BETA_FIELDS,
  'l3_style_er',
] as const
export type FloatField = (typeof FLOAT_FIELDS)[number]

/**
 * Small-integer codes per stock-day: levels (0 = null), ETF indices (-1 = none) and the style
 * factors of the style split (bit j = style factor j of meta/factors.json's style group took part;
 * 0 = none).
 */
export const CODE_FIELDS = [
  'lstar_level',
  'recommended_level',
  'sector_etf',
  'subsector_etf',
  'style_factors',
] as const
export type CodeField = (typeof CODE_FIELDS)[number]

/** The integer types a code array is stored as. */
export type CodeDType = 'int8' | 'uint8' | 'int16'

/**
 * The narrowest type of a code array of a build with `etfs` ETF codes (meta/etfs.json) and
 * `styleFactors` style factors: ETF codes (0..etfs − 1, −1 = none) int8 up to 127 ETFs, else
 * int16; style masks (bit j per style factor) uint8 up to 8 style factors, else int16; levels
 * int8. Readers take the type from each array's zarr.json.
 */
export function codeDType(field: CodeField, counts: { etfs: number; styleFactors: number }): CodeDType {
  if (field === 'sector_etf' || field === 'subsector_etf') return counts.etfs <= 127 ? 'int8' : 'int16'
  if (field === 'style_factors') return counts.styleFactors <= 8 ? 'uint8' : 'int16'
  return 'int8'
}

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

/** Digests of the dataset's price panels a build was made from (engine/build/input-digests.ts). */
export interface InputDigests {
  /** Days per dataset row group. */
  row_group_days: number
  /** The dataset's day count. */
  days: number
  /** Per price field: the manifest digest of each complete row group, and a sha256 of the values
   * of the incomplete last one (dataset column order; null when there is none). */
  files: Record<string, { row_groups: string[]; partial: string | null }>
}

/**
 * What a store's data is, as every response says (`_metadata.dataset`, /health): erm3's synthetic
 * market (generated, never market data), prices the operator imported, or market data erm3
 * fetched from vendors (`erm3 data fetch`, `erm3 update`; `sources` names them).
 */
export type DatasetOrigin =
  | { kind: 'synthetic'; seed: number }
  | { kind: 'imported' }
  | { kind: 'vendor'; sources: string[] }

/**
 * From the dataset's `source` (its manifest.json): `{kind: 'synthetic', seed}`, `{kind: 'import', …}`
 * or `{kind: 'vendor', sources, …}`.
 */
export function datasetOrigin(source: unknown): DatasetOrigin {
  const s = (source ?? {}) as { kind?: unknown; seed?: unknown; sources?: unknown }
  if (s.kind === 'synthetic' && typeof s.seed === 'number') return { kind: 'synthetic', seed: s.seed }
  if (s.kind === 'vendor' && Array.isArray(s.sources))
    return { kind: 'vendor', sources: s.sources.filter((x): x is string => typeof x === 'string') }
  return { kind: 'imported' }
}

/** `vendor data (tiingo, sec)`: what a vendor-fetched store serves, in words. */
export function vendorLabel(sources: readonly string[]): string {
  return `vendor data (${sources.length > 0 ? sources.join(', ') : 'unnamed sources'})`
}

/** The manifest's words for a synthetic store, so nobody reading it takes the numbers for market data. */
export function syntheticNotice(seed: number): string {
  return `SYNTHETIC DATA: a market generated by erm3 (seed ${seed}); the tickers and names of large companies are labels, not their market data.`
}

export interface StoreManifest {
  format: typeof STORE_FORMAT
  store_version: number
  model_version: string
  methodology_version: number
  data_as_of: string
  factor_set_id: string
  /** Active members of the default universe at data_as_of. */
  universe_size: number
  /**
   * How the default universe (ranking cohorts, industry panel, reversion deciles) was formed
   * (docs/methodology.md §11): market_cap = uni_mc_3000; dollar_volume = uni_dv_3000 (no market caps);
   * all_valid = every valid stock (no market caps, no volume).
   */
  universe_basis: UniverseBasis
  default_universe: DefaultUniverseName
  /** Industry-panel weights: ln(1 + market_cap), or 1 per member without market caps. */
  weight_basis: WeightBasis
  parameters: ModelParams
  /**
   * `kind` (and `seed`, `notice` when synthetic) say what the data is; `source` is the dataset's
   * own record of where it came from. classification = hash of the securities and factor tables
   * (an incremental build needs them unchanged). Stores built before `kind` existed lack it:
   * readers derive it from `source` (datasetOrigin).
   */
  dataset: {
    kind?: DatasetOrigin['kind']
    seed?: number
    notice?: string
    digest: string
    classification: string
    source: unknown
  }
  calendar: { first: string; last: string; days: number }
  counts: { symbols: number; stocks: number; etfs: number }
  float_fields: string[]
  code_fields: string[]
  products: string[]
  /** null for a full build; the first recomputed day for an incremental one. */
  incremental_from: string | null
  /** Lets an incremental build check that history was not restated without reading it back; null when the dataset gives no row-group digests. */
  input_digests: InputDigests | null
  /**
   * sha256 of the dataset's fundamentals files (names and digests): an incremental build whose
   * dataset has the same one links the previous build's parsed fundamentals instead of parsing
   * them again. Absent in builds made before it existed.
   */
  fundamentals_digest?: string
  /** What the build decided (e.g. why an incremental request became a full build). */
  notes: string[]
  timings_s: Record<string, number>
  built_at: string
}
