import { type CodeField, FLOAT_FIELDS, type FloatField } from './layout.ts'

/**
 * Float fields the kernel computes as exact functions of other stored values
 * (engine/model/stock-kernel.ts, engine/model/cascade.ts). The store does not hold them: the
 * reader computes them from their inputs with the very same floating-point operations, so the
 * values served are bit for bit the kernel's (docs/model-store.md, "Fields derived when read").
 *
 * Same day (elementwise, so a cross-section derives them across symbols):
 * - l1_res_er = 1 − l1_mkt_er, l2_res_er = 1 − l2_mkt_er − l2_sec_er,
 *   l3_res_er = 1 − l3_mkt_er − l3_sec_er − l3_sub_er (cascade.ts closes the sum with
 *   1 − erM − erS − erU, a level's absent legs are exactly 0, and the subsector fallback copies
 *   L2 with l3_sub_er = 0)
 * - l1_mkt_hr = l1_mkt_beta + 0, l2_sec_hr = l2_sec_beta, l3_sub_hr = l3_sub_beta (cascade.ts's
 *   hedge ratios with the absent legs' exact zeros: hrM = βm − 0 − 0 + 0, whose + 0 turns −0 into
 *   +0; hrS = βs − 0; hrU = βu). On a subsector-fallback day l3_sub_beta is null and l3_sub_hr is
 *   0; a day without an L3 model has both null, and then l3_mkt_hr is null too (an L3 solved
 *   with a null βu has a null hrM, which carries the term βu·λum).
 * - vol_23d = √(252 · stock_var)
 * Over earlier days:
 * - stock_var on day t: the sample variance of the non-null returns of days t − 22 … t when
 *   there are at least 20 (stocks only; engine/model/stock-kernel.ts writeVols)
 * - l1_cfr, l2_cfr, l3_cfr on day t: the hedge ratios of day t − 1 times day t's ETF returns,
 *   the ETFs those of day t − 1 (codes sector_etf and subsector_etf), when the stock has a
 *   return on day t and t > 0 (stock-kernel.ts decompose)
 * - l1_fr = l1_cfr, l2_fr = l2_cfr − l1_cfr, l3_fr = l3_cfr − l2_cfr; lN_rr = returns_gross − lN_cfr
 * - lstar_rr on day t = lN_rr on day t, N the L* level of day t − 1 (code 0, or day 0: null)
 */
export type DerivedField =
  | 'vol_23d'
  | 'stock_var'
  | 'l1_cfr'
  | 'l2_cfr'
  | 'l3_cfr'
  | 'l1_fr'
  | 'l2_fr'
  | 'l3_fr'
  | 'l1_rr'
  | 'l2_rr'
  | 'l3_rr'
  | 'lstar_rr'
  | 'l1_res_er'
  | 'l2_res_er'
  | 'l3_res_er'
  | 'l1_mkt_hr'
  | 'l2_sec_hr'
  | 'l3_sub_hr'

export type StoredFloatField = Exclude<FloatField, DerivedField>
/** What a derivation reads: stored fields, codes, or other derived fields. */
export type DerivationInput = FloatField | CodeField

/** What a fill knows besides its inputs (derivations over earlier days only). */
export interface FillContext {
  /** Calendar index of entry 0. */
  day0: number
  /** The symbol is a stock: ETF rows carry no model fields. */
  stock: boolean
  /** Each ETF's daily returns over the whole calendar, by ETF index (0 = the market ETF). */
  etf: readonly ArrayLike<number>[]
}

/**
 * Writes entries [from, n) of `out` from the inputs `v` (same offsets, n = out.length). An
 * entry's lookback (Derivation.back) may reach before entry 0: those entries are then not the
 * field's (callers read enough earlier days, derivedLookback, and discard them).
 */
type Fill = (v: readonly ArrayLike<number>[], ctx: FillContext, out: Float64Array, from: number) => void

interface Derivation {
  inputs: readonly DerivationInput[]
  /**
   * Days before an entry its fill reads: 0 = the same entry of every input only, so the fill is
   * elementwise and derives a cross-section across symbols as well as days of one symbol.
   */
  back: number
  /** The fill reads ETF returns (FillContext.etf). */
  etf?: true
  fill: Fill
}

const copy: Fill = (v, _c, out, from) => {
  const a = v[0]
  for (let t = from; t < out.length; t++) out[t] = a[t]
}
const difference: Fill = (v, _c, out, from) => {
  const a = v[0]
  const b = v[1]
  for (let t = from; t < out.length; t++) out[t] = a[t] - b[t]
}

/** Days of the 23-day variance window before its last day (stock-kernel.ts writeVols). */
const VAR_BACK = 22
const VAR_MIN_OBS = 20

