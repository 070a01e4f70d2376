import type { Panel } from '../../model/panel.ts'
import type { StockField } from '../../model/stock-kernel.ts'
import { CODE_FIELDS, type CodeField, FLOAT_FIELDS, type FloatField } from '../../store/model-store/layout.ts'
import type { StoreBuildWriter } from '../../store/model-store/writer.ts'
import type { Column } from '../../store/zarr/index.ts'
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
export type KeptField = (typeof KEPT_FIELDS)[number]

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

function levelCodes(series: Float64Array[]): Int8Array[] {
  // Levels 1..3 as int8; 0 stands for null (NaN converts to 0 in an Int8Array).
  return series.map((s) => {
    const out = new Int8Array(s.length)
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
  for (const f of FLOAT_FIELDS) {
    const fromInputs = INPUT_FIELDS[f]
    const cols = fromInputs ? range(fromInputs(x)) : b.fields[f as StockField]
    await w.writeBlock(`fields/${f}`, b.first, cols)
  }
  const lstar = levelCodes(b.fields.lstar_level)
  const codes: Record<CodeField, Column[]> = {
    lstar_level: lstar,
    recommended_level: levelCodes(b.fields.recommended_level),
    sector_etf: range(x.sec),
    subsector_etf: b.subEff,
  }
  for (const c of CODE_FIELDS) await w.writeBlock(`codes/${c}`, b.first, codes[c])
  for (const f of KEPT_FIELDS) kept.fields[f].push(...b.fields[f])
  kept.subEff.push(...b.subEff)
  kept.lstar.push(...lstar)
}
