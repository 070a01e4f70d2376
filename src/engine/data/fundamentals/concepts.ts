/**
 * The fields of a fundamentals row and the XBRL concepts each is read from, in precedence.
 *
 * Each field lists alternatives in precedence order; the first alternative that yields a finite
 * value for a given quarter (as of a given filing date) is used for that quarter. One quarter's
 * value always comes from one alternative: a derived quarter (YTD or FY minus earlier quarters)
 * takes every operand from the same concept, so no single quarter mixes two concepts. Different
 * quarters may use different concepts when a filer switches tags (revenue to ASC 606's
 * `RevenueFromContractWithCustomerExcludingAssessedTax` around 2018, interest to
 * `InterestExpenseNonoperating` around 2023): a TTM sum of four quarters then adds quarters of
 * different concepts, which is legitimate — each quarter is the filer's own figure for it, and
 * the concept of each quarter is listed in `sec_facts`.
 *
 * us-gaap alternatives come before ifrs-full ones (a filer uses one taxonomy).
 * - revenue: RevenueFromContractWithCustomerExcludingAssessedTax > Revenues > SalesRevenueNet >
 *   RevenueFromContractWithCustomerIncludingAssessedTax > SalesRevenueGoodsNet | ifrs Revenue >
 *   RevenueFromContractsWithCustomers
 * - net_income: NetIncomeLoss > ProfitLoss | ifrs ProfitLossAttributableToOwnersOfParent > ProfitLoss
 * - operating_cash_flow: NetCashProvidedByUsedInOperatingActivities >
 *   NetCashProvidedByUsedInOperatingActivitiesContinuingOperations | ifrs
 *   CashFlowsFromUsedInOperatingActivities
 * - capex: PaymentsToAcquirePropertyPlantAndEquipment > PaymentsToAcquireProductiveAssets (NVIDIA
 *   from fiscal 2021) | ifrs PurchaseOfPropertyPlantAndEquipmentClassifiedAsInvestingActivities >
 *   PurchaseOfPropertyPlantAndEquipment
 * - dividends: PaymentsOfDividends > PaymentsOfDividendsCommonStock | ifrs
 *   DividendsPaidClassifiedAsFinancingActivities > DividendsPaid
 * - repurchases: PaymentsForRepurchaseOfCommonStock > PaymentsForRepurchaseOfEquity | ifrs
 *   PaymentsToAcquireOrRedeemEntitysShares
 * - interest_expense: InterestExpense > InterestExpenseNonoperating > InterestExpenseDebt >
 *   InterestExpenseBorrowings | ifrs InterestExpense > FinanceCosts
 * - stock_issued: ProceedsFromIssuanceOfCommonStock > ProceedsFromStockOptionsExercised | ifrs
 *   ProceedsFromIssuingShares
 * - other_comprehensive_income: OtherComprehensiveIncomeLossNetOfTax >
 *   OtherComprehensiveIncomeLossNetOfTaxPortionAttributableToParent | ifrs OtherComprehensiveIncome
 * - share_based_compensation (the equity-statement credit to paid-in capital):
 *   AdjustmentsToAdditionalPaidInCapitalSharebasedCompensationRequisiteServicePeriodRecognitionValue >
 *   ShareBasedCompensation | ifrs IncreaseDecreaseThroughSharebasedPaymentTransactions
 * - total_equity: StockholdersEquity >
 *   StockholdersEquityIncludingPortionAttributableToNoncontrollingInterest | ifrs
 *   EquityAttributableToOwnersOfParent > Equity
 * - total_assets: Assets | ifrs Assets
 * - total_debt = long-term debt + CommercialPaper + ShortTermBorrowings, where the long-term part
 *   is required and the two short-term parts are added when reported at that quarter end (a
 *   filer tags commercial paper only while it has some outstanding). Long-term part:
 *   LongTermDebt (total carrying amount, current portion included) >
 *   LongTermDebtNoncurrent (+ LongTermDebtCurrent when reported) >
 *   LongTermDebtAndCapitalLeaseObligations (+ LongTermDebtAndCapitalLeaseObligationsCurrent when
 *   reported; Alphabet tags its balance-sheet debt line so, finance leases included) >
 *   ConvertibleDebtNoncurrent (+ ConvertibleDebtCurrent when reported) | ifrs Borrowings >
 *   NoncurrentPortionOfNoncurrentBorrowings (+ CurrentPortionOfNoncurrentBorrowings,
 *   + ShorttermBorrowings when reported). Not reported (no long-term part) is NaN, not zero.
 */

/** The taxonomy of a concept: `us-gaap` or `ifrs-full`. */
export type FactSource = 'us_gaap' | 'ifrs'

