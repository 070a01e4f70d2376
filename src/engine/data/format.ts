/**
 * The canonical dataset: the one input layout every later stage reads, whatever produced it
 * (`erm3 data synth` or `erm3 data import`). docs/data-format.md is the user-facing description
 * of the on-disk form; this file is the in-memory form and the constants both share.
 *
 * In memory, every panel is column-major: one Float64Array per symbol, indexed by calendar day,
 * with NaN for "no value". On disk NaN becomes a Parquet null.
 */

export const DATASET_FORMAT = 'erm3-dataset'
/** Version 2 splits the Parquet panels into row groups with a digest each; readers accept 1 too. */
export const DATASET_FORMAT_VERSION = 2
export const READABLE_FORMAT_VERSIONS: readonly number[] = [1, 2]
/** Days per row group of the Parquet panels (version 2), counted from the calendar's first day. */
export const PANEL_ROW_GROUP_DAYS = 256

export type AssetType = 'stock' | 'etf'

/**
 * One validity window of one security. A security (symbol key) has one or more windows; inside
 * a window its ticker, name and classification are constant. A ticker change is a new window of
 * the same symbol; ticker reuse is a window of a different symbol with the same ticker.
 */
export interface SecurityRow {
  /** Canonical symbol key, stable across ticker changes, never reused. */
  symbol: string
  ticker: string
  name: string
  assetType: AssetType
  /** Sector code (for stocks; the key of a `sector` factor row). */
  sector: string | null
  /** Industry code (for stocks; the key of a `subsector` factor row). */
  industry: string | null
  cik: number | null
  /** Inclusive ISO dates; validTo null = still valid. */
  validFrom: string
  validTo: string | null
}

export type FactorRole = 'market' | 'sector' | 'subsector' | 'macro' | 'style'

/**
 * The factor registry. `market`: code `MARKET`, the market ETF. `sector`: code = sector code.
 * `subsector`: code = industry code, ticker = its ETF or null when the industry has none (the
 * model then falls back to the sector ETF). `macro` and `style`: code = factor name; `kind` says
 * whether the series is an ETF in the price panel or an index level in the series table.
 */
export interface FactorRow {
  role: FactorRole
  code: string
  ticker: string | null
  kind: 'etf' | 'index'
}

export const PRICE_FIELDS = ['adj_close', 'close', 'volume', 'shares_out'] as const
export type PriceField = (typeof PRICE_FIELDS)[number]

/** Per-symbol series aligned to the calendar; NaN = missing (the engine's layout). */
export type { Panel } from '../model/panel.ts'

import type { Panel } from '../model/panel.ts'

export interface Prices {
  /** Required: total-return adjusted close. */
  adj_close: Panel
  /** Optional fields are null when the source has none at all. */
  close: Panel | null
  volume: Panel | null
  shares_out: Panel | null
}

/** Interest rates in fractions (0.045 = 4.5 %), on their own dates (not necessarily trading days). */
export interface Rates {
  /** Tenor labels in ascending maturity, e.g. `1m`, `3m`, `1y`, `10y`. */
  tenors: string[]
  days: Int32Array
  /** One array per tenor, aligned to `days`; NaN = no observation. */
  values: Float64Array[]
}

/** Non-tradable factor series (e.g. VIX spot level), aligned to the calendar. */
export interface Series {
  names: string[]
  values: Float64Array[]
}

/** A SEC companyfacts document (the JSON body of the SEC API), already gzip-compressed. */
export interface FundamentalsFile {
  cik: number
  gzipped: Uint8Array
}

/**
 * Known truth from the synthetic generator, per symbol and day (NaN where undefined): the
 * population hierarchical betas the model estimates (docs/methodology.md §5, against the ETFs in effect
 * that day), the idiosyncratic variance and the true L3 residual ER.
 */
export interface Truth {
  /** Single precision per symbol, as truth/*.parquet stores it (FLOAT columns). */
  fields: Record<TruthField, Float32Array[]>
  /** Free-form description of the generator parameters, recorded in truth/params.json. */
  params: Record<string, unknown>
}
export const TRUTH_FIELDS = ['beta_mkt', 'beta_sec', 'beta_sub', 'idio_var', 'l3_res_er'] as const
export type TruthField = (typeof TRUTH_FIELDS)[number]

export type SourceInfo =
  | { kind: 'synthetic'; seed: number; generator_version: number; params: Record<string, unknown> }
  | { kind: 'import'; inputs: { role: string; path: string; sha256: string }[] }
  /** Fetched from market-data vendors (`erm3 data fetch`, `erm3 update`): source names, ISO time. */
  | { kind: 'vendor'; sources: string[]; fetched_at: string | null }

export interface Dataset {
  source: SourceInfo
  /** Trading days (day numbers, ascending): the days on which the market ETF has a close. */
  calendar: Int32Array
  securities: SecurityRow[]
  factors: FactorRow[]
  /** Panel column order: one entry per distinct symbol key. */
  symbols: string[]
  prices: Prices
  rates: Rates | null
  series: Series | null
  fundamentals: FundamentalsFile[]
  truth: Truth | null
  /** Import findings (data-quality report); null for synthetic data. */
  report: ImportReport | null
  /**
   * Set by a tail read (ReadOptions.fromDay): the price and series panels hold values only from
   * this calendar index on; days before it are unspecified (zeros, in pages never touched: no
   * reader of a tail read may look at them). Absent or 0: complete.
   */
  panelsFrom?: number
}

export interface QualityFinding {
  kind: 'gap' | 'flat_run' | 'large_move' | 'dropped_rows' | 'note'
  symbol?: string
  /** ISO dates the finding covers (first … last). */
  from?: string
  to?: string
  detail: string
}

export interface ImportReport {
  findings: QualityFinding[]
  summary: Record<string, number | string>
}

/** Manifest written as manifest.json at the dataset root. */
export interface DatasetManifest {
  format: typeof DATASET_FORMAT
  format_version: number
  source: SourceInfo
  calendar: { first: string; last: string; days: number }
  counts: { symbols: number; stocks: number; etfs: number; security_rows: number; fundamentals: number }
  price_fields: PriceField[]
  rate_tenors: string[]
  series: string[]
  has_truth: boolean
  /** Every file of the dataset except manifest.json, with its digest. */
  files: Record<string, FileDigest>
  /** sha256 over the sorted `path sha256` lines of `files`: the identity of the dataset's content. */
  digest: string
}

export interface FileDigest {
  sha256: string
  bytes: number
  /**
   * Parquet panels (version 2): consecutive byte ranges covering the file — the leading magic,
   * one per row group, then the footer — each with its own digest, so a reader can check just
   * the row groups it decodes.
   */
  parts?: { bytes: number; sha256: string }[]
}
