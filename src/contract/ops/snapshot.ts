import { type TSchema, Type } from 'typebox'
import { defineOperation } from '../operation.ts'
import {
  agentMetaSchema,
  IsoDate,
  Nullable,
  NullableNumber,
  riskMetadataSchema,
  TickerParam,
} from '../schemas.ts'
import { BENCHMARK_OPS, legRoleSchema, resolvedBenchmarkSchema } from './benchmark.ts'

/**
 * POST /snapshot: the risk of a book (or one ticker), decomposed by layer and hedgeable, with
 * real covariance; and GET /data/benchmark/{id} (free), the benchmark a snapshot resolved.
 * docs/methodology.md §13 "Portfolio risk" states every formula.
 */

export const MAX_SNAPSHOT_POSITIONS = 100
export const SNAPSHOT_TABLES = ['positions', 'attribution', 'time_behavior'] as const

const Weight = Type.Number({
  exclusiveMinimum: 0,
  description: 'Dollars or fractions (> 0); the weights are normalised to sum to 1',
})
const Shares = Type.Number({
  exclusiveMinimum: 0,
  description: 'Share count (> 0), converted to dollars with the latest price_close',
})

const positionInput = Type.Object(
  { ticker: TickerParam, weight: Type.Optional(Weight), shares: Type.Optional(Shares) },
  { additionalProperties: false, description: 'A stock and exactly one of weight or shares' },
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

const levelEnum = Nullable(Type.Union([Type.Literal('L1'), Type.Literal('L2'), Type.Literal('L3')]))
const roleEnum = legRoleSchema

const hedgeLegSchema = Type.Object(
  {
    etf: Type.String(),
    hr: Type.Number({ description: 'Dollars of ETF exposure per $1 of book (neutralise with −hr)' }),
  },
  { $id: 'SnapshotHedgeLeg' },
)

const splitSchema = Type.Object(
  {
    market: NullableNumber,
    sector: NullableNumber,
    subsector: NullableNumber,
    residual: NullableNumber,
    systematic: NullableNumber,
  },
  {
    $id: 'SnapshotLayerSplit',
    description:
      'Fractions of variance by cascade layer: market V1/V, sector (V2−V1)/V, subsector (V3−V2)/V, residual D/V; ' +
      'market + sector + subsector + residual = 1; systematic = V3/V',
  },
)

const contributionSchema = Type.Object({
  marginal: NullableNumber,
  component: NullableNumber,
  percent: NullableNumber,
})

const positionSchema = Type.Object(
  {
    ticker: Type.String(),
    symbol: Type.String(),
    name: Type.String(),
    sector: Nullable(Type.String()),
    weight: Type.Number({ description: 'Normalised weight in the book' }),
    shares: Nullable(Type.Number()),
    price_close: NullableNumber,
    market_value: NullableNumber,
    covered: Type.Boolean({ description: 'Part of the risk figures (has a model at as_of)' }),
    reason: Nullable(Type.String({ description: 'Why an uncovered position is left out' })),
    model_level: Nullable(Type.Integer({ description: 'Deepest level of its state at as_of (1–3)' })),
    hedge_etfs: Type.Object({
      market: Type.String(),
      sector: Nullable(Type.String()),
      subsector: Nullable(Type.String()),
    }),
    l3_mkt_hr: NullableNumber,
    l3_sec_hr: NullableNumber,
    l3_sub_hr: NullableNumber,
    l3_mkt_er: NullableNumber,
    l3_sec_er: NullableNumber,
    l3_sub_er: NullableNumber,
    l3_res_er: NullableNumber,
    recommended_level: levelEnum,
    vol_23d: NullableNumber,
    residual_vol_ann: NullableNumber,
    standalone_vol_ann: NullableNumber,
    risk_contribution: contributionSchema,
  },
  { $id: 'SnapshotPosition' },
)

const unresolvedSchema = Type.Object(
  {
    ticker: Type.String(),
    code: Type.String(),
    detail: Type.String(),
    suggestions: Type.Optional(Type.Array(Type.String())),
  },
  { $id: 'SnapshotUnresolved' },
)

const exposureSchema = Type.Object({
  etf: Type.String(),
  portfolio: Type.Number(),
  benchmark: Type.Number(),
  active: Type.Number(),
})

const riskBlock = {
  volatility_ann: NullableNumber,
  systematic_vol_ann: NullableNumber,
  residual_vol_ann: NullableNumber,
  variance_decomposition: splitSchema,
}

const snapshotSchema = Type.Object(
  {
    type: Type.Union([Type.Literal('portfolio'), Type.Literal('ticker')]),
    as_of: IsoDate,
    lookback: Type.Object({
      from: IsoDate,
      to: IsoDate,
      days: Type.Integer({ description: 'Trading days in the lookback' }),
      etf_days: Type.Integer({
        description: 'Days on which every ETF in play has a return (the covariance sample)',
      }),
    }),
    positions: Type.Array(positionSchema, { description: 'Sorted by weight, largest first' }),
    positions_count: Type.Integer(),
    covered_count: Type.Integer(),
    weight_covered: Type.Number({ description: 'Share of the book the risk figures cover' }),
    hedges: Type.Object(
      {
        L1: Type.Array(hedgeLegSchema),
        L2: Type.Array(hedgeLegSchema),
        L3: Type.Array(hedgeLegSchema),
        recommended: Type.Array(hedgeLegSchema),
      },
      {
        description:
          'Portfolio hedge per ETF, Σ w_i·HR_i (same ETF summed), per level; recommended = each position at its own recommended level',
      },
    ),
    ...riskBlock,
    diversification_ratio: NullableNumber,
    unresolved: Type.Array(unresolvedSchema),
    benchmark: Nullable(resolvedBenchmarkSchema),
    benchmark_context_id: Nullable(Type.String()),
    ticker_meta: Type.Optional(
      Type.Object({
        ticker: Type.String(),
        symbol: Type.String(),
        name: Type.String(),
        factors: Type.Array(Type.String(), {
          description: 'Active L3 factor ETFs (market, sector, subsector), de-duplicated',
        }),
        recommended_level: levelEnum,
      }),
    ),
    warnings: Type.Array(Type.String()),
  },
  { $id: 'SnapshotBlock' },
)

const contributionRow = (key: string, extra: Record<string, TSchema> = {}) =>
  Type.Object({ [key]: Type.String(), ...extra, ...contributionSchema.properties })

const hedgeOutcome = Type.Object({ residual_vol_ann: NullableNumber, variance_reduction: NullableNumber })

const riskSummarySchema = Type.Object(
  {
    total_risk_ann: NullableNumber,
    systematic_share: NullableNumber,
    dominant_drivers: Type.Array(
      Type.Object({
        kind: Type.Union([Type.Literal('etf'), Type.Literal('position'), Type.Literal('residual')]),
        name: Type.String(),
        percent: Type.Number({ description: 'Share of total risk (component / total)' }),
      }),
    ),
    top_exposures: Type.Array(Type.Object({ etf: Type.String(), role: roleEnum, hr: Type.Number() })),
    concentration: Type.Object({
      effective_positions: Type.Number({ description: '1 / Σ w²' }),
      max_weight: Type.Number(),
      top5_weight: Type.Number(),
      sector_weights: Type.Record(Type.String(), Type.Number()),
      flags: Type.Array(Type.String()),
    }),
    contributions: Type.Object({
      positions: Type.Array(contributionRow('ticker', { weight: Type.Number() })),
      etfs: Type.Array(contributionRow('etf', { exposure: Type.Number() })),
      residual: contributionSchema,
    }),
    active: Nullable(
      Type.Object({
        tracking_error_ann: NullableNumber,
        active_split: splitSchema,
        active_weights: Type.Array(
          Type.Object({
            ticker: Type.String(),
            portfolio: Type.Number(),
            benchmark: Type.Number(),
            active: Type.Number(),
          }),
        ),
        active_exposures: Type.Array(exposureSchema),
      }),
    ),
    hedge_effectiveness: Type.Object(
      {
        realized_vol_ann: NullableNumber,
        L1: hedgeOutcome,
        L2: hedgeOutcome,
        L3: hedgeOutcome,
      },
      {
        description:
          "Realised and out of sample over the lookback: the book's daily return after holding each level's hedge " +
          'from the previous close (the L1, L2, L3 residual strips), its annualised volatility and the share of the ' +
          'gross variance it removed',
      },
    ),
    benchmark_risk: Nullable(
      Type.Object({ ...riskBlock, hedges_L3: Type.Array(hedgeLegSchema), weight_covered: Type.Number() }),
    ),
  },
  { $id: 'SnapshotRiskSummary' },
)

const series = (d: string) => Type.Array(NullableNumber, { description: d })

const timeBehaviorSchema = Type.Object(
  {
    dates: Type.Array(IsoDate),
    portfolio_return: series('Frozen-weight daily return Σ w_i·r_i'),
    cumulative_return: series('Π(1+r) − 1 to date'),
    drawdown: series('(1+cum)/running max(1, 1+cum) − 1'),
    max_drawdown: NullableNumber,
    realized_vol_ann: NullableNumber,
    benchmark_return: Type.Optional(series('Σ w_b·r_b')),
    benchmark_cumulative_return: Type.Optional(series('benchmark Π(1+r) − 1')),
    active_return: Type.Optional(series('portfolio − benchmark')),
  },
  { $id: 'SnapshotTimeBehavior' },
)

const strips = ['gross', 'market', 'sector', 'subsector', 'residual', 'systematic'] as const
const attributionSchema = Type.Object(
  {
    dates: Type.Array(IsoDate),
    ...Object.fromEntries(strips.map((s) => [s, Type.Array(Type.Number())])),
    totals: Type.Object(Object.fromEntries(strips.map((s) => [s, Type.Number()])), {
      description:
        'Geometric compounding: market Π(1+m)−1, sector Π(1+m+s)−Π(1+m), subsector Π(1+m+s+u)−Π(1+m+s), residual Π(1+g)−Π(1+m+s+u)',
    }),
  },
  { $id: 'SnapshotAttribution' },
)

export const snapshot = defineOperation({
  id: 'snapshot',
  method: 'POST',
  path: '/snapshot',
  summary:
    'Portfolio (or ticker) risk snapshot: covariance-based variance split, hedges, Euler contributions, benchmark',
  description:
    'type portfolio: 1–100 positions, each a stock with exactly one of weight (dollars or fractions, normalised) or ' +
    'shares (× latest price_close); weight and shares rows must not be mixed; a ticker given twice is summed (with a ' +
    'warning); unknown tickers are listed in snapshot.unresolved and the rest analysed (all unknown → 404). type ' +
    'ticker: one ticker, with ticker_meta. lookback_days 20–2000 (default 252); mode frozen. Portfolio variance = ' +
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
