import { Type } from 'typebox'
import { defineOperation } from '../operation.ts'
import {
  agentMetaSchema,
  IsoDate,
  Nullable,
  NullableNumber,
  riskMetadataSchema,
  TickerParam,
} from '../schemas.ts'

/**
 * GET /fundamentals/{ticker} (docs/methodology.md §13 "Fundamentals"): point-in-time quarterly rows from SEC
 * XBRL company facts, TTM ratios, cascade betas, cost of capital and the sensitivity grid.
 */

export const RF_TENORS = ['3m', '1y', '2y', '5y', '10y', '30y'] as const
export const MAX_FUNDAMENTAL_PERIODS = 40
export const DEFAULT_ERP_GRID = [0.03, 0.04, 0.05, 0.06, 0.07] as const
export const MAX_GRID_VALUES = 11

const Tenor = Type.Union(
  RF_TENORS.map((t) => Type.Literal(t)),
  { description: 'Treasury tenor of the risk-free rate (3m = the 3-month bill)' },
)

const factCellSchema = Type.Object(
  {
    value: Type.Number(),
    source: Type.Union([Type.Literal('us_gaap'), Type.Literal('ifrs')]),
    unit: Type.String(),
    form: Type.String({ description: 'SEC form of the filing (10-Q, 10-K, 10-K/A, 20-F …)' }),
    accession: Type.String({ description: 'SEC accession number of the filing' }),
    filed: IsoDate,
    derived: Type.Optional(
      Type.String({
        description:
          "how a quarter value was derived: 'q4_from_fy' (FY − Q1..Q3) or 'from_ytd' (YTD − earlier YTD)",
      }),
    ),
  },
  { $id: 'SecFactCell' },
)

const ratio = (description: string) => Nullable(Type.Number({ description }))

const fundamentalsRowSchema = Type.Object(
  {
    period_end_date: IsoDate,
    filed_date: Nullable(IsoDate),
    filed_date_source: Nullable(Type.Union([Type.Literal('exact'), Type.Literal('approx')])),
    sec_facts: Type.Record(Type.String(), factCellSchema, {
      description:
        'The raw XBRL facts behind the row: `Concept` = the value used for this quarter, `Concept:FY`, ' +
        '`Concept:Q1`, `Concept:YTD2` … = the facts a derived quarter came from, `Concept@YYYY-MM-DD` = the ' +
        'earlier quarters of the TTM window and the opening equity, so every ratio traces to its filings',
    }),
    gross_margin: Type.Null({ description: 'currently always null' }),
    operating_margin: Type.Null({ description: 'currently always null' }),
    roe_ttm: ratio('TTM net income / average equity of the 4 window quarter ends; null if that average ≤ 0'),
    roa_ttm: ratio('TTM net income / average total assets of the 4 window quarter ends'),
    leverage_ratio: ratio('total debt / book equity; null if equity ≤ 0'),
    fcf_margin: ratio('TTM (operating cash flow − capex) / TTM revenue'),
    payout_ratio: ratio('TTM dividends / TTM net income; null if net income ≤ 0'),
    retention_ratio: ratio('1 − payout_ratio'),
    buyback_ratio: ratio('TTM repurchases / TTM net income; null if net income ≤ 0'),
    total_payout_ratio: ratio('(dividends + repurchases) / net income, TTM; may exceed 1'),
    sustainable_growth: ratio('retention_ratio × roe_ttm'),
    equity_bridge_residual: ratio(
      'closing equity − (opening equity + the flows in equity_bridge_inputs); null on the first period',
    ),
    equity_bridge_inputs: Type.Array(Type.String(), {
      description: 'flows present in the bridge; a missing one moves inside the residual',
    }),
    beta_market: NullableNumber,
    beta_sector: NullableNumber,
    beta_subsector: NullableNumber,
    beta_source: Nullable(
      Type.Union(
        [
          Type.Literal('none'),
          Type.Literal('in-universe'),
          Type.Literal('out-of-universe'),
          Type.Literal('post-delisting'),
        ],
        {
          description:
            'cascade betas at the last trade date ≤ period end: in-universe / out-of-universe (the default ' +
            'universe that day), none (no model that day), post-delisting (period after the last trade: null, ' +
            'never carried forward)',
        },
      ),
    ),
    rf_rate: ratio('the rf_tenor Treasury rate (fraction) at its last observation ≤ period end'),
    cost_of_equity: ratio('rf_rate + beta_market × erp'),
    cost_of_debt: ratio('TTM interest expense / total debt; null if debt ≤ 0'),
    wacc: ratio('E/(D+E) × cost_of_equity + D/(D+E) × cost_of_debt × (1 − tax_rate), book weights'),
    economic_profit: ratio('(roe_ttm − cost_of_equity) × total equity; null if equity ≤ 0'),
    market_cap: Type.Null({ description: 'reserved: per-row market cap is not point in time, so null' }),
  },
  { $id: 'FundamentalsRow' },
)

