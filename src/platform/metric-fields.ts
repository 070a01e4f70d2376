/**
 * The per-stock metric names, written once: the model's outputs, the model store's fields, the
 * wire's MetricsV3 and the services that read them all compose their lists from these. Pure
 * constants with no imports, so every layer may use them, the pure model included
 * (scripts/check-layers.ts lets it import this module and no other of platform/).
 */

/** Per level: hedge ratios (`_hr`) and explained-risk shares (`_er`) of the state after the close of t. */
export const LEVEL_FIELDS = [
  'l1_mkt_hr',
  'l1_mkt_er',
  'l1_res_er',
  'l2_mkt_hr',
  'l2_sec_hr',
  'l2_mkt_er',
  'l2_sec_er',
  'l2_res_er',
  'l3_mkt_hr',
  'l3_sec_hr',
  'l3_sub_hr',
  'l3_mkt_er',
  'l3_sec_er',
  'l3_sub_er',
  'l3_res_er',
] as const

/** Per level: the hierarchical beta on the level's own (orthogonalised) factor: β_m, β_s, β_u. */
export const BETA_FIELDS = ['l1_mkt_beta', 'l2_sec_beta', 'l3_sub_beta'] as const

/**
 * Day t's return decomposed with the state after t-1: cumulative factor (`cfr`), incremental
 * factor (`fr`) and residual (`rr`) returns per level, and the residual at the L* level.
 */
export const DECOMP_FIELDS = [
  'l1_cfr',
  'l2_cfr',
  'l3_cfr',
  'l1_fr',
  'l2_fr',
  'l3_fr',
  'l1_rr',
  'l2_rr',
  'l3_rr',
  'lstar_rr',
] as const
