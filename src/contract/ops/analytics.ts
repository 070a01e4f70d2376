import { type TSchema, Type } from 'typebox'
import { methodologyRef } from '../methodology.ts'
import { defineOperation } from '../operation.ts'
import {
  agentMetaSchema,
  FieldsParam,
  historySpanProps,
  IsoDate,
  NextCursor,
  Nullable,
  NullableNumber,
  PageTotal,
  pageQueryProps,
  riskMetadataSchema,
  TickerNote,
  TickerParam,
} from '../schemas.ts'
import { batchFullMetricsSchema } from './batch-full-metrics.ts'

/**
 * Analytics operations: Lstar, the daily returns decomposition, the monthly L3 decomposition and
 * the two batch calls. Every one has a tabular form (`format`).
 */

const Threshold = Type.Number({
  minimum: 0,
  maximum: 0.5,
  default: 0.01,
  description: 'Marginal-ER threshold θ of the Lstar rule (0 ≤ θ ≤ 0.5, default 0.01)',
})
const Format = Type.String({ description: 'json (default), parquet or csv; else Accept decides' })
const ERRORS = [400, 401, 402, 404, 406, 429]
const NumSeries = Type.Array(NullableNumber)
const series = <T extends TSchema>(t: T) => Type.Array(t)
const Level = Nullable(Type.Union([Type.Literal('L1'), Type.Literal('L2'), Type.Literal('L3')]))
const Tickers = Type.Array(Type.String({ maxLength: 32 }), {
  minItems: 1,
  description: 'Up to 100 distinct tickers (more → 400 TOO_MANY_TICKERS); duplicates count once',
})

const OptNumSeries = Type.Optional(NumSeries)

/** The selectable series of an Lstar answer (`dates` is always returned). */
export const LSTAR_FIELDS = [
  'lstar',
  'market_hr',
  'sector_hr',
  'subsector_hr',
  'total_er',
  'residual_return',
  'l2_sector_er',
  'l3_subsector_er',
] as const

const lstarSeries = {
  dates: series(IsoDate),
  lstar: Type.Optional(series(Level)),
  market_hr: OptNumSeries,
  sector_hr: OptNumSeries,
  subsector_hr: OptNumSeries,
  total_er: OptNumSeries,
  residual_return: OptNumSeries,
  l2_sector_er: OptNumSeries,
  l3_subsector_er: OptNumSeries,
}

const batchTickerErrorSchema = Type.Object(
  {
    status: Type.Literal('error'),
    code: Type.Union([Type.Literal('INVALID_TICKER'), Type.Literal('TICKER_NOT_FOUND')]),
    detail: Type.String(),
    suggestions: Type.Optional(Type.Array(Type.String())),
  },
  { $id: 'BatchTickerError' },
)

const LSTAR_DOC = `Per trading day of the window: lstar is the ${methodologyRef('lstar')} rule on that day's l2_sec_er and l3_sub_er with θ = threshold (null when both are null; L3 if l3_sub_er ≥ θ, else L2 if l2_sec_er ≥ θ, else L1; a null l3_sub_er fails the L3 test); at θ = 0.01 it equals the stored lstar_level. market_hr, sector_hr, subsector_hr are the hedge ratios of that level (null below it: L1 has only the market leg), total_er = 1 − that level's residual ER. residual_return on day t is the residual at the level chosen at t−1 (the hedge held during t, as lstar_rr is defined), so at θ = 0.01 it equals lstar_rr. Parquet/CSV: one long table (ticker, date, lstar, market_hr, sector_hr, subsector_hr, total_er, residual_return, l2_sector_er, l3_subsector_er).`