const gridCellSchema = Type.Object(
  { cost_of_equity: NullableNumber, wacc: NullableNumber, economic_profit: NullableNumber },
  { $id: 'FundamentalsGridCell' },
)

const sensitivityGridSchema = Type.Object(
  {
    period_end_date: IsoDate,
    filed_date: Type.Optional(IsoDate),
    erp_values: Type.Array(Type.Number()),
    rf_tenor_values: Type.Array(Tenor),
    tax_rate: Type.Number(),
    cells: Type.Array(Type.Array(gridCellSchema), {
      description: 'row-major: cells[i][j] pairs erp_values[i] with rf_tenor_values[j]',
    }),
  },
  { $id: 'FundamentalsSensitivityGrid' },
)

const getFundamentals = defineOperation({
  id: 'getFundamentals',
  method: 'GET',
  path: '/fundamentals/:ticker',
  summary: 'Point-in-time quarterly fundamentals, TTM ratios, cost of capital and a sensitivity grid',
  description:
    'Quarterly rows from SEC XBRL company facts (us-gaap and ifrs-full), oldest to newest, each visible from its ' +
    'filed_date (exact from the filing, else period end + 45 days) and carrying the values of the latest filing ' +
    'dated ≤ as_of, so a later amendment never changes an earlier answer. Ratios are TTM over the last four ' +
    'quarters (null without four finite ones or on a guard, never clipped); betas are the cascade betas at the ' +
    'last trade date ≤ period end; rf_rate is the chosen Treasury tenor at its last observation ≤ period end. ' +
    'grid=true adds the cost of equity, WACC and economic profit of the latest visible period for every ' +
    '(erp, tenor) pair (null, with disclosures.grid_note, when no period is visible). A ticker without ' +
    'fundamentals answers 200 with no rows and a disclosure saying so. Parquet/CSV: the rows as one flat table ' +
    '(sec_facts as a JSON text column, equity_bridge_inputs joined by ";").',
  tags: ['data'],
  auth: 'key',
  lineage: true,
  params: Type.Object({ ticker: TickerParam }, { additionalProperties: false }),
  querystring: Type.Object(
    {
      as_of: Type.Optional(Type.Union([IsoDate], { description: 'visibility date (default data_as_of)' })),
      periods: Type.Optional(
        Type.Integer({
          minimum: 1,
          maximum: MAX_FUNDAMENTAL_PERIODS,
          default: 8,
          description: 'latest visible quarters to return (1–40, default 8)',
        }),
      ),
      erp: Type.Optional(
        Type.Number({
          minimum: 0,
          maximum: 0.5,
          default: 0.05,
          description: 'equity risk premium (fraction)',
        }),
      ),
      tax_rate: Type.Optional(
        Type.Number({ minimum: 0, maximum: 1, default: 0.21, description: 'tax rate of the WACC debt leg' }),
      ),
      rf_tenor: Type.Optional(Type.Union([Tenor], { description: 'risk-free tenor (default 3m)' })),
      grid: Type.Optional(Type.Boolean({ description: 'add the sensitivity grid (default false)' })),
      erp_grid: Type.Optional(
        Type.String({
          maxLength: 200,
          description: `comma-separated ERPs of the grid, each 0–0.5, at most ${MAX_GRID_VALUES} (default ${DEFAULT_ERP_GRID.join(',')})`,
        }),
      ),
      rf_tenor_grid: Type.Optional(
        Type.String({
          maxLength: 100,
          description: `comma-separated tenors of the grid (default ${RF_TENORS.join(',')})`,
        }),
      ),
      format: Type.Optional(
        Type.String({ description: 'json (default), parquet or csv; else Accept decides' }),
      ),
    },
    { additionalProperties: false },
  ),
  status: 200,
  response: Type.Object(
    {
      ticker: Type.String(),
      symbol: Type.String(),
      as_of: IsoDate,
      periods_returned: Type.Integer(),
      rows: Type.Array(fundamentalsRowSchema),
      market_cap: Type.Object(
        {
          value: NullableNumber,
          basis: Type.String(),
          note: Type.String(),
        },
        { description: 'current snapshot (latest close × shares outstanding), not point in time' },
      ),
      sensitivity_grid: Type.Optional(Nullable(sensitivityGridSchema)),
      disclosures: Type.Record(Type.String(), Type.Unknown(), {
        description: 'every parameter echoed, the rules applied and the caveats of this answer',
      }),
      _metadata: riskMetadataSchema,
      _agent: agentMetaSchema,
    },
    { $id: 'FundamentalsResponse' },
  ),
  errors: [400, 401, 402, 404, 406, 429],
})

export const FUNDAMENTALS_OPS = { getFundamentals } as const
