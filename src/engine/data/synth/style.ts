import type { StyleRule } from './etfs.ts'
import type { Company } from './universe.ts'

export interface StyleInputs {
  companies: Company[]
  /** Market cap at the previous close; NaN when not trading. */
  cap: Float64Array
  /** Current market loadings. */
  betaM: Float64Array
  /** Trailing 12-month total return; NaN when the history is shorter. */
  trailing: Float64Array
}

/** Indices sorted ascending by a precomputed key (ties by index, so the order is deterministic). */
function sortBy(ids: Int32Array, key: Float64Array): Int32Array {
  return ids.slice().sort((a, b) => key[a] - key[b] || a - b)
}

const head = (ids: Int32Array, f: number) => ids.subarray(0, Math.max(1, Math.floor(ids.length * f)))

/**
 * Monthly membership of every style ETF, chosen by a transparent rule from the stocks trading at
 * the rebalance date (large caps = the top half by market cap). Members are then cap-weighted.
 */
export function styleMembers(x: StyleInputs): Record<StyleRule, Int32Array> {
  const n = x.companies.length
  const negCap = Float64Array.from(x.cap, (v) => -v)
  const live = sortBy(
    Int32Array.from({ length: n }, (_, i) => i).filter((i) => x.cap[i] > 0),
    negCap,
  )
  const large = live.subarray(0, Math.ceil(live.length / 2))
  const idio = Float64Array.from(x.companies, (c) => c.idioSd)
  const totalVar = Float64Array.from(x.companies, (c, i) => (x.betaM[i] * 0.0105) ** 2 + c.idioSd ** 2)
  const negBeta = Float64Array.from(x.betaM, (v) => -v)
  const negTrailing = Float64Array.from(x.trailing, (v) => -v)
  const negYield = Float64Array.from(x.companies, (c) => -c.divYield)
  return {
    size: live.subarray(Math.floor(live.length / 3)),
    growth: head(sortBy(large, negBeta), 0.5),
    value: head(sortBy(large, x.betaM), 0.5),
    momentum: head(
      sortBy(
        large.filter((i) => Number.isFinite(x.trailing[i])),
        negTrailing,
      ),
      0.25,
    ),
    quality: head(sortBy(large, idio), 1 / 3),
    low_vol: head(sortBy(large, totalVar), 0.2),
    dividend: sortBy(
      large.filter((i) => x.companies[i].divYield > 0),
      negYield,
    ).subarray(0, 100),
    moat: live.subarray(0, 200).filter((i) => x.companies[i].cik % 5 === 0),
  }
}
