import { type CodeField, FLOAT_FIELDS, type FloatField } from './layout.ts'

/**
 * Float fields the kernel computes as exact functions of other stored values
 * (engine/model/stock-kernel.ts, writeVols and decompose). The store does not hold them: the
 * reader computes them from their inputs with the very same floating-point operations, so the
 * values served are bit for bit the kernel's (docs/performance.md, "Build speed and footprint").
 *
 * - vol_23d = √(252 · stock_var)
 * - l1_fr = l1_cfr, l2_fr = l2_cfr − l1_cfr, l3_fr = l3_cfr − l2_cfr
 * - lN_rr = returns_gross − lN_cfr
 * - lstar_rr on day t = lN_rr on day t, N the L* level of day t − 1 (code 0, or day 0: null)
 * - l1_res_er = 1 − l1_mkt_er, l2_res_er = 1 − l2_mkt_er − l2_sec_er (engine/model/cascade.ts
 *   closes the sum with 1 − erM − erS − erU, and a level's absent legs are exactly 0)
 * - l1_mkt_hr = l1_mkt_beta + 0, l2_sec_hr = l2_sec_beta (cascade.ts's hedge ratios with the
 *   absent legs' exact zeros: hrM = βm − 0 − 0 + 0, whose + 0 turns −0 into +0; hrS = βs − 0)
 *
 * l3_res_er stays stored although it is 1 − l3_mkt_er − l3_sec_er − l3_sub_er: it is the field
 * read most across symbols (one day's cross-section), which one read keeps as fast as before.
 */
export type DerivedField =
  | 'vol_23d'
  | 'l1_fr'
  | 'l2_fr'
  | 'l3_fr'
  | 'l1_rr'
  | 'l2_rr'
  | 'l3_rr'
  | 'lstar_rr'
  | 'l1_res_er'
  | 'l2_res_er'
  | 'l1_mkt_hr'
  | 'l2_sec_hr'

type Input = Exclude<FloatField, DerivedField> | CodeField

/**
 * Writes entries [from, to) of `out` from the inputs `v` (same offsets) and, for lstar_rr, the L*
 * code of the day before each entry. One plain loop per formula: reads of whole panels derive
 * millions of values.
 */
type Fill = (
  v: readonly ArrayLike<number>[],
  prevCodes: ArrayLike<number>,
  from: number,
  to: number,
  out: Float64Array,
) => void

interface Derivation {
  /** Inputs read on the same day. */
  inputs: readonly Input[]
  /** The L* code of the day before (lstar_rr only). */
  lagged?: 'lstar_level'
  fill: Fill
}

const copy: Fill = (v, _c, from, to, out) => {
  const a = v[0]
  for (let t = from; t < to; t++) out[t] = a[t]
}
const difference: Fill = (v, _c, from, to, out) => {
  const a = v[0]
  const b = v[1]
  for (let t = from; t < to; t++) out[t] = a[t] - b[t]
}

export const DERIVATIONS: Readonly<Record<DerivedField, Derivation>> = {
  vol_23d: {
    inputs: ['stock_var'],
    fill: (v, _c, from, to, out) => {
      const a = v[0]
      for (let t = from; t < to; t++) out[t] = Math.sqrt(252 * a[t])
    },
  },
  l1_fr: { inputs: ['l1_cfr'], fill: copy },
  l2_fr: { inputs: ['l2_cfr', 'l1_cfr'], fill: difference },
  l3_fr: { inputs: ['l3_cfr', 'l2_cfr'], fill: difference },
  l1_rr: { inputs: ['returns_gross', 'l1_cfr'], fill: difference },
  l2_rr: { inputs: ['returns_gross', 'l2_cfr'], fill: difference },
  l3_rr: { inputs: ['returns_gross', 'l3_cfr'], fill: difference },
  lstar_rr: {
    inputs: ['returns_gross', 'l1_cfr', 'l2_cfr', 'l3_cfr'],
    lagged: 'lstar_level',
    fill: (v, codes, from, to, out) => {
      const [r, c1, c2, c3] = v
      for (let t = from; t < to; t++) {
        const ls = codes[t]
        out[t] = ls === 1 ? r[t] - c1[t] : ls === 2 ? r[t] - c2[t] : ls === 3 ? r[t] - c3[t] : Number.NaN
      }
    },
  },
  l1_res_er: {
    inputs: ['l1_mkt_er'],
    fill: (v, _c, from, to, out) => {
      const a = v[0]
      for (let t = from; t < to; t++) out[t] = 1 - a[t]
    },
  },
  l2_res_er: {
    inputs: ['l2_mkt_er', 'l2_sec_er'],
    fill: (v, _c, from, to, out) => {
      const a = v[0]
      const b = v[1]
      for (let t = from; t < to; t++) out[t] = 1 - a[t] - b[t]
    },
  },
  l1_mkt_hr: {
    inputs: ['l1_mkt_beta'],
    fill: (v, _c, from, to, out) => {
      const a = v[0]
      for (let t = from; t < to; t++) out[t] = a[t] + 0
    },
  },
  l2_sec_hr: { inputs: ['l2_sec_beta'], fill: copy },
}

export const DERIVED_FIELDS = Object.keys(DERIVATIONS) as DerivedField[]

export function isDerived(field: string): field is DerivedField {
  return Object.hasOwn(DERIVATIONS, field)
}

/** The float fields the store holds (manifest.float_fields), in FLOAT_FIELDS order. */
export const STORED_FLOAT_FIELDS = FLOAT_FIELDS.filter((f) => !isDerived(f)) as Exclude<
  FloatField,
  DerivedField
>[]

/** lstar_rr's codes stand in for every other field's (which read none). */
const NO_CODES: ArrayLike<number> = { length: 0 }

/**
 * Entries [from, to) of a derived field into `out`. `inputs` hold the derivation's inputs at the
 * same offsets (days of one symbol, or one day's symbols); `prevCodes` (lstar_rr only) holds at
 * each offset the L* code of the day before (0 when there is none).
 */
export function deriveInto(
  field: DerivedField,
  inputs: readonly ArrayLike<number>[],
  prevCodes: ArrayLike<number> | null,
  from: number,
  to: number,
  out: Float64Array,
): void {
  DERIVATIONS[field].fill(inputs, prevCodes ?? NO_CODES, from, to, out)
}