const getLstar = defineOperation({
  id: 'getLstar',
  method: 'GET',
  path: '/lstar',
  summary: 'Dispatch-level (Lstar) series: level, its hedge ratios, ER and residual per day',
  description: LSTAR_DOC,
  tags: ['data'],
  auth: 'key',
  lineage: true,
  querystring: Type.Object(
    {
      ticker: TickerParam,
      ...historySpanProps(1),
      threshold: Type.Optional(Threshold),
      fields: Type.Optional(FieldsParam(LSTAR_FIELDS)),
      format: Type.Optional(Format),
    },
    { additionalProperties: false },
  ),
  status: 200,
  response: Type.Object(
    {
      ticker: Type.String(),
      symbol: Type.String(),
      threshold_used: Type.Number(),
      ...lstarSeries,
      _metadata: riskMetadataSchema,
      _agent: agentMetaSchema,
    },
    { $id: 'LstarResponse' },
  ),
  errors: ERRORS,
})

/** How a batch pages (the one cursor convention over its distinct tickers) and what a page costs. */
const BATCH_PAGE_DOC =
  ' Paged by the one cursor convention over the distinct tickers, in the order asked: limit tickers a page ' +
  '(default and at most 100, so one page holds any batch), cursor = the previous next_cursor with the same other ' +
  'fields; total counts the distinct tickers. Each page is a call priced for the tickers of that page that ' +
  'succeeded (with the minimum, if any); the same page asked again is free (pay once). A page of a paged walk ' +
  'whose tickers all failed answers them as errors (succeeded 0, free) instead of failing.'

const batchLstar = defineOperation({
  id: 'batchLstar',
  method: 'POST',
  path: '/batch/lstar',
  summary: 'Lstar series for up to 100 tickers: results keyed by ticker, each with a status',
  description: `${LSTAR_DOC} Results are keyed by the ticker as asked (trimmed, upper-cased); an invalid or unknown ticker gets {status: "error", code, detail}. Charged 0.005 USD per ticker that succeeded, minimum 0.01; when none succeeds the call fails (404 if any ticker was unknown, else 400) and costs nothing.${BATCH_PAGE_DOC}`,
  tags: ['data'],
  auth: 'key',
  lineage: true,
  body: Type.Object(
    {
      tickers: Tickers,
      ...pageQueryProps(100, 100),
      ...historySpanProps(1),
      threshold: Type.Optional(Threshold),
      fields: Type.Optional(FieldsParam(LSTAR_FIELDS)),
      format: Type.Optional(Format),
    },
    { additionalProperties: false },
  ),
  status: 200,
  response: Type.Object(
    {
      threshold_used: Type.Number(),
      years: Type.Integer(),
      succeeded: Type.Integer(),
      failed: Type.Integer(),
      total: PageTotal,
      next_cursor: NextCursor,
      results: Type.Record(
        Type.String(),
        Type.Union([
          Type.Object({
            status: Type.Literal('ok'),
            ticker: Type.String(),
            symbol: Type.String(),
            ticker_note: TickerNote,
            ...lstarSeries,
          }),
          batchTickerErrorSchema,
        ]),
      ),
      _metadata: riskMetadataSchema,
      _agent: agentMetaSchema,
    },
    { $id: 'BatchLstarResponse' },
  ),
  errors: ERRORS,
})

/** The level decomposition series of a returns decomposition, in answer order. */
export const DECOMPOSITION_SERIES = [
  'l1_cfr',
  'l1_fr',
  'l1_rr',
  'l2_cfr',
  'l2_fr',
  'l2_rr',
  'l3_cfr',
  'l3_fr',
  'l3_rr',
] as const

/** The selectable series of a returns decomposition (`dates` is always returned). */
export const RETURNS_DECOMPOSITION_FIELDS = ['gross', ...DECOMPOSITION_SERIES] as const