/** stock_var: the kernel's direct two-pass variance of the last 23 days' non-null returns. */
const stockVar: Fill = (v, ctx, out, from) => {
  const r = v[0]
  if (!ctx.stock) {
    out.fill(Number.NaN, from)
    return
  }
  for (let t = from; t < out.length; t++) {
    const first = Math.max(0, t - VAR_BACK)
    let n = 0
    let sum = 0
    for (let d = first; d <= t; d++) {
      if (!Number.isNaN(r[d])) {
        n++
        sum += r[d]
      }
    }
    if (n >= VAR_MIN_OBS) {
      const mean = sum / n
      let ss = 0
      for (let d = first; d <= t; d++) if (!Number.isNaN(r[d])) ss += (r[d] - mean) ** 2
      out[t] = ss / (n - 1)
    } else out[t] = Number.NaN
  }
}

/** ETF `e`'s return on calendar day `day`, NaN when e is none (−1; a null code reads as NaN). */
function etfReturn(ctx: FillContext, e: number, day: number): number {
  return e >= 0 ? ctx.etf[e][day] : Number.NaN
}

/**
 * The combined factor return of level 1, 2 or 3 (stock-kernel.ts decompose): the hedge ratios
 * of day t − 1 times day t's ETF returns. Inputs: returns_gross, then the level's hedge ratios
 * (market, sector, subsector), then the level's ETF codes (sector, subsector).
 */
function combined(level: 1 | 2 | 3): Fill {
  return (v, ctx, out, from) => {
    const r = v[0]
    const hm = v[1]
    const hs = level >= 2 ? v[2] : null
    const hu = level === 3 ? v[3] : null
    const sec = level >= 2 ? v[level + 1] : null
    const sub = level === 3 ? v[5] : null
    const m = ctx.etf[0]
    if (from === 0) out[0] = Number.NaN
    for (let i = Math.max(1, from); i < out.length; i++) {
      const t = ctx.day0 + i
      if (Number.isNaN(r[i])) {
        out[i] = Number.NaN
        continue
      }
      const y = i - 1
      let c = hm[y] * m[t]
      if (hs && sec) {
        const sv = etfReturn(ctx, sec[y], t)
        c = c + hs[y] * sv
        if (hu && sub) c = c + hu[y] * etfReturn(ctx, sub[y], t)
      }
      out[i] = c
    }
  }
}

const DERIVATIONS: Readonly<Record<DerivedField, Derivation>> = {
  stock_var: { inputs: ['returns_gross'], back: VAR_BACK, fill: stockVar },
  vol_23d: {
    inputs: ['stock_var'],
    back: 0,
    fill: (v, _c, out, from) => {
      const a = v[0]
      for (let t = from; t < out.length; t++) out[t] = Math.sqrt(252 * a[t])
    },
  },
  l1_mkt_hr: {
    inputs: ['l1_mkt_beta'],
    back: 0,
    fill: (v, _c, out, from) => {
      const a = v[0]
      for (let t = from; t < out.length; t++) out[t] = a[t] + 0
    },
  },
  l2_sec_hr: { inputs: ['l2_sec_beta'], back: 0, fill: copy },
  l3_sub_hr: {
    inputs: ['l3_sub_beta', 'l3_mkt_hr'],
    back: 0,
    fill: (v, _c, out, from) => {
      const [b, m] = v
      for (let t = from; t < out.length; t++)
        out[t] = !Number.isNaN(b[t]) ? b[t] : Number.isNaN(m[t]) ? Number.NaN : 0
    },
  },
  l1_cfr: { inputs: ['returns_gross', 'l1_mkt_hr'], back: 1, etf: true, fill: combined(1) },
  l2_cfr: {
    inputs: ['returns_gross', 'l2_mkt_hr', 'l2_sec_hr', 'sector_etf'],
    back: 1,
    etf: true,
    fill: combined(2),
  },
  l3_cfr: {
    inputs: ['returns_gross', 'l3_mkt_hr', 'l3_sec_hr', 'l3_sub_hr', 'sector_etf', 'subsector_etf'],
    back: 1,
    etf: true,
    fill: combined(3),
  },
  l1_fr: { inputs: ['l1_cfr'], back: 0, fill: copy },
  l2_fr: { inputs: ['l2_cfr', 'l1_cfr'], back: 0, fill: difference },
  l3_fr: { inputs: ['l3_cfr', 'l2_cfr'], back: 0, fill: difference },
  l1_rr: { inputs: ['returns_gross', 'l1_cfr'], back: 0, fill: difference },
  l2_rr: { inputs: ['returns_gross', 'l2_cfr'], back: 0, fill: difference },
  l3_rr: { inputs: ['returns_gross', 'l3_cfr'], back: 0, fill: difference },
  lstar_rr: {
    inputs: ['l1_rr', 'l2_rr', 'l3_rr', 'lstar_level'],
    back: 1,
    fill: (v, _c, out, from) => {
      const [r1, r2, r3, codes] = v
      if (from === 0) out[0] = Number.NaN
      for (let t = Math.max(1, from); t < out.length; t++) {
        const ls = codes[t - 1]
        out[t] = ls === 1 ? r1[t] : ls === 2 ? r2[t] : ls === 3 ? r3[t] : Number.NaN
      }
    },
  },
  l1_res_er: {
    inputs: ['l1_mkt_er'],
    back: 0,
    fill: (v, _c, out, from) => {
      const a = v[0]
      for (let t = from; t < out.length; t++) out[t] = 1 - a[t]
    },
  },
  l2_res_er: {
    inputs: ['l2_mkt_er', 'l2_sec_er'],
    back: 0,
    fill: (v, _c, out, from) => {
      const [a, b] = v
      for (let t = from; t < out.length; t++) out[t] = 1 - a[t] - b[t]
    },
  },
  l3_res_er: {
    inputs: ['l3_mkt_er', 'l3_sec_er', 'l3_sub_er'],
    back: 0,
    fill: (v, _c, out, from) => {
      const [a, b, c] = v
      for (let t = from; t < out.length; t++) out[t] = 1 - a[t] - b[t] - c[t]
    },
  },
}