/** Quarter (duration) fields and balance-sheet (instant) fields of a row. */
export const DURATION_FIELDS = [
  'revenue',
  'net_income',
  'operating_cash_flow',
  'capex',
  'dividends',
  'repurchases',
  'interest_expense',
  'stock_issued',
  'other_comprehensive_income',
  'share_based_compensation',
] as const
export const INSTANT_FIELDS = ['total_equity', 'total_assets', 'total_debt'] as const
export type DurationField = (typeof DURATION_FIELDS)[number]
export type InstantField = (typeof INSTANT_FIELDS)[number]
export type FundamentalField = DurationField | InstantField
export const FIELDS: readonly FundamentalField[] = [...DURATION_FIELDS, ...INSTANT_FIELDS]

/** One concept of an alternative; `optional` parts are added when reported, else skipped. */
interface ConceptPart {
  concept: string
  source: FactSource
  optional: boolean
}
/** Alternatives in precedence order; an alternative's parts are summed. */
export type FieldSpec = ConceptPart[][]

const us = (concept: string, optional = false): ConceptPart => ({ concept, source: 'us_gaap', optional })
const ifrs = (concept: string, optional = false): ConceptPart => ({ concept, source: 'ifrs', optional })
const single = (usGaap: string[], ifrsFull: string[]): FieldSpec => [
  ...usGaap.map((c) => [us(c)]),
  ...ifrsFull.map((c) => [ifrs(c)]),
]

export const FIELD_SPECS: Record<FundamentalField, FieldSpec> = {
  revenue: single(
    [
      'RevenueFromContractWithCustomerExcludingAssessedTax',
      'Revenues',
      'SalesRevenueNet',
      'RevenueFromContractWithCustomerIncludingAssessedTax',
      'SalesRevenueGoodsNet',
    ],
    ['Revenue', 'RevenueFromContractsWithCustomers'],
  ),
  net_income: single(
    ['NetIncomeLoss', 'ProfitLoss'],
    ['ProfitLossAttributableToOwnersOfParent', 'ProfitLoss'],
  ),
  operating_cash_flow: single(
    [
      'NetCashProvidedByUsedInOperatingActivities',
      'NetCashProvidedByUsedInOperatingActivitiesContinuingOperations',
    ],
    ['CashFlowsFromUsedInOperatingActivities'],
  ),
  capex: single(
    ['PaymentsToAcquirePropertyPlantAndEquipment', 'PaymentsToAcquireProductiveAssets'],
    [
      'PurchaseOfPropertyPlantAndEquipmentClassifiedAsInvestingActivities',
      'PurchaseOfPropertyPlantAndEquipment',
    ],
  ),
  dividends: single(
    ['PaymentsOfDividends', 'PaymentsOfDividendsCommonStock'],
    ['DividendsPaidClassifiedAsFinancingActivities', 'DividendsPaid'],
  ),
  repurchases: single(
    ['PaymentsForRepurchaseOfCommonStock', 'PaymentsForRepurchaseOfEquity'],
    ['PaymentsToAcquireOrRedeemEntitysShares'],
  ),
  interest_expense: single(
    ['InterestExpense', 'InterestExpenseNonoperating', 'InterestExpenseDebt', 'InterestExpenseBorrowings'],
    ['InterestExpense', 'FinanceCosts'],
  ),
  stock_issued: single(
    ['ProceedsFromIssuanceOfCommonStock', 'ProceedsFromStockOptionsExercised'],
    ['ProceedsFromIssuingShares'],
  ),
  other_comprehensive_income: single(
    [
      'OtherComprehensiveIncomeLossNetOfTax',
      'OtherComprehensiveIncomeLossNetOfTaxPortionAttributableToParent',
    ],
    ['OtherComprehensiveIncome'],
  ),
  share_based_compensation: single(
    [
      'AdjustmentsToAdditionalPaidInCapitalSharebasedCompensationRequisiteServicePeriodRecognitionValue',
      'ShareBasedCompensation',
    ],
    ['IncreaseDecreaseThroughSharebasedPaymentTransactions'],
  ),
  total_equity: single(
    ['StockholdersEquity', 'StockholdersEquityIncludingPortionAttributableToNoncontrollingInterest'],
    ['EquityAttributableToOwnersOfParent', 'Equity'],
  ),
  total_assets: single(['Assets'], ['Assets']),
  total_debt: [
    [us('LongTermDebt'), us('CommercialPaper', true), us('ShortTermBorrowings', true)],
    [
      us('LongTermDebtNoncurrent'),
      us('LongTermDebtCurrent', true),
      us('CommercialPaper', true),
      us('ShortTermBorrowings', true),
    ],
    [
      us('LongTermDebtAndCapitalLeaseObligations'),
      us('LongTermDebtAndCapitalLeaseObligationsCurrent', true),
      us('CommercialPaper', true),
      us('ShortTermBorrowings', true),
    ],
    [
      us('ConvertibleDebtNoncurrent'),
      us('ConvertibleDebtCurrent', true),
      us('CommercialPaper', true),
      us('ShortTermBorrowings', true),
    ],
    [ifrs('Borrowings')],
    [
      ifrs('NoncurrentPortionOfNoncurrentBorrowings'),
      ifrs('CurrentPortionOfNoncurrentBorrowings', true),
      ifrs('ShorttermBorrowings', true),
    ],
  ],
}