const getReturnsDecomposition = defineOperation({
  id: 'getReturnsDecomposition',
  method: 'GET',
  path: '/returns-decomposition',
  summary: 'Daily factor and residual returns per level (gross = l3_cfr + l3_rr)',
  description: `Parallel daily arrays as stored (${methodologyRef('decomposition')}: day t decomposed with the hedge ratios of the close of t−1): gross, and per level the cumulative factor return cfr, the incremental factor return fr and the residual rr. include_lstar=true (or dispatch=lstar) adds lstar (the stored level per day) and lstar_residual_return (= lstar_rr). Parquet/CSV: one row per date with the same columns.`,
  tags: ['data'],
  auth: 'key',
  lineage: true,
  querystring: Type.Object(
    {
      ticker: TickerParam,
      ...historySpanProps(1),
      include_lstar: Type.Optional(Type.Boolean({ default: false })),
      fields: Type.Optional(FieldsParam(RETURNS_DECOMPOSITION_FIELDS)),
      dispatch: Type.Optional(Type.Literal('lstar', { description: 'Same as include_lstar=true' })),
      format: Type.Optional(Format),
    },
    { additionalProperties: false },
  ),
  status: 200,
  response: Type.Object(
    {
      ticker: Type.String(),
      symbol: Type.String(),
      dates: series(IsoDate),
      gross: OptNumSeries,
      ...(Object.fromEntries(DECOMPOSITION_SERIES.map((k) => [k, OptNumSeries])) as Record<
        (typeof DECOMPOSITION_SERIES)[number],
        typeof OptNumSeries
      >),
      lstar: Type.Optional(series(Level)),
      lstar_residual_return: Type.Optional(NumSeries),
      _metadata: riskMetadataSchema,
      _agent: agentMetaSchema,
    },
    { $id: 'ReturnsDecompositionResponse' },
  ),
  errors: ERRORS,
})

/** The selectable series of the monthly L3 decomposition (`dates` is always returned). */
export const L3_DECOMPOSITION_FIELDS = [
  'l3_mkt_hr',
  'l3_sec_hr',
  'l3_sub_hr',
  'l3_mkt_er',
  'l3_sec_er',
  'l3_sub_er',
  'l3_res_er',
  'sector_etf',
  'subsector_etf',
] as const

const l3MonthlySchema = Type.Object(
  {
    dates: series(IsoDate),
    l3_mkt_hr: OptNumSeries,
    l3_sec_hr: OptNumSeries,
    l3_sub_hr: OptNumSeries,
    l3_mkt_er: OptNumSeries,
    l3_sec_er: OptNumSeries,
    l3_sub_er: OptNumSeries,
    l3_res_er: OptNumSeries,
    sector_etf: Type.Optional(series(Nullable(Type.String()))),
    subsector_etf: Type.Optional(series(Nullable(Type.String()))),
  },
  { $id: 'L3MonthlySeries' },
)

const getL3Decomposition = defineOperation({
  id: 'getL3Decomposition',
  method: 'GET',
  path: '/l3-decomposition',
  summary: 'Monthly (month-end) L3 hedge ratios and explained-risk fractions',
  description:
    "Query: ticker; years 1–15 (default 5) back from the symbol's last priced day, or start/end (start wins over years); fields; format. One point per calendar month: its last trading day in the window; the window's last day closes the current (possibly partial) month, so the series ends at the latest state. Per point: l3_mkt_hr, l3_sec_hr, l3_sub_hr (dollar ratios), l3_mkt_er, l3_sec_er, l3_sub_er, l3_res_er (variance fractions, summing to 1), and the sector_etf and subsector_etf in effect that day (the sector ETF on subsector-fallback days). Parquet/CSV: one row per month end with the same columns.",
  tags: ['data'],
  auth: 'key',
  lineage: true,
  querystring: Type.Object(
    {
      ticker: TickerParam,
      ...historySpanProps(5),
      fields: Type.Optional(FieldsParam(L3_DECOMPOSITION_FIELDS)),
      format: Type.Optional(Format),
    },
    { additionalProperties: false },
  ),
  status: 200,
  response: Type.Object(
    {
      ticker: Type.String(),
      symbol: Type.String(),
      periodicity: Type.Literal('monthly'),
      ...l3MonthlySchema.properties,
      _metadata: riskMetadataSchema,
      _agent: agentMetaSchema,
    },
    { $id: 'L3DecompositionResponse' },
  ),
  errors: ERRORS,
})

const Metric = Type.Union([
  Type.Literal('returns'),
  Type.Literal('hedge_ratios'),
  Type.Literal('full_metrics'),
  Type.Literal('l3_decomposition'),
])

