/**
 * Forecast-quality statistics (docs/model-quality.md): the bias statistic of standardised
 * outcomes and its rolling mean absolute deviation from 1. Pure.
 */

/** The bias statistic: the sample standard deviation (n − 1) of z = realised / forecast; NaN below 2. */
export function biasStatistic(z: readonly number[]): number {
  const n = z.length
  if (n < 2) return Number.NaN
  let mean = 0
  for (const x of z) mean += x
  mean /= n
  let ss = 0
  for (const x of z) ss += (x - mean) * (x - mean)
  return Math.sqrt(ss / (n - 1))
}

/**
 * Rolling mean absolute deviation of the bias statistic from 1 (MRAD): `z[d][b]` is slot b's
 * standardised outcome at date d (NaN: none). For every slot and every run of `window`
 * consecutive dates, the bias of its values (at least half the window present); MRAD is the
 * mean of |bias − 1| over all of them. Also returns, per window end, the mean bias across slots.
 */
export function rollingMrad(
  z: readonly (readonly number[])[],
  window: number,
): { mrad: number; rolling: { end: number; bias: number }[] } {
  let acc = 0
  let count = 0
  const rolling: { end: number; bias: number }[] = []
  const slots = z.reduce((m, row) => Math.max(m, row.length), 0)
  for (let end = window - 1; end < z.length; end++) {
    let sum = 0
    let k = 0
    for (let b = 0; b < slots; b++) {
      const vals: number[] = []
      for (let d = end - window + 1; d <= end; d++) {
        const v = z[d]?.[b]
        if (v !== undefined && !Number.isNaN(v)) vals.push(v)
      }
      if (vals.length < Math.max(2, window / 2)) continue
      const bias = biasStatistic(vals)
      acc += Math.abs(bias - 1)
      count++
      sum += bias
      k++
    }
    if (k > 0) rolling.push({ end, bias: sum / k })
  }
  return { mrad: count > 0 ? acc / count : Number.NaN, rolling }
}
