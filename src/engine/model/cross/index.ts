/** Cross-sectional products (docs/methodology.md §11–§12): universes, rankings, industry panel, reversion. */
export * from './industry-panel.ts'
export * from './ranking-values.ts'
export * from './rankings.ts'
export * from './residual-reversion.ts'
export * from './sort.ts'
export * from './universe.ts'
export * from './window-sums.ts'