const batchHedgeRatiosSchema = Type.Object(
  {
    l1_market: NullableNumber,
    l2_market: NullableNumber,
    l2_sector: NullableNumber,
    l3_market: NullableNumber,
    l3_sector: NullableNumber,
    l3_subsector: NullableNumber,
  },
  { $id: 'BatchHedgeRatios' },
)

const batchAnalyze = defineOperation({
  id: 'batchAnalyze',
  method: 'POST',
  path: '/batch/analyze',
  summary: 'Returns, hedge ratios, full metrics and monthly L3 series for up to 100 tickers',
  description:
    "metrics ⊆ {returns, hedge_ratios, full_metrics, l3_decomposition}, default [returns, hedge_ratios]; years 1–15 (default 1) sizes returns and l3_decomposition. Per ticker (keyed as asked): returns {dates, values = gross returns, l1/l2/l3 = rolling L3 market/sector/subsector HR histories}; hedge_ratios = the HRs of the latest state (or as_of's) under short keys (l1_market = l1_mkt_hr … l3_subsector = l3_sub_hr); full_metrics = the MetricsV3 snapshot of GET /metrics/{ticker}, its level fields also under the specification's long names (l1_market_hr = l1_mkt_hr … l3_residual_er = l3_res_er); l3_decomposition = the monthly series of GET /l3-decomposition; teo = date of the state served (the latest, or as_of: point in time). Parquet/CSV = BatchAnalyzeExportRow (ticker, date, gross_return, l1, l2, l3) for the tickers that succeeded, and needs 'returns' in metrics (else 400). 0.005 USD per ticker that succeeded; none succeeded → 404/400 and no charge." +
    BATCH_PAGE_DOC,
  tags: ['data'],
  auth: 'key',
  lineage: true,
  body: Type.Object(
    {
      tickers: Tickers,
      metrics: Type.Optional(Type.Array(Metric, { minItems: 1, maxItems: 4 })),
      ...pageQueryProps(100, 100),
      ...historySpanProps(1),
      as_of: Type.Optional(
        Type.String({
          format: 'date',
          description:
            'The day to answer for (YYYY-MM-DD, default the latest state): hedge_ratios, full_metrics and teo are the ' +
            'stored state that day (as GET /metrics/{ticker}?as_of=), and the series end there unless end is given ' +
            '(an end after as_of is a 400). A day that is not a trading day resolves to the latest trading day on ' +
            'or before it (_metadata.as_of_note); outside the store a 404; a ticker not yet listed that day has a ' +
            'null teo and null state',
        }),
      ),
      format: Type.Optional(Format),
    },
    { additionalProperties: false },
  ),
  status: 200,
  response: Type.Object(
    {
      years: Type.Integer(),
      metrics: Type.Array(Metric),
      succeeded: Type.Integer(),
      failed: Type.Integer(),
      total: PageTotal,
      next_cursor: NextCursor,
      results: Type.Record(
        Type.String(),
        Type.Union([
          Type.Object({
            status: Type.Literal('ok'),
            ticker: Type.String(),
            symbol: Type.String(),
            ticker_note: TickerNote,
            asset_type: Nullable(Type.Union([Type.Literal('stock'), Type.Literal('etf')])),
            teo: Nullable(IsoDate),
            returns: Type.Optional(
              Type.Object({
                dates: series(IsoDate),
                values: NumSeries,
                l1: NumSeries,
                l2: NumSeries,
                l3: NumSeries,
              }),
            ),
            hedge_ratios: Type.Optional(batchHedgeRatiosSchema),
            full_metrics: Type.Optional(batchFullMetricsSchema),
            l3_decomposition: Type.Optional(l3MonthlySchema),
          }),
          batchTickerErrorSchema,
        ]),
      ),
      _metadata: riskMetadataSchema,
      _agent: agentMetaSchema,
    },
    { $id: 'BatchAnalyzeResponse' },
  ),
  errors: ERRORS,
})

export const ANALYTICS_OPS = {
  getLstar,
  batchLstar,
  getReturnsDecomposition,
  getL3Decomposition,
  batchAnalyze,
} as const
