import { createHash } from 'node:crypto'
import type { ModelParams } from '../../model/params.ts'
import { STOCK_FIELDS, type StockField } from '../../model/stock-kernel.ts'
import { MODEL_VERSION, STORE_VERSION } from '../../store/model-store/layout.ts'
import { ModelStore } from '../../store/model-store/reader.ts'
import type { BlockBuffers } from './block-buffers.ts'
import type { EngineBlock } from './engine.ts'
import type { BuildInputs } from './inputs.ts'

const CHUNK_DAYS = 256
/**
 * History the reversion z of the new days needs: its rolling variance is rebuilt exactly on days
 * t % 60 == 0 from the 60-day window, so a day depends on at most 59 + 59 earlier days.
 */
const REVERSION_TAIL = 128
/** History the data_as_of rankings need (252-day windows, with margin). */
const RANKING_TAIL = 256
/** Fields read back over that history: the inputs of reversion and rankings. */
const TAIL_FIELDS: ReadonlySet<StockField> = new Set([
  'l2_rr',
  'l3_rr',
  'l1_mkt_er',
  'l2_mkt_er',
  'l2_sec_er',
  'l3_res_er',
])
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

export interface IncrementalPlan {
  prev: ModelStore
  /** First new day (the previous build's day count). */
  from: number
  /** First day of the first day-chunk that is rewritten; earlier chunks are hard-linked. */
  chunkStart: number
  /** First day of the reversion/ranking inputs loaded back. */
  loadFrom: number
}

/**
 * Decides whether the dataset only appends days to what the current build was made from. Any
 * other change (parameters, symbols, classification, a restated price) needs a full build: the
 * reason is returned instead of a plan.
 */
export async function planIncremental(
  storeRoot: string,
  x: BuildInputs,
  params: ModelParams,
  classificationDigest: string,
): Promise<IncrementalPlan | { reason: string }> {
  let prev: ModelStore
  try {
    prev = await ModelStore.open(storeRoot)
  } catch {
    return { reason: 'no current build to extend' }
  }
  const no = async (reason: string) => {
    await prev.close()
    return { reason }
  }
  const m = prev.manifest
  // The same versions write the same arrays and layouts: only those can be extended in place.
  if (m.model_version !== MODEL_VERSION || m.store_version !== STORE_VERSION)
    return no('the current build was made by another model or store version')
  if (JSON.stringify(m.parameters) !== JSON.stringify(params)) return no('model parameters changed')
  if (m.dataset.classification !== classificationDigest) return no('securities or factor registry changed')
  const T0 = prev.calendar.length
  if (T0 >= x.calendar.length) return no('the dataset has no new days')
  for (let t = 0; t < T0; t++)
    if (prev.calendar[t] !== x.calendar[t]) return no('the calendar history changed')
  if (prev.symbols.length !== x.symbols.length || prev.symbols.some((s, i) => s.symbol !== x.symbols[i])) {
    return no('the symbol list changed (new listings)')
  }
  // The old days' inputs must be bit-identical: compare digests, not the store's arrays.
  if (!m.input_digests) return no('the current build has no input digests')
  const now = inputDigests(x, T0)
  for (const [field, digest] of Object.entries(m.input_digests)) {
    if (now[field] !== digest) return no(`${field} changed before ${prev.date(T0 - 1)} (restated history)`)
  }
  const chunkStart = Math.floor(T0 / CHUNK_DAYS) * CHUNK_DAYS
  const T = x.calendar.length
  return {
    prev,
    from: T0,
    chunkStart,
    loadFrom: Math.max(0, Math.min(T0 - REVERSION_TAIL, T - 1 - RANKING_TAIL)),
  }
}

/** sha256 of each input panel over days [0, days), symbols in build order. */
export function inputDigests(x: BuildInputs, days: number): Record<string, string> {
  const out: Record<string, string> = {}
  for (const [field, panel] of [
    ['returns_gross', x.returns],
    ['price_close', x.close],
    ['market_cap', x.marketCap],
  ] as const) {
    const h = createHash('sha256')
    for (const s of panel) h.update(new Uint8Array(s.buffer, s.byteOffset, days * 8))
    out[field] = h.digest('hex')
  }
  return out
}

const LEVEL_CODES: ReadonlySet<StockField> = new Set(['lstar_level', 'recommended_level'])

/**
 * Loads what the engine and the cross-sectional stage read of the days before `from`: the state
 * of day from - 1 that the decomposition of day `from` uses, and the reversion and ranking
 * inputs from loadFrom. Nothing else: the chunk holding `from` keeps its earlier days' bytes
 * from the previous build (BlockArray appends), so other days before `from` may hold anything.
 */
export function priorLoader(plan: IncrementalPlan, x: BuildInputs) {
  const T = x.calendar.length
  return async (first: number, count: number, buffers: BlockBuffers): Promise<EngineBlock> => {
    const fields = {} as Record<StockField, Float64Array[]>
    const recyclable: Float64Array[] = []
    for (const f of STOCK_FIELDS) {
      const cols = buffers.columns(f, first, count, recyclable)
      cols.forEach((a, k) => {
        if (!x.isStock[first + k]) a.fill(Number.NaN)
      })
      const from = TAIL_FIELDS.has(f) ? plan.loadFrom : SEAM_FIELDS.has(f) ? plan.from - 1 : plan.from
      if (from < plan.from) await loadField(plan, x, f, first, cols, from, T)
      fields[f] = cols
    }
    // subEff needs no loading: the replay rewrites it from the rebase day, which is chunkStart.
    const subEff = Array.from({ length: count }, () => new Int16Array(T).fill(-1))
    return { first, count, fields, subEff, recyclable }
  }
}

/** Days [from, plan.from) of field f of the block's stocks, from the previous build. */
async function loadField(
  plan: IncrementalPlan,
  x: BuildInputs,
  f: StockField,
  first: number,
  cols: Float64Array[],
  from: number,
  T: number,
): Promise<void> {
  if (LEVEL_CODES.has(f)) {
    const codes = cols.map(() => new Int8Array(plan.from))
    await plan.prev.readInto(`codes/${f}`, first, from, plan.from, codes)
    cols.forEach((c, k) => {
      if (!x.isStock[first + k]) return
      for (let t = from; t < plan.from; t++) c[t] = codes[k][t] === 0 ? Number.NaN : codes[k][t]
    })
    return
  }
  const stocks = cols.map((c, k) => (x.isStock[first + k] ? c : new Float64Array(T)))
  await plan.prev.readInto(`fields/${f}`, first, from, plan.from, stocks)
}
