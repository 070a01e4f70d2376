/** Cross-sectional products (METHODOLOGY §9–§10): universes, rankings, industry panel, reversion. */
export * from './industry-panel.ts'
export * from './ranking-values.ts'
export * from './rankings.ts'
export * from './residual-reversion.ts'
export * from './sort.ts'
export * from './universe.ts'
export * from './window-sums.ts'
