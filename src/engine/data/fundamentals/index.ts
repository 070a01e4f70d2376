/** The pure fundamentals core: companyfacts → quarters → point-in-time rows (docs/methodology.md §13). */
export {
  DURATION_FIELDS,
  type DurationField,
  type FactSource,
  FIELD_SPECS,
  FIELDS,
  type FundamentalField,
  INSTANT_FIELDS,
  type InstantField,
} from './concepts.ts'
export { APPROX_FILING_LAG_DAYS, type SecFact } from './facts.ts'
export {
  type CompanyFundamentals,
  type CompanyQuarter,
  parseCompanyFacts,
  type QuarterVersion,
  quartersAsOf,
  type VisibleQuarter,
} from './quarters.ts'
export {
  type BetaSource,
  type FundamentalsRow,
  fundamentalsRows,
  type GridCell,
  NUMERIC_ROW_FIELDS,
  type RowContext,
  type RowParams,
  type SecFactCell,
  type SensitivityGrid,
  sensitivityGrid,
  type Tenor,
  ttmWindow,
} from './ratios.ts'
