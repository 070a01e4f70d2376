/** The pure fundamentals core: companyfacts → quarters → point-in-time rows (docs/methodology.md §13). */
export {
  type CompanyFundamentals,
  parseCompanyFacts,
  quartersAsOf,
} from './quarters.ts'
export {
  type BetaSource,
  type FundamentalsRow,
  fundamentalsRows,
  NUMERIC_ROW_FIELDS,
  type RowContext,
  type RowParams,
  sensitivityGrid,
  type Tenor,
} from './ratios.ts'
