/**
 * The style split's forward substitution (engine/model/style.ts), generated as straight-line code once
 * per set of kept columns and cached for the life of the process.
 */

export type Substitution = (
  l: Float64Array,
  at: number,
  x: Float64Array,
  xo: number,
  c: Float64Array,
) => number

const SUBSTITUTIONS = new Map<number, Substitution>()

/**
 * Σ_{k ≥ nx} z_k² for z = L⁻¹ y, the squared coefficients of the kept style columns: y is the
 * right-hand side of the kept columns (ETF a's <r, x_a> at x[xo + 1 + a], style factor j's
 * <r, f_j> at c[j]) and L the compact row-packed factor at l[at …] (row i: L_ik for k < i, then
 * 1 / L_ii). Straight-line code, generated once per set of kept columns from integers only: every
 * z_k and partial sum stays in a register, with no loop control or gathering of the kept columns
 * between the operations. Row i computes ((y_i − L_i0 z_0) − L_i1 z_1) − … times 1 / L_ii: the
 * operations, and their order, of the column-by-column substitution.
 */
export function substitution(nx: number, etfKept: number, styleKept: number): Substitution {
  const key = (styleKept * 8 + etfKept) * 4 + nx
  let f = SUBSTITUTIONS.get(key)
  if (!f) {
    const y: string[] = []
    for (let a = 0; a < nx; a++) if (etfKept & (1 << a)) y.push(`x[xo + ${a + 1}]`)
    const nxKept = y.length
    for (let j = 0; j < 16; j++) if (styleKept & (1 << j)) y.push(`c[${j}]`)
    const lines: string[] = []
    let at = 0
    for (let i = 0; i < y.length; i++) {
      let v = y[i]
      for (let k = 0; k < i; k++) v = `(${v} - l[at + ${at++}] * z${k})`
      lines.push(`const z${i} = ${v} * l[at + ${at++}]`)
    }
    lines.push('let s = 0')
    for (let k = nxKept; k < y.length; k++) lines.push(`s += z${k} * z${k}`)
    lines.push('return s')
    f = new Function('l', 'at', 'x', 'xo', 'c', lines.join('\n')) as Substitution
    SUBSTITUTIONS.set(key, f)
  }
  return f
}
