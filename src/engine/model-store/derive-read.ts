/**
 * Reads fields the store does not hold (derived.ts) by reading their stored inputs and deriving
 * them: for one symbol's days, for many symbols' days (readInto), and for one day's
 * cross-section. A field whose derivation reads earlier days (a lookback) is derived from inputs
 * read that many days earlier, so every served day is the kernel's. The model store's reader and
 * the build's read-back both read through here.
 */
import { columnsOf } from '../model/columns.ts'
import type { Column, ZarrStoreReader } from '../zarr/index.ts'
import {
  type DerivationInput,
  type DerivedField,
  derivationPlan,
  deriveAll,
  derivedLookback,
  deriveRunner,
  readsEtfs,
} from './derived.ts'
import { CODE_FIELDS, STORE_FILES } from './layout.ts'

const EMPTY = new Float64Array(0)
/** Cross-sections with a lookback kept per store (27 KB each in the default market). */
const SECTION_CACHE = 64

/** Symbols per batch of a derived read of many symbols when the store's chunks do not say. */
const DERIVE_BATCH = 256

function storedPath(field: DerivationInput): string {
  return (CODE_FIELDS as readonly string[]).includes(field)
    ? STORE_FILES.code(field)
    : STORE_FILES.field(field)
}

export interface DerivedSource {
  zarr: ZarrStoreReader
  /** Whether symbol i is a stock (ETF rows carry no model fields). */
  isStock(symbol: number): boolean
  /** The symbol index of each ETF index (meta/etfs.json order). */
  etfSymbols: readonly number[]
}

export class DerivedReader {
  /** Cross-sections of fields with a lookback, oldest first (see crossSection). */
  private readonly sections = new Map<string, Promise<Float64Array>>()
  /** Each ETF's returns over the whole calendar, by ETF index, read once when first needed. */
  private readonly etfReturns = new Map<number, Promise<Column>>()

  constructor(private readonly src: DerivedSource) {}

  /**
   * The returns of the market ETF and of every ETF the codes in `read` name (the ETFs a
   * combined factor return reads), by ETF index; other entries are empty.
   */
  private async etf(
    read: Readonly<Record<string, readonly (ArrayLike<number> | undefined)[]>>,
  ): Promise<Column[]> {
    const n = this.src.etfSymbols.length
    const wanted = new Uint8Array(n)
    if (n > 0) wanted[0] = 1
    for (const code of ['sector_etf', 'subsector_etf'])
      for (const c of read[code] ?? []) {
        if (!c) continue
        // Codes run for months at a time: look at each run once.
        let last = -1
        for (let t = 0; t < c.length; t++) {
          const e = c[t]
          if (e !== last && e >= 0 && e < n) wanted[e] = 1
          last = e
        }
      }
    const out: Column[] = this.src.etfSymbols.map(() => EMPTY)
    await Promise.all(
      [...wanted.keys()]
        .filter((e) => wanted[e] === 1)
        .map(async (e) => {
          out[e] = await this.etfColumn(e)
        }),
    )
    return out
  }

  private etfColumn(e: number): Promise<Column> {
    let p = this.etfReturns.get(e)
    if (!p) {
      p = this.src.zarr.readColumn(STORE_FILES.field('returns_gross'), this.src.etfSymbols[e])
      this.etfReturns.set(e, p)
      p.catch(() => this.etfReturns.delete(e))
    }
    return p
  }

  /**
   * Days [from, to) of `fields` (derived) and `stored` (stored arrays, read alongside so a field
   * both asked for and needed as an input is read once) for one symbol.
   */
  async history(
    symbol: number,
    fields: readonly DerivedField[],
    stored: readonly Exclude<DerivationInput, DerivedField>[],
    from: number,
    to: number,
  ): Promise<Record<string, Column>> {
    const plan = derivationPlan(fields)
    const back = Math.max(0, ...fields.map(derivedLookback))
    const start = Math.max(0, from - back)
    const leaves = [...new Set([...plan.stored, ...stored])]
    const read: Record<string, Column> = {}
    await Promise.all(
      leaves.map(async (f) => {
        read[f] = await this.src.zarr.readColumn(storedPath(f), symbol, start, to)
      }),
    )
    const etf = readsEtfs(plan.order)
      ? await this.etf({ sector_etf: [read.sector_etf], subsector_etf: [read.subsector_etf] })
      : []
    const ctx = { day0: start, stock: this.src.isStock(symbol), etf }
    const all = { ...read, ...deriveAll(plan.order, read, ctx, to - start, from - start) }
    const out: Record<string, Column> = {}
    for (const f of [...fields, ...stored]) out[f] = all[f].subarray(from - start)
    return out
  }