export const DERIVED_FIELDS = Object.keys(DERIVATIONS) as DerivedField[]

export function isDerived(field: string): field is DerivedField {
  return Object.hasOwn(DERIVATIONS, field)
}

/** The float fields the store holds (manifest.float_fields), in FLOAT_FIELDS order. */
export const STORED_FLOAT_FIELDS = FLOAT_FIELDS.filter((f) => !isDerived(f)) as StoredFloatField[]

/** Days before the first wanted day whose inputs a derived field reads, through its whole chain. */
export function derivedLookback(field: DerivedField): number {
  const d = DERIVATIONS[field]
  let deepest = 0
  for (const i of d.inputs) if (isDerived(i)) deepest = Math.max(deepest, derivedLookback(i))
  return d.back + deepest
}

/** Whether deriving `order` reads ETF returns. */
export function readsEtfs(order: readonly DerivedField[]): boolean {
  return order.some((f) => DERIVATIONS[f].etf === true)
}

/**
 * What deriving `fields` takes: the derived fields in an order where each comes after its
 * derived inputs, and the stored arrays (fields and codes) they read.
 */
export function derivationPlan(fields: readonly DerivedField[]): {
  order: DerivedField[]
  stored: Exclude<DerivationInput, DerivedField>[]
} {
  const order: DerivedField[] = []
  const stored = new Set<Exclude<DerivationInput, DerivedField>>()
  const visit = (f: DerivedField) => {
    if (order.includes(f)) return
    for (const i of DERIVATIONS[f].inputs) {
      if (isDerived(i)) visit(i)
      else stored.add(i)
    }
    order.push(f)
  }
  for (const f of fields) visit(f)
  return { order, stored: [...stored] }
}

/** Derives a plan's fields into arrays it keeps and reuses: one symbol after another. */
export interface DeriveRunner {
  /** Each field of the plan's order, overwritten by every run. */
  readonly out: Readonly<Record<string, Float64Array>>
  /** Derives from the stored arrays in `read` (entry i = the same day of every array). */
  run(read: Readonly<Record<string, ArrayLike<number>>>, ctx: FillContext): void
}

/**
 * A runner of `order` (derivationPlan) over `n` entries: entries [from, n) of every field of
 * `order`, and of its inputs the entries those read. With a lookback, the first entries are not
 * the fields' (see Fill).
 */
export function deriveRunner(order: readonly DerivedField[], n: number, from = 0): DeriveRunner {
  // The first entry each field needs: its consumers' first entries less their lookbacks.
  const first = new Map<string, number>(order.map((f) => [f, from]))
  for (let k = order.length - 1; k >= 0; k--) {
    const d = DERIVATIONS[order[k]]
    const need = Math.max(0, (first.get(order[k]) ?? from) - d.back)
    for (const i of d.inputs) if (first.has(i)) first.set(i, Math.min(first.get(i) ?? need, need))
  }
  const out: Record<string, Float64Array> = {}
  for (const f of order) out[f] = new Float64Array(n)
  const all: Record<string, ArrayLike<number>> = { ...out }
  const steps = order.map((f) => ({
    d: DERIVATIONS[f],
    args: DERIVATIONS[f].inputs.map(() => out[f] as ArrayLike<number>),
    col: out[f],
    from: first.get(f) ?? from,
  }))
  return {
    out,
    run(read, ctx) {
      for (const k of Object.keys(read)) all[k] = read[k]
      for (const s of steps) {
        const inputs = s.d.inputs
        for (let j = 0; j < inputs.length; j++) s.args[j] = all[inputs[j]]
        s.d.fill(s.args, ctx, s.col, s.from)
      }
    },
  }
}

/** deriveRunner's fields into fresh arrays, for one run. */
export function deriveAll(
  order: readonly DerivedField[],
  read: Readonly<Record<string, ArrayLike<number>>>,
  ctx: FillContext,
  n: number,
  from = 0,
): Readonly<Record<string, Float64Array>> {
  const r = deriveRunner(order, n, from)
  r.run(read, ctx)
  return r.out
}
