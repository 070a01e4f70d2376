import { Type } from 'typebox'
import { defineOperation } from '../operation.ts'
import { agentMetaSchema, IsoDate, Nullable, riskMetadataSchema, TickerParam } from '../schemas.ts'

/**
 * Macro and style correlation (docs/methodology.md §13 "Macro and style correlation"): one stock's
 * return series against the
 * 18 factor series, over trailing *paired* days. GET for one ticker, POST for one or a batch.
 */

export const MAX_CORRELATION_TICKERS = 50

const ReturnType = Type.Union(
  [Type.Literal('gross'), Type.Literal('l1'), Type.Literal('l2'), Type.Literal('l3_residual')],
  {
    description:
      'Stock side: gross (returns_gross), l1 (l1_rr, residual to the market), l2 (l2_rr, to market and sector), ' +
      'l3_residual (l3_rr, to market, sector and subsector; default). A level the stock has no ETF for (no sector ' +
      'ETF: no L2 or L3 residual) answers 400 saying why.',
  },
)
const Method = Type.Union([Type.Literal('pearson'), Type.Literal('spearman')], {
  description: 'pearson (default) or spearman (average ranks for ties)',
})
const FACTORS_DOC =
  'Comma-separated factor keys or aliases (e.g. oil,dxy,btc,momentum; default all 18). Unknown names answer 400 ' +
  'naming the valid keys.'
const Factors = Type.String({ maxLength: 400, description: FACTORS_DOC })
const WindowDays = Type.Integer({
  minimum: 20,
  maximum: 2000,
  default: 252,
  description:
    'Trailing paired days (both the stock and the factor non-null) ending at the stock’s last priced day (teo); default 252',
})
const Format = Type.String({ description: 'json (default), parquet or csv; else Accept decides' })

const options = {
  factors: Type.Optional(Factors),
  return_type: Type.Optional(ReturnType),
  window_days: Type.Optional(WindowDays),
  method: Type.Optional(Method),
}

const DESCRIPTION =
  'Correlation of the stock’s daily returns with each macro factor (inflation TIP, term_spread VGIT, short_rates ' +
  'BIL, credit HYG, oil USO, gold GLD, usd UUP, volatility VXX, bitcoin BITO, vix_spot = daily change of the VIX ' +
  'level in points) and style ETF (momentum MTUM, quality QUAL, low_vol USMV, value VLUE, growth IWF, size IWM, ' +
  'dividend SCHD, moat MOAT), over the last window_days days on which both are non-null, ending at the stock’s ' +
  'last priced day (teo). A factor with fewer than 30 such days (e.g. before its ETF existed) is null, with its ' +
  'overlap_days and a warning; a window that could not be filled is warned about too.'

const correlationResultSchema = Type.Object(
  {
    ticker: Type.String(),
    symbol: Type.String(),
    return_type: ReturnType,
    method: Method,
    window_days: Type.Integer(),
    teo: IsoDate,
    correlations: Type.Record(Type.String(), Nullable(Type.Number({ minimum: -1, maximum: 1 })), {
      description:
        'Factor key → correlation in [−1, 1], null with fewer than 30 paired days or a constant side',
    }),
    overlap_days: Type.Record(Type.String(), Type.Integer(), {
      description: 'Factor key → paired days used (at most window_days)',
    }),
    warnings: Type.Array(Type.String()),
  },
  { $id: 'CorrelationResult' },
)

const getCorrelation = defineOperation({
  id: 'getCorrelation',
  method: 'GET',
  path: '/metrics/:ticker/correlation',
  summary: 'Correlation of one ticker’s returns with the 10 macro and 8 style factors',
  description: DESCRIPTION,
  tags: ['data'],
  auth: 'key',
  lineage: true,
  params: Type.Object({ ticker: TickerParam }, { additionalProperties: false }),
  querystring: Type.Object(options, { additionalProperties: false }),
  status: 200,
  response: Type.Object(
    {
      ...correlationResultSchema.properties,
      _metadata: riskMetadataSchema,
      _agent: agentMetaSchema,
    },
    { $id: 'CorrelationResponse' },
  ),
  errors: [400, 401, 402, 404, 429],
})

const correlationErrorSchema = Type.Object(
  {
    ticker: Type.String(),
    status: Type.Literal('error'),
    code: Type.String(),
    detail: Type.String(),
  },
  { $id: 'CorrelationError' },
)

const postCorrelation = defineOperation({
  id: 'postCorrelation',
  method: 'POST',
  path: '/correlation',
  summary: 'Macro and style factor correlation of one ticker or a batch of up to 50',
  description:
    `${DESCRIPTION} Give ticker (one; priced like GET /metrics/{ticker}/correlation) or tickers (2–50, a batch ` +
    'priced per call). A batch answers results[] in the order asked, each a result or {ticker, status: "error", ' +
    'code, detail}; when no ticker succeeds the call fails with the first error. Parquet/CSV (batch): one row per ' +
    'ticker and factor (ticker, factor, correlation, pairs).',
  tags: ['data'],
  auth: 'key',
  lineage: true,
  body: Type.Object(
    {
      ticker: Type.Optional(TickerParam),
      tickers: Type.Optional(Type.Array(TickerParam, { minItems: 2, maxItems: MAX_CORRELATION_TICKERS })),
      ...options,
      factors: Type.Optional(
        Type.Union([Factors, Type.Array(Type.String({ maxLength: 40 }), { maxItems: 40 })], {
          description: `${FACTORS_DOC} A JSON array of the same names is accepted too.`,
        }),
      ),
      format: Type.Optional(Format),
    },
    { additionalProperties: false },
  ),
  status: 200,
  response: Type.Union(
    [
      Type.Object({
        ...correlationResultSchema.properties,
        _metadata: riskMetadataSchema,
        _agent: agentMetaSchema,
      }),
      Type.Object({
        results: Type.Array(Type.Union([correlationResultSchema, correlationErrorSchema])),
        _metadata: riskMetadataSchema,
        _agent: agentMetaSchema,
      }),
    ],
    { $id: 'PostCorrelationResponse' },
  ),
  errors: [400, 401, 402, 404, 406, 429],
})

export const CORRELATION_OPS = { getCorrelation, postCorrelation } as const