  /**
   * One day's values of a derived field across all `n` symbols, from rows of its inputs (rows
   * read whole chunks, which the reader caches, so the earlier days of a lookback cost little).
   * A build never changes, so the last cross-sections with a lookback are kept (a copy is
   * returned: callers may write into it).
   */
  async crossSection(field: DerivedField, t: number, n: number): Promise<Float64Array> {
    if (derivedLookback(field) === 0) return this.deriveCrossSection(field, t, n)
    const key = `${field}@${t}`
    let hit = this.sections.get(key)
    if (!hit) {
      hit = this.deriveCrossSection(field, t, n)
      this.sections.set(key, hit)
      hit.catch(() => this.sections.delete(key))
      if (this.sections.size > SECTION_CACHE) {
        const oldest = this.sections.keys().next().value
        if (oldest !== undefined) this.sections.delete(oldest)
      }
    }
    return (await hit).slice()
  }

  private async deriveCrossSection(field: DerivedField, t: number, n: number): Promise<Float64Array> {
    const plan = derivationPlan([field])
    const back = derivedLookback(field)
    const start = Math.max(0, t - back)
    const len = t + 1 - start
    const rows: Record<string, Column[]> = {}
    await Promise.all(
      plan.stored.map(async (f) => {
        const days = Array.from({ length: len }, (_, k) => start + k)
        rows[f] = await Promise.all(days.map((d) => this.src.zarr.readRow(storedPath(f), d)))
      }),
    )
    if (back === 0) {
      // Elementwise all the way down: derive across the symbols of one row of each input.
      const read = Object.fromEntries(plan.stored.map((f) => [f, rows[f][0]]))
      return deriveAll(plan.order, read, { day0: t, stock: true, etf: [] }, n)[field]
    }
    const ctx = { day0: start, stock: true, etf: readsEtfs(plan.order) ? await this.etf(rows) : [] }
    const out = new Float64Array(n)
    const read: Record<string, Float64Array> = {}
    for (const f of plan.stored) read[f] = new Float64Array(len)
    const runner = deriveRunner(plan.order, len, len - 1)
    const result = runner.out[field]
    for (let i = 0; i < n; i++) {
      for (const f of plan.stored) {
        const days = read[f]
        const r = rows[f]
        for (let k = 0; k < len; k++) days[k] = r[k][i]
      }
      ctx.stock = this.src.isStock(i)
      runner.run(read, ctx)
      out[i] = result[len - 1]
    }
    return out
  }

  /**
   * Days [from, to) of symbols [first, first + n) of each field into its `targets` (n columns
   * each, at day offsets). The fields' inputs are read once for all of them.
   */
  async readInto(
    fields: readonly DerivedField[],
    first: number,
    from: number,
    to: number,
    targets: readonly Column[][],
  ): Promise<void> {
    const n = targets[0]?.length ?? 0
    if (to <= from || n === 0) return
    // A chunk's symbols at a time (each input chunk is read once), so the inputs of a
    // whole-store read never sit in memory at once.
    const width = this.src.zarr.meta(STORE_FILES.field('returns_gross')).chunks[1] ?? DERIVE_BATCH
    for (let b = 0; b < n; ) {
      const end = Math.min(n, (Math.floor((first + b) / width) + 1) * width - first)
      const batch = targets.map((t) => t.slice(b, end))
      await this.readBatch(fields, first + b, from, to, batch)
      b = end
    }
  }

  private async readBatch(
    fields: readonly DerivedField[],
    first: number,
    from: number,
    to: number,
    targets: readonly Column[][],
  ): Promise<void> {
    const plan = derivationPlan(fields)
    const start = Math.max(0, from - Math.max(...fields.map(derivedLookback)))
    const len = to - start
    const count = targets[0].length
    const inputs: Record<string, Float64Array[]> = {}
    await Promise.all(
      plan.stored.map((f) => {
        const views = columnsOf(Float64Array, count, to, false, start)
        inputs[f] = views
        return this.src.zarr.readInto(storedPath(f), first, start, to, views)
      }),
    )
    const days = (f: string) => inputs[f]?.map((v) => v.subarray(start)) ?? []
    const etf = readsEtfs(plan.order)
      ? await this.etf({ sector_etf: days('sector_etf'), subsector_etf: days('subsector_etf') })
      : []
    const runner = deriveRunner(plan.order, len, from - start)
    const cols = fields.map((f) => runner.out[f].subarray(from - start))
    const ctx = { day0: start, stock: true, etf }
    const read: Record<string, ArrayLike<number>> = {}
    for (let k = 0; k < count; k++) {
      for (const f of plan.stored) read[f] = inputs[f][k].subarray(start)
      ctx.stock = this.src.isStock(first + k)
      runner.run(read, ctx)
      for (let j = 0; j < fields.length; j++) targets[j][k].set(cols[j], from)
    }
  }
}
