import type { ModelParams } from '../../model/params.ts'
import { STOCK_FIELDS, type StockField } from '../../model/stock-kernel.ts'
import { ModelStore } from '../../store/model-store/reader.ts'
import type { EngineBlock } from './engine.ts'
import type { BuildInputs } from './inputs.ts'

/** Days of history before the first rewritten chunk that the tail stages read back (rankings need 252). */
const TAIL_DAYS = 320
const CHUNK_DAYS = 256

export interface IncrementalPlan {
  prev: ModelStore
  /** First new day (the previous build's day count). */
  from: number
  /** First day of the first day-chunk that is rewritten; earlier chunks are hard-linked. */
  chunkStart: number
  /** First day whose previous outputs are loaded (the tail the rankings and reversion need). */
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
  if (JSON.stringify(m.parameters) !== JSON.stringify(params)) return no('model parameters changed')
  if (m.dataset.classification !== classificationDigest) return no('securities or factor registry changed')
  const T0 = prev.calendar.length
  if (T0 >= x.calendar.length) return no('the dataset has no new days')
  for (let t = 0; t < T0; t++)
    if (prev.calendar[t] !== x.calendar[t]) return no('the calendar history changed')
  if (prev.symbols.length !== x.symbols.length || prev.symbols.some((s, i) => s.symbol !== x.symbols[i])) {
    return no('the symbol list changed (new listings)')
  }
  for (const [field, panel] of [
    ['returns_gross', x.returns],
    ['price_close', x.close],
    ['market_cap', x.marketCap],
  ] as const) {
    const old = (await prev.readAll(`fields/${field}`)) as Float64Array[]
    for (let i = 0; i < old.length; i++) {
      const a = old[i]
      const b = panel[i]
      for (let t = 0; t < T0; t++) {
        if (!Object.is(a[t], b[t]))
          return no(`${field} of ${x.symbols[i]} changed on ${prev.date(t)} (restated history)`)
      }
    }
  }
  const chunkStart = Math.floor(T0 / CHUNK_DAYS) * CHUNK_DAYS
  return { prev, from: T0, chunkStart, loadFrom: Math.max(0, chunkStart - TAIL_DAYS) }
}

const LEVEL_CODES: ReadonlySet<StockField> = new Set(['lstar_level', 'recommended_level'])

/**
 * Loads the previous build's outputs of days [loadFrom, from) into a block of full-length
 * arrays; the engine then fills days >= from. Days before loadFrom stay NaN: they live in
 * hard-linked chunks and no later stage reads them.
 */
export function priorLoader(plan: IncrementalPlan, x: BuildInputs) {
  const T = x.calendar.length
  return async (first: number, count: number): Promise<EngineBlock> => {
    const fields = {} as Record<StockField, Float64Array[]>
    for (const f of STOCK_FIELDS) {
      // Zero pages before loadFrom are never touched (no NaN fill): those days live in linked
      // chunks and no later stage reads them.
      const cols = Array.from({ length: count }, (_, k) =>
        x.isStock[first + k] ? new Float64Array(T) : new Float64Array(T).fill(Number.NaN),
      )
      if (LEVEL_CODES.has(f)) {
        const codes = cols.map(() => new Int8Array(plan.from))
        await plan.prev.readInto(`codes/${f}`, first, plan.loadFrom, plan.from, codes)
        cols.forEach((c, k) => {
          if (!x.isStock[first + k]) return
          for (let t = plan.loadFrom; t < plan.from; t++) c[t] = codes[k][t] === 0 ? Number.NaN : codes[k][t]
        })
      } else {
        const stocks = cols.map((c, k) => (x.isStock[first + k] ? c : new Float64Array(T)))
        await plan.prev.readInto(`fields/${f}`, first, plan.loadFrom, plan.from, stocks)
      }
      fields[f] = cols
    }
    // subEff needs no loading: the replay rewrites it from the rebase day, which is chunkStart.
    const subEff = Array.from({ length: count }, () => new Int16Array(T).fill(-1))
    return { first, count, fields, subEff }
  }
}
