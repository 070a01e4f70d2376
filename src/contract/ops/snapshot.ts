import { Type } from 'typebox'
import { defineOperation } from '../operation.ts'
import {
  agentMetaSchema,
  IsoDate,
  Nullable,
  riskMetadataSchema,
  TICKER_PATTERN,
  TickerParam,
} from '../schemas.ts'
import { BENCHMARK_OPS } from './benchmark.ts'
import {
  attributionSchema,
  riskSummarySchema,
  snapshotSchema,
  timeBehaviorSchema,
} from './snapshot-answer.ts'

/** Horizons and estimators of the book risk model (services/analytics/snapshot/risk-model.ts keeps the same lists). */
export const FORECAST_HORIZONS = [1, 21, 63, 252] as const
export const ESTIMATOR_NAMES = ['sample', 'ewma', 'ewma_nw'] as const
/** The one `erm3 evaluate` recommends (docs/model-quality.md): better bias and MRAD than sample at every size. */
export const DEFAULT_ESTIMATOR: (typeof ESTIMATOR_NAMES)[number] = 'ewma_nw'

/**
 * POST /snapshot: the risk of a book (or one ticker), decomposed by layer and hedgeable, with
 * real covariance; and GET /data/benchmark/{id} (free), the benchmark a snapshot resolved.
 * docs/methodology.md §13 "Portfolio risk" states every formula.
 */

export const MAX_SNAPSHOT_POSITIONS = 100
export const SNAPSHOT_TABLES = ['positions', 'attribution', 'time_behavior'] as const

const Weight = Type.Number({
  description:
    'Dollars or fractions, non-zero; negative = short. The weights are normalised by the gross (Σ|amount|), so ' +
    'the absolute weights sum to 1 and a short keeps its sign',
})
const Shares = Type.Number({
  description:
    'Share count, non-zero (negative = short), converted to dollars with the close at as_of (the last close ' +
    'before it for a stock that stopped trading)',
})

const ProxyParam = Type.String({
  maxLength: 32,
  pattern: TICKER_PATTERN,
  description:
    'Only for a ticker the dataset does not know (weight positions): the ETF of the store that stands in for it ' +
    "(exposure 1 to it; a sector ETF also gives the median specific risk of that sector's stocks). Without it such " +
    "a ticker is proxied by the market ETF plus the whole universe's median specific risk. Ignored, with a " +
    'warning, for a ticker the dataset knows',
})

const positionInput = Type.Object(
  {
    ticker: TickerParam,
    weight: Type.Optional(Weight),
    shares: Type.Optional(Shares),
    proxy: Type.Optional(ProxyParam),
  },
  {
    additionalProperties: false,
    description:
      'A stock or an ETF (an ETF position is exposure 1 to itself) and exactly one of weight or shares; a ticker ' +
      'the dataset does not know is proxied (proxy)',
  },
)

const LookbackDays = Type.Integer({
  minimum: 20,
  maximum: 2000,
  default: 252,
  description:
    'Trading days ending at data_as_of over which covariance, residual variance and the daily series run',
})

const BenchmarkParam = Nullable(
  Type.String({
    minLength: 1,
    maxLength: 4000,
    description:
      'An ETF alias (SPY or market; a sector ETF such as XLK), a weighted mix in percent summing to 100 ' +
      '(60:SPY,40:XLK), a custom mix holding stocks (50:AAPL,50:MSFT), or a benchmark id (bm_…). One that does ' +
      'not resolve is echoed with benchmark_context_id null and a warning.',
  }),
)

const AsOf = Type.String({
  format: 'date',
  description:
    'The day the risk is for (YYYY-MM-DD, default data_as_of): state, prices and lookback end that day and nothing ' +
    'later is read. A day that is not a trading day resolves to the previous one (with a warning); a day outside ' +
    'the store answers 404 DATE_NOT_AVAILABLE',
})
const Horizon = Type.Union(
  FORECAST_HORIZONS.map((h) => Type.Literal(h)),
  {
    description:
      'Trading days the forecast block is for (1, 21, 63 or 252; default 21): horizon variance = horizon × daily ' +
      'variance under every estimator (under ewma_nw the daily variance includes the Newey-West autocovariance ' +
      'terms)',
  },
)
const Estimator = Type.Union(
  ESTIMATOR_NAMES.map((e) => Type.Literal(e)),
  {
    description:
      `Book risk estimator of the ETF covariance (default ${DEFAULT_ESTIMATOR}, the one the model evaluation ` +
      'recommends): sample = equal weights over the lookback (the default before risk-model v3); ewma = exponential ' +
      'weights (volatility half-life 42 days, correlation 126, inputs winsorised at 5σ) over the lookback (at most ' +
      '504 days); ewma_nw = ewma with Newey-West (3 lags). _metadata.risk_model names the one used',
  },
)

