import { Type } from 'typebox'
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
  StateAsOf,
  TickerParam,
} from '../schemas.ts'
import { hedgeLevelsSchema } from './metrics.ts'

/** History operations: decompose, ticker/gross returns, the ticker list. */

const tickerBody = Type.Object(
  { ticker: TickerParam, as_of: Type.Optional(StateAsOf) },
  { additionalProperties: false },
)

const dataHealthSchema = Type.Object(
  {
    er_populated: Type.Boolean({ description: 'All four L3 ERs exist (false: too little history)' }),
    er_sum: Nullable(Type.Number({ description: 'Sum of the four L3 ERs, about 1' })),
  },
  { $id: 'DataHealth' },
)

const STYLE_SPLIT =
  'style/stock_specific are an attribution-only split of the residual variance l3_res_er: ' +
  "style.explained_variance = the share of the stock's variance that the style ETFs (momentum MTUM, quality " +
  'QUAL, low_vol USMV, value VLUE, growth IWF, size IWM, dividend SCHD, moat MOAT) explain in its L3 ' +
  'residual — a weighted no-intercept regression over the model window, jointly with the L3 ETFs, of which ' +
  'only the style part is reported — and stock_specific.explained_variance = l3_res_er − style, so the two ' +
  'sum to l3_res_er. style.factors lists the style ETFs that took part (one that did not yet trade over the ' +
  'whole window is dropped); with none, style.explained_variance is null, stock_specific is all of ' +
  'l3_res_er and style.note says why. Neither is hedgeable with the factor ETFs; see /docs/methodology.'

const styleSchema = Type.Object(
  {
    explained_variance: NullableNumber,
    hedgeable: Type.Literal(false),
    role: Type.String({ description: "always 'diagnostic': attribution only, never a hedge" }),
    factors: Type.Array(Type.String(), {
      description: 'style factor keys that took part in the regression at this date (empty when null)',
    }),
    note: Nullable(Type.String({ description: 'why explained_variance is null; null otherwise' })),
  },
  { $id: 'StyleBlock' },
)

const stockSpecificSchema = Type.Object(
  { explained_variance: NullableNumber, hedgeable: Type.Boolean() },
  { $id: 'StockSpecificBlock' },
)

const decomposeLayerSchema = Type.Object(
  {
    er: Nullable(Type.Number({ description: 'Variance fraction' })),
    hr: Nullable(Type.Number({ description: 'Dollars of ETF per $1 of stock (dollar_ratio)' })),
    hedge_etf: Nullable(Type.String()),
  },
  { $id: 'DecomposeLayer' },
)

const decomposeResponseSchema = Type.Object(
  {
    ticker: Type.String(),
    symbol: Type.String(),
    data_as_of: IsoDate,
    teo: IsoDate,
    exposure: Type.Object({
      market: decomposeLayerSchema,
      sector: decomposeLayerSchema,
      subsector: decomposeLayerSchema,
      residual: decomposeLayerSchema,
    }),
    hedge: Type.Record(Type.String(), Type.Number(), {
      description: 'ETF → −HR dollars per $1 long; layers sharing an ETF are summed',
    }),
    hedge_levels: Nullable(hedgeLevelsSchema),
    style: Nullable(styleSchema),
    stock_specific: Nullable(stockSpecificSchema),
    _metadata: riskMetadataSchema,
    _data_health: dataHealthSchema,
    _agent: agentMetaSchema,
  },
  { $id: 'DecomposeResponse' },
)

const decompose = defineOperation({
  id: 'decompose',
  method: 'POST',
  path: '/decompose',
  summary: 'Market/sector/subsector/residual decomposition of a ticker with its ETF hedge',
  description:
    'L3 state (the latest, or as_of a past trading day: point in time): exposure layers (er, hr, hedge_etf; residual hr and hedge_etf null), the hedge map ' +
    '(ETF → −hr, summed when the subsector fell back to the sector ETF), hedge_levels as in /metrics. ' +
    `${STYLE_SPLIT} _data_health.er_sum is the sum of the four L3 ERs; a deviation from 1 above 0.05 is ` +
    'logged and still answered. A ticker without a model yet answers 200 with nulls and er_populated false.',
  tags: ['data'],
  auth: 'key',
  lineage: true,
  body: tickerBody,
  status: 200,
  response: decomposeResponseSchema,
  errors: [400, 401, 402, 404, 429],
})

