/**
 * The model version: one constant read by the build (each store's manifest), the reader (which
 * refuses a store of another version), every response (`_metadata.model_version`) and the docs
 * generator (scripts/docs.ts writes it into docs/methodology.md). Pure: no I/O.
 *
 * METHODOLOGY_VERSION goes up when the same inputs would give different numbers. History:
 * 2: datasets without market caps get a dollar-volume or all-valid default universe and an
 * equal-weighted industry panel (version 1 left them empty). 3: the style split of the L3
 * residual (l3_style_er, style_factors).
 */
export const METHODOLOGY_VERSION = 3
export const MODEL_VERSION = `ERM3-L3-v${METHODOLOGY_VERSION}`
