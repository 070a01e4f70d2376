import { FACTORS } from '../data/factors.ts'
import { columnsOf } from '../model/columns.ts'
import type { Panel } from '../model/panel.ts'
import type { StockField } from '../model/stock-kernel.ts'
import { STORED_FLOAT_FIELDS } from '../model-store/derived.ts'
import {
  CODE_FIELDS,
  type CodeDType,
  type CodeField,
  codeDType,
  type FloatField,
  STORE_FILES,
} from '../model-store/layout.ts'
import type { StoreBuildWriter } from '../model-store/writer.ts'
import type { Column } from '../zarr/index.ts'
import type { EngineBlock } from './engine.ts'
import type { BuildInputs } from './inputs.ts'
import { reversionFrom } from './tail.ts'

/** The reversion z array, written block by block with the fields (products.ts reads it back). */
export const REVERSION_Z = 'products/reversion_z'

/** Stored fields that are build inputs, not kernel outputs. */
const INPUT_FIELDS: Partial<Record<FloatField, (x: BuildInputs) => Panel>> = {
  returns_gross: (x) => x.returns,
  price_close: (x) => x.close,
  market_cap: (x) => x.marketCap,
}

/**
 * Writes the stored fields that are build inputs (returns, close, market cap), block by block as
 * the engine would. A build starts this before the engine and then drops the close panel, which
 * nothing after it reads.
 */
export async function writeInputFields(
  w: StoreBuildWriter,
  x: BuildInputs,
  blockSize: number,
): Promise<void> {
  for (const [f, panel] of Object.entries(INPUT_FIELDS)) {
    const cols = panel(x)
    for (let first = 0; first < cols.length; first += blockSize)
      await w.writeBlock(`fields/${f}`, first, cols.slice(first, first + blockSize))
  }
}

const STYLE_FACTORS = FACTORS.filter((f) => f.group === 'style').length

/** The type of each code array of the build of `x` (codeDType): by its ETF and style factor counts. */
export function codeDTypes(x: Pick<BuildInputs, 'etfTickers'>): Record<CodeField, CodeDType> {
  const counts = { etfs: x.etfTickers.length, styleFactors: STYLE_FACTORS }
  return Object.fromEntries(CODE_FIELDS.map((c) => [c, codeDType(c, counts)])) as Record<CodeField, CodeDType>
}

const CODE_ARRAYS = { int8: Int8Array, uint8: Uint8Array, int16: Int16Array } as const

/**
 * Codes of type `dtype` from a kernel series (levels 1..3, 0 = null; style masks, 0 = none) or
 * from codes of another type (ETF codes), for days from `start` on (an incremental build's
 * arrays take their earlier days from the previous build: BlockArray appends). Columns already
 * of the type are returned as they are.
 */
function codesOf(series: (Float64Array | Int16Array)[], dtype: CodeDType, start: number): Column[] {
  const Ctor = CODE_ARRAYS[dtype]
  if (series.every((s) => s instanceof Ctor)) return series as Column[]
  const out = columnsOf<Column & (Int8Array | Uint8Array | Int16Array)>(
    Ctor,
    series.length,
    series[0]?.length ?? 0,
    false,
    start,
  )
  // NaN converts to 0 in an integer typed array.
  series.forEach((s, j) => {
    const o = out[j]
    for (let t = start; t < s.length; t++) o[t] = s[t]
  })
  return out
}

/**
 * Writes every stored field of one engine block but the inputs (writeInputFields), and the block's residual reversion z (a
 * product that depends only on each stock's own l3_rr, valid from day `start` on: tail.ts), so
 * no panel outlives its block; the rest of the cross-sectional stage reads the fields back from
 * the store (products.ts).
 */
export async function writeBlockFields(
  w: StoreBuildWriter,
  x: BuildInputs,
  b: EngineBlock,
  start: number,
): Promise<void> {
  const range = <T>(p: T[]) => p.slice(b.first, b.first + b.count)
  for (const f of STORED_FLOAT_FIELDS) {
    if (INPUT_FIELDS[f]) continue
    await w.writeBlock(`fields/${f}`, b.first, b.fields[f as StockField])
  }
  const dtypes = codeDTypes(x)
  const codes: Record<CodeField, Column[]> = {
    lstar_level: codesOf(b.fields.lstar_level, dtypes.lstar_level, start),
    recommended_level: codesOf(b.fields.recommended_level, dtypes.recommended_level, start),
    sector_etf: codesOf(range(x.sec), dtypes.sector_etf, start),
    subsector_etf: codesOf(b.subEff, dtypes.subsector_etf, start),
    style_factors: codesOf(b.fields.style_factors, dtypes.style_factors, start),
  }
  for (const c of CODE_FIELDS) await w.writeBlock(`codes/${c}`, b.first, codes[c])
  await w.writeBlock(REVERSION_Z, b.first, reversionFrom(b.fields.l3_rr, start))
  await w.writeBlock(STORE_FILES.kernelState, b.first, b.state)
}
