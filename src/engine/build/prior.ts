import { columnsOf } from '../model/columns.ts'
import { STOCK_FIELDS, type StockField } from '../model/stock-kernel.ts'
import type { BlockBuffers } from './block-buffers.ts'
import type { EngineBlock } from './engine.ts'
import type { IncrementalPlan } from './incremental.ts'
import type { BuildInputs } from './inputs.ts'
import { kernelStateBlock } from './kernel-state.ts'

/**
 * Fields read back over that history: the input of the block's residual reversion (tail.ts
 * reversionFrom). The rankings read theirs back from the new store (products.ts).
 */
const TAIL_FIELDS: ReadonlySet<StockField> = new Set(['l3_rr'])
/** State the decomposition of the first new day reads from the day before it. */
const SEAM_FIELDS: ReadonlySet<StockField> = new Set([
  'l1_mkt_hr',
  'l2_mkt_hr',
  'l2_sec_hr',
  'l3_mkt_hr',
  'l3_sec_hr',
  'l3_sub_hr',
  'lstar_level',
])

const LEVEL_CODES: ReadonlySet<StockField> = new Set(['lstar_level', 'recommended_level'])

/**
 * Loads what the engine and the cross-sectional stage read of the days before `from`: the state
 * of day from - 1 that the decomposition of day `from` uses, and the reversion
 * inputs from loadFrom. Nothing else: the chunk holding `from` keeps its earlier days' bytes
 * from the previous build (BlockArray appends), so other days before `from` may hold anything.
 */
export function priorLoader(
  plan: IncrementalPlan,
  x: BuildInputs,
  /** The kernel's state: its style factors, and whether the run resumes from the stored one. */
  kernel: { styleFactors: number; resume: boolean },
) {
  const T = x.calendar.length
  return async (first: number, count: number, buffers: BlockBuffers): Promise<EngineBlock> => {
    const fields = {} as Record<StockField, Float64Array[]>
    const recyclable: Float64Array[] = []
    // Fields by the first day they load (codes apart): one readManyInto each, all in flight at
    // once, so the fields derived from the same stored inputs share their reads.
    const byFrom = new Map<number, StockField[]>()
    const codes: [StockField, number][] = []
    for (const f of STOCK_FIELDS) {
      const cols = buffers.columns(f, first, count, recyclable)
      // Not before loadFrom: the block's columns share their earlier days (BlockBuffers).
      cols.forEach((a, k) => {
        if (!x.isStock[first + k]) a.fill(Number.NaN, plan.loadFrom)
      })
      fields[f] = cols
      const from = TAIL_FIELDS.has(f) ? plan.loadFrom : SEAM_FIELDS.has(f) ? plan.from - 1 : plan.from
      if (from >= plan.from) continue
      if (LEVEL_CODES.has(f)) codes.push([f, from])
      else byFrom.set(from, [...(byFrom.get(from) ?? []), f])
    }
    // What the store holds for the other symbols (ETFs) is not wanted: their columns stay NaN.
    const discard = new Float64Array(T)
    const stocks = (cols: Float64Array[]) => cols.map((c, k) => (x.isStock[first + k] ? c : discard))
    let state: Float64Array[] = []
    await Promise.all([
      kernelStateBlock(first, count, kernel.styleFactors, kernel.resume ? plan.prev : null).then((s) => {
        state = s
      }),
      ...[...byFrom].map(([from, fs]) =>
        plan.prev.readManyInto(
          fs.map((f) => `fields/${f}`),
          first,
          from,
          plan.from,
          fs.map((f) => stocks(fields[f])),
        ),
      ),
      ...codes.map(([f, from]) => loadCodes(plan, x, f, first, fields[f], from)),
    ])
    // subEff needs no loading: the replay rewrites it from the day before its rebase day, after
    // the first day of the inputs, and nothing reads it before (columnsOf's firstDay).
    const subEff = columnsOf(Int16Array, count, T, false, plan.inputFrom)
    if (count > 0) new Int16Array(subEff[0].buffer).fill(-1)
    return { first, count, fields, subEff, state, recyclable }
  }
}

/** Days [from, plan.from) of the level code field f of the block's stocks, from the previous build. */
async function loadCodes(
  plan: IncrementalPlan,
  x: BuildInputs,
  f: StockField,
  first: number,
  cols: Float64Array[],
  from: number,
): Promise<void> {
  const codes = columnsOf(Int8Array, cols.length, plan.from, false, from)
  await plan.prev.readInto(`codes/${f}`, first, from, plan.from, codes)
  cols.forEach((c, k) => {
    if (!x.isStock[first + k]) return
    for (let t = from; t < plan.from; t++) c[t] = codes[k][t] === 0 ? Number.NaN : codes[k][t]
  })
}