const v4BlockProps = {
  etf: Nullable(Type.String()),
  beta: Nullable(
    Type.Number({
      description:
        'Hierarchical regression beta of the cascade step that adds this factor (market: L1 on SPY; sector: L2 on ' +
        'the L1 residual; subsector: L3 on the L2 residual), named in beta_source. Dimensionless and NOT the hedge ' +
        'ratio: hedge_notional is the L3 hedge ratio, the beta carried through the cascade',
    }),
  ),
  beta_source: Nullable(
    Type.String({ description: 'The stored field beta is (l1_mkt_beta, l2_sec_beta, l3_sub_beta)' }),
  ),
  explained_variance: NullableNumber,
  hedge_notional: Nullable(Type.Number({ description: 'ETF dollars to hold per $1 long stock (−hr)' })),
  hedge_source: Nullable(
    Type.String({
      description:
        'The stored hedge ratio hedge_notional negates (l3_mkt_hr, l3_sec_hr, l3_sub_hr): the L3 hedge',
    }),
  ),
}
const v4BlockSchema = Type.Object(v4BlockProps, { $id: 'DecomposeV4Block' })

const decomposeV4ResponseSchema = Type.Object(
  {
    ticker: Type.String(),
    symbol: Type.String(),
    data_as_of: IsoDate,
    teo: IsoDate,
    market: v4BlockSchema,
    industry: Type.Object({ sector: v4BlockSchema, subsector: v4BlockSchema }),
    style: Type.Object({
      ...v4BlockProps,
      hedgeable: Type.Literal(false),
      role: styleSchema.properties.role,
      factors: styleSchema.properties.factors,
      note: styleSchema.properties.note,
    }),
    stock_specific: Type.Object({ ...v4BlockProps, hedgeable: Type.Literal(false) }),
    _metadata: riskMetadataSchema,
    _data_health: dataHealthSchema,
    _agent: agentMetaSchema,
  },
  { $id: 'DecomposeV4Response' },
)

const decomposeV4 = defineOperation({
  id: 'decomposeV4',
  method: 'POST',
  path: '/v4/decompose',
  summary: 'Named-block decomposition: market, industry (sector, subsector), style, stock-specific',
  description:
    'The L3 state (the latest, or as_of a past trading day: point in time) in named blocks. Each block: etf, beta (the hierarchical beta l1_mkt_beta, l2_sec_beta, l3_sub_beta, named in beta_source), ' +
    'explained_variance (L3 ER) and hedge_notional = −hr (the L3 hedge ratio l3_*_hr, named in hedge_source) in ETF ' +
    'dollars per $1 long. The beta and the hedge ratio differ by design: the hedge ratio carries each beta through ' +
    `the cascade (docs/methodology.md §6). ${STYLE_SPLIT}`,
  tags: ['data'],
  auth: 'key',
  lineage: true,
  body: tickerBody,
  status: 200,
  response: decomposeV4ResponseSchema,
  errors: [400, 401, 402, 404, 429],
})

const YEARS_DOC =
  'Trading days from (end − years calendar years, exclusive) to the end inclusive, or from start to end ' +
  "inclusive when start is given (start wins over years); the end is the ticker's last priced day " +
  '(data_as_of while listed) unless end is given. Days before the first price are not returned.'

const historyProps = {
  ticker: TickerParam,
  ...historySpanProps(1),
  format: Type.Optional(Type.String({ description: 'json (default), parquet or csv' })),
}
const historyQuery = Type.Object(historyProps, { additionalProperties: false })

/** The selectable columns of a TickerReturnsDailyRow (`date` is always returned). */
export const TICKER_RETURNS_FIELDS = [
  'returns_gross',
  'price_close',
  'l3_mkt_hr',
  'l3_sec_hr',
  'l3_sub_hr',
  'l3_mkt_er',
  'l3_sec_er',
  'l3_sub_er',
  'l3_res_er',
] as const

const tickerReturnsQuery = Type.Object(
  { ...historyProps, fields: Type.Optional(FieldsParam(TICKER_RETURNS_FIELDS)) },
  { additionalProperties: false },
)

const tickerReturnsDailyRowSchema = Type.Object(
  {
    date: IsoDate,
    returns_gross: Type.Optional(NullableNumber),
    price_close: Type.Optional(NullableNumber),
    l3_mkt_hr: Type.Optional(NullableNumber),
    l3_sec_hr: Type.Optional(NullableNumber),
    l3_sub_hr: Type.Optional(NullableNumber),
    l3_mkt_er: Type.Optional(NullableNumber),
    l3_sec_er: Type.Optional(NullableNumber),
    l3_sub_er: Type.Optional(NullableNumber),
    l3_res_er: Type.Optional(NullableNumber),
  },
  { $id: 'TickerReturnsDailyRow' },
)

const tickerReturnsResponseSchema = Type.Object(
  {
    symbol: Type.String(),
    ticker: Type.String(),
    asset_type: Type.Union([Type.Literal('stock'), Type.Literal('etf')]),
    periodicity: Type.String(),
    data: Type.Array(tickerReturnsDailyRowSchema),
    meta: Type.Object({
      market_etf: Type.String(),
      sector_etf: Nullable(Type.String()),
      subsector_etf: Nullable(Type.String()),
      universe: Type.Union([Type.Literal('US_EQUITY'), Type.Literal('US_ETF')]),
    }),
    _metadata: riskMetadataSchema,
    _agent: agentMetaSchema,
  },
  { $id: 'TickerReturnsResponseV3' },
)

