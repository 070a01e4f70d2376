/**
 * What a build writes about itself: the store manifest, the symbols' metadata, and the
 * classification digest an incremental build compares (split from index.ts, the build's stages).
 */

import { isoFromDay } from '../../platform/dates.ts'
import { sha256Hex } from '../../platform/digest.ts'
import type { Dataset, DatasetManifest } from '../data/format.ts'
import type { DefaultUniverseBasis } from '../model/cross/index.ts'
import type { ModelParams } from '../model/params.ts'
import { STORED_FLOAT_FIELDS } from '../model-store/derived.ts'
import {
  CODE_FIELDS,
  type DatasetOrigin,
  datasetOrigin,
  FACTOR_SET_ID,
  METHODOLOGY_VERSION,
  MODEL_VERSION,
  STORE_FORMAT,
  STORE_VERSION,
  type StoreManifest,
  type SymbolMeta,
  syntheticNotice,
} from '../model-store/layout.ts'
import type { BuildInputs } from './inputs.ts'

/** Identity of the classification inputs (securities and factor registry). */
export function classificationDigest(dm: DatasetManifest): string {
  return sha256Hex(`${dm.files['securities.csv']?.sha256 ?? ''} ${dm.files['factors.csv']?.sha256 ?? ''}`)
}

export function storeManifest(
  ds: Dataset,
  digest: string,
  classification: string,
  x: BuildInputs,
  params: ModelParams,
  products: { universeSize: number; names: string[]; basis: DefaultUniverseBasis },
  timings: Record<string, number>,
): StoreManifest {
  const T = x.calendar.length
  let stocks = 0
  for (const v of x.isStock) stocks += v
  return {
    format: STORE_FORMAT,
    store_version: STORE_VERSION,
    model_version: MODEL_VERSION,
    methodology_version: METHODOLOGY_VERSION,
    data_as_of: isoFromDay(x.calendar[T - 1]),
    factor_set_id: FACTOR_SET_ID,
    universe_size: products.universeSize,
    universe_basis: products.basis.universe_basis,
    default_universe: products.basis.default_universe,
    weight_basis: products.basis.weight_basis,
    parameters: params,
    dataset: { ...datasetFields(ds.source), digest, classification, source: ds.source },
    calendar: { first: isoFromDay(x.calendar[0]), last: isoFromDay(x.calendar[T - 1]), days: T },
    counts: { symbols: x.symbols.length, stocks, etfs: x.symbols.length - stocks },
    float_fields: [...STORED_FLOAT_FIELDS],
    code_fields: [...CODE_FIELDS],
    products: products.names,
    incremental_from: null,
    input_digests: null,
    notes: [],
    timings_s: timings,
    built_at: new Date().toISOString(),
  }
}

/** `kind` first, so the manifest says at a glance what the data is. */
function datasetFields(source: unknown): {
  kind: DatasetOrigin['kind']
  seed?: number
  sources?: string[]
  notice?: string
} {
  const o = datasetOrigin(source)
  return o.kind === 'synthetic' ? { ...o, notice: syntheticNotice(o.seed) } : o
}

/** Metadata in the build's symbol order (the arrays' symbol axis). */
export function symbolMeta(ds: Dataset, symbols: string[]): SymbolMeta[] {
  const rows = new Map<string, Dataset['securities']>()
  for (const r of ds.securities) rows.set(r.symbol, [...(rows.get(r.symbol) ?? []), r])
  return symbols.map((symbol) => {
    const rs = [...(rows.get(symbol) ?? [])].sort((a, b) => a.validFrom.localeCompare(b.validFrom))
    const last = rs[rs.length - 1]
    return {
      symbol,
      tickers: rs.map((r) => ({ ticker: r.ticker, from: r.validFrom, to: r.validTo })),
      name: last?.name ?? symbol,
      asset_type: last?.assetType ?? 'etf',
      sector: last?.sector ?? null,
      industry: last?.industry ?? null,
      cik: last?.cik ?? null,
    }
  })
}
