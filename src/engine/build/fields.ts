import type { Panel } from '../model/panel.ts'
import type { StockField } from '../model/stock-kernel.ts'
import { STORED_FLOAT_FIELDS } from '../model-store/derived.ts'
import { CODE_FIELDS, type CodeField, type FloatField } from '../model-store/layout.ts'
import type { StoreBuildWriter } from '../model-store/writer.ts'
import type { Column } from '../zarr/index.ts'
import type { EngineBlock } from './engine.ts'
import type { BuildInputs } from './inputs.ts'

/** Panels the cross-sectional stage needs after the per-stock engine (kept while blocks stream). */
export const KEPT_FIELDS = [
  'l1_mkt_er',
  'l2_mkt_er',
  'l2_sec_er',
  'l3_res_er',
  'l3_sub_er',
  'l2_rr',
  'l3_rr',
  'l1_mkt_beta',
  'l2_sec_beta',
  'l3_sub_beta',
] as const satisfies readonly StockField[]
type KeptField = (typeof KEPT_FIELDS)[number]

export interface Kept {
  fields: Record<KeptField, Panel>
  subEff: Int16Array[]
  lstar: Int8Array[]
}

export function emptyKept(): Kept {
  const fields = {} as Record<KeptField, Panel>
  for (const f of KEPT_FIELDS) fields[f] = []
  return { fields, subEff: [], lstar: [] }
}

const INPUT_FIELDS: Partial<Record<FloatField, (x: BuildInputs) => Panel>> = {
  returns_gross: (x) => x.returns,
  price_close: (x) => x.close,
  market_cap: (x) => x.marketCap,
}

/** Small-integer codes from a kernel series: levels 1..3 (0 = null) or style masks (0 = none). */
function codesOf<A extends Int8Array | Int16Array>(series: Float64Array[], make: (n: number) => A): A[] {
  // NaN converts to 0 in an integer typed array.
  return series.map((s) => {
    const out = make(s.length)
    for (let t = 0; t < s.length; t++) out[t] = s[t]
    return out
  })
}

/** Writes every stored field of one engine block and keeps what the cross-sectional stage needs. */
export async function writeBlockFields(
  w: StoreBuildWriter,
  x: BuildInputs,
  b: EngineBlock,
  kept: Kept,
): Promise<void> {
  const range = <T>(p: T[]) => p.slice(b.first, b.first + b.count)
  for (const f of STORED_FLOAT_FIELDS) {
    const fromInputs = INPUT_FIELDS[f]
    const cols = fromInputs ? range(fromInputs(x)) : b.fields[f as StockField]
    await w.writeBlock(`fields/${f}`, b.first, cols)
  }
  const int8 = (n: number) => new Int8Array(n)
  const lstar = codesOf(b.fields.lstar_level, int8)
  const codes: Record<CodeField, Column[]> = {
    lstar_level: lstar,
    recommended_level: codesOf(b.fields.recommended_level, int8),
    sector_etf: range(x.sec),
    subsector_etf: b.subEff,
    style_factors: codesOf(b.fields.style_factors, (n) => new Int16Array(n)),
  }
  for (const c of CODE_FIELDS) await w.writeBlock(`codes/${c}`, b.first, codes[c])
  for (const f of KEPT_FIELDS) kept.fields[f].push(...b.fields[f])
  kept.subEff.push(...b.subEff)
  kept.lstar.push(...lstar)
}