const getTickerReturns = defineOperation({
  id: 'getTickerReturns',
  method: 'GET',
  path: '/ticker-returns',
  summary: 'Daily gross returns and closes, with rolling L3 hedge ratios and ERs for stocks',
  description:
    `${YEARS_DOC} Stock rows carry the L3 HR/ER fields (null where the rolling window lacks data); ETF rows ` +
    'only date, returns_gross, price_close: branch on asset_type. meta ETFs are those in effect on the last ' +
    'day. Tabular (format=parquet|csv or Accept): one flat table of the same rows, date as TIMESTAMP_MILLIS.',
  tags: ['data'],
  auth: 'key',
  lineage: true,
  querystring: tickerReturnsQuery,
  status: 200,
  response: tickerReturnsResponseSchema,
  errors: [400, 401, 402, 404, 406, 429],
})

const grossReturnsResponseSchema = Type.Object(
  {
    ticker: Type.String(),
    symbol: Type.String(),
    dates: Type.Array(IsoDate),
    returns_gross: Type.Array(NullableNumber),
    _metadata: riskMetadataSchema,
    _agent: agentMetaSchema,
  },
  { $id: 'GrossReturnsResponse' },
)

const grossDoc = (kind: string, other: string) =>
  `${YEARS_DOC} Parallel arrays dates and returns_gross of ${kind}; ${other}. Tabular: GrossReturnDailyRow ` +
  '(date TIMESTAMP_MILLIS, returns_gross DOUBLE), the zip of the two arrays.'

const getReturns = defineOperation({
  id: 'getReturns',
  method: 'GET',
  path: '/returns',
  summary: 'Daily gross returns of a stock (parallel arrays)',
  description: grossDoc('a stock', 'an ETF ticker is 400 INVALID_TICKER (use /etf-returns)'),
  tags: ['data'],
  auth: 'key',
  lineage: true,
  querystring: historyQuery,
  status: 200,
  response: grossReturnsResponseSchema,
  errors: [400, 401, 402, 404, 406, 429],
})

const getEtfReturns = defineOperation({
  id: 'getEtfReturns',
  method: 'GET',
  path: '/etf-returns',
  summary: 'Daily gross returns of an ETF (parallel arrays)',
  description: grossDoc('an ETF', 'a stock ticker is 400 INVALID_TICKER (use /returns)'),
  tags: ['data'],
  auth: 'key',
  lineage: true,
  querystring: historyQuery,
  status: 200,
  response: grossReturnsResponseSchema,
  errors: [400, 401, 402, 404, 406, 429],
})

const tickerInfoSchema = Type.Object(
  {
    ticker: Type.String(),
    symbol: Type.String(),
    name: Type.String(),
    asset_type: Type.Union([Type.Literal('stock'), Type.Literal('etf')]),
    sector: Nullable(Type.String()),
    industry: Nullable(Type.String()),
    sector_etf: Nullable(Type.String()),
    subsector_etf: Nullable(Type.String()),
  },
  { $id: 'TickerInfo' },
)

const getTickers = defineOperation({
  id: 'getTickers',
  method: 'GET',
  path: '/tickers',
  summary: 'Ticker list and search (free)',
  description:
    'One entry per security under its latest ticker. search: ticker prefix or name substring, ' +
    'case-insensitive, ranked exact ticker, ticker prefix, name match; suggestions when nothing matches. ' +
    'mag7=true keeps AAPL MSFT GOOGL AMZN NVDA META TSLA (those present). include_metadata returns ' +
    'objects (name, asset_type, sector, industry, and the sector/subsector ETFs in effect at data_as_of) ' +
    'instead of strings. Paged by the one cursor convention (limit, cursor → next_cursor, total): count is the ' +
    'number on this page, total over all pages. Free, but needs a key.',
  tags: ['data'],
  auth: 'key',
  querystring: Type.Object(
    {
      search: Type.Optional(Type.String({ maxLength: 100 })),
      mag7: Type.Optional(Type.Boolean({ default: false })),
      include_metadata: Type.Optional(Type.Boolean({ default: false })),
      ...pageQueryProps(100, 1000),
    },
    { additionalProperties: false },
  ),
  status: 200,
  response: Type.Object(
    {
      tickers: Type.Union([Type.Array(Type.String()), Type.Array(tickerInfoSchema)]),
      count: Type.Integer({ description: 'Entries on this page' }),
      total: PageTotal,
      next_cursor: NextCursor,
      data_as_of: IsoDate,
      suggestions: Type.Optional(Type.Array(Type.String())),
    },
    { $id: 'TickersResponse' },
  ),
  errors: [400, 401, 429],
})

export const HISTORY_OPS = {
  decompose,
  decomposeV4,
  getTickerReturns,
  getReturns,
  getEtfReturns,
  getTickers,
} as const