export const snapshot = defineOperation({
  id: 'snapshot',
  method: 'POST',
  path: '/snapshot',
  summary:
    'Portfolio (or ticker) risk snapshot: covariance-based variance split, hedges, Euler contributions, benchmark',
  description:
    'type portfolio: 1–100 positions, each a stock or an ETF with exactly one of weight (dollars or fractions; ' +
    'negative = short) or shares (× price_close at as_of); weights are normalised by the gross Σ|amount|, so a short ' +
    'keeps its sign and every risk figure is per 1 of gross (snapshot.exposure: long, short, net, gross, leverage); ' +
    'weight and shares rows must not be mixed; a ticker given twice is summed (with a warning); a weight on a ticker ' +
    'the dataset does not know is a position priced by a proxy (the proxy ETF given, else the market ETF, plus a ' +
    'median specific risk; in_dataset false, a warning); a malformed ticker, or shares of an unknown one, is listed ' +
    'in snapshot.unresolved and the rest analysed (no ticker the dataset knows → 404). An ETF position is exposure 1 to ' +
    "itself; a stock without a model at as_of is proxied by its sector ETF plus its sector peers' median specific " +
    'risk (risk_basis proxy, weight_proxied). type ticker: one ticker, with ticker_meta. as_of: any past trading day ' +
    '(point in time; default data_as_of). lookback_days 20–2000 (default 252); horizon 1, 21, 63 or 252 days for ' +
    'snapshot.forecast; mode frozen. Portfolio variance = ' +
    "h'Σ_etf h + Σ w²σ²_res over the lookback, split by cascade layer; Euler contributions per position and per ETF " +
    'sum to the volatility; with a benchmark: active exposures and weights, tracking error and its split. ' +
    'time_behavior and attribution are daily frozen-weight series (the strips sum to gross). format=parquet|csv ' +
    'with table=positions (default), attribution or time_behavior. 0.25 USD per call.',
  tags: ['data'],
  auth: 'key',
  lineage: true,
  body: Type.Object(
    {
      type: Type.Union([Type.Literal('portfolio'), Type.Literal('ticker')]),
      portfolio: Type.Optional(
        Type.Array(positionInput, {
          minItems: 1,
          maxItems: MAX_SNAPSHOT_POSITIONS,
          description: 'type portfolio only',
        }),
      ),
      ticker: Type.Optional(Type.String({ ...TickerParam, description: 'type ticker only' })),
      lookback_days: Type.Optional(LookbackDays),
      mode: Type.Optional(
        Type.Literal('frozen', { description: 'Weights frozen over the lookback (the only mode)' }),
      ),
      benchmark: Type.Optional(BenchmarkParam),
      as_of: Type.Optional(AsOf),
      horizon: Type.Optional(Horizon),
      estimator: Type.Optional(Estimator),
      format: Type.Optional(
        Type.String({ description: 'json (default), parquet or csv; else Accept decides' }),
      ),
      table: Type.Optional(
        Type.Union(
          SNAPSHOT_TABLES.map((t) => Type.Literal(t)),
          { description: 'Which table a parquet/csv answer holds (default positions)' },
        ),
      ),
    },
    { additionalProperties: false },
  ),
  status: 200,
  response: Type.Object(
    {
      snapshot: snapshotSchema,
      risk_summary: riskSummarySchema,
      time_behavior: timeBehaviorSchema,
      attribution: attributionSchema,
      metadata: Type.Object({
        data_as_of: IsoDate,
        as_of: IsoDate,
        lookback_days: Type.Integer(),
        mode: Type.Literal('frozen'),
        benchmark: Nullable(Type.String({ description: 'As sent, unchanged' })),
        benchmark_context_id: Nullable(Type.String()),
      }),
      _metadata: riskMetadataSchema,
      _agent: agentMetaSchema,
    },
    { $id: 'CanonicalSnapshotResponse' },
  ),
  errors: [400, 401, 402, 404, 406, 429],
})

export const SNAPSHOT_OPS = { snapshot, ...BENCHMARK_OPS } as const
