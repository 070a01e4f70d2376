/**
 * The engine's in-memory layout: one typed array per symbol, indexed by calendar day
 * (symbol-major), NaN for null. Per-stock rolling kernels walk one array sequentially; the
 * cross-sectional kernels read one day across arrays.
 */
export type Panel = Float64Array[]

export function nanPanel(symbols: number, days: number): Panel {
  return Array.from({ length: symbols }, () => new Float64Array(days).fill(Number.NaN))
}
