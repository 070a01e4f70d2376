/**
 * The schemas of a /snapshot answer (snapshot.ts defines the operation and its request): the
 * snapshot with its positions, the risk summary, the daily time behaviour and the attribution.
 */
import { type TSchema, Type } from 'typebox'
import { IsoDate, Nullable, NullableNumber } from '../schemas.ts'
import { legRoleSchema, resolvedBenchmarkSchema } from './benchmark.ts'

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
    asset_type: Type.Union([Type.Literal('stock'), Type.Literal('etf')]),
    weight: Type.Number({ description: 'Signed fraction of the gross (negative = short); Σ|weight| = 1' }),
    shares: Nullable(Type.Number()),
    price_close: NullableNumber,
    market_value: NullableNumber,
    covered: Type.Boolean({
      description: 'Priced by its own model at as_of (a stock with a model, or an ETF)',
    }),
    reason: Nullable(Type.String({ description: 'Why a stock has no model at as_of' })),
    in_dataset: Type.Boolean({
      description: 'False for a ticker the dataset does not know (priced by a proxy, no returns of its own)',
    }),
    risk_basis: Type.Union(
      [Type.Literal('model'), Type.Literal('etf'), Type.Literal('proxy'), Type.Literal('none')],
      {
        description:
          'How it enters the risk figures: its own model; an ETF (exposure 1 to itself); proxy (no model: its sector ' +
          'ETF plus the median specific risk of its sector peers at as_of; a ticker not in the dataset: the proxy ETF ' +
          "asked, else the market ETF, plus its sector's or the whole universe's median); none (no proxy either: left out)",
      },
    ),
    proxy: Nullable(
      Type.Object({
        etf: Type.String({
          description:
            'The ETF it is proxied by (its sector ETF; the market ETF without a sector; for a ticker not in the ' +
            'dataset the proxy asked, else the market ETF)',
        }),
        peers: Type.Integer({ description: 'Stocks whose median specific variance it is given' }),
        peers_of: Nullable(
          Type.String({
            description:
              'The sector ETF whose stocks are the peers; null: every stock of the universe at as_of',
          }),
        ),
        given: Type.Boolean({ description: 'The ETF is the proxy the request gave for the position' }),
      }),
    ),
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
    residual_vol_ann: Nullable(
      Type.Number({
        description:
          'Annualised volatility of its residual, the specific variance the book uses: under sample the sample ' +
          'variance over the lookback; under ewma and ewma_nw the exponentially weighted variance, shrunk toward its ' +
          'sector peers for a short history (specific_shrinkage); a proxy: the peer median; an ETF: 0',
      }),
    ),
    specific_shrinkage: Nullable(
      Type.Number({
        description:
          'Share 1 − γ of the sector peers’ median specific variance in its own (ewma, ewma_nw: > 0 with fewer than ' +
          '126 residual returns in the window, 1 below 20); 0 under sample or with a long history; null without a model',
      }),
    ),
    residual_vol_model_ann: Nullable(
      Type.Number({
        description:
          "The /metrics basis of the same residual: vol_23d × √l3_res_er (23 days' volatility × the model " +
          "window's residual share); notes flag a position where it differs from residual_vol_ann by > 5 points",
      }),
    ),
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

export const snapshotSchema = Type.Object(
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
    weight_covered: Type.Number({
      description: 'Share of the gross priced by its own model (stocks with a model, and ETFs)',
    }),
    weight_proxied: Type.Number({
      description:
        'Share of the gross priced by a proxy (stocks without a model, tickers not in the dataset)',
    }),
    exposure: Type.Object(
      {
        long: Type.Number({ description: 'Σ positive weights (fraction of the gross)' }),
        short: Type.Number({ description: 'Σ negative weights (≤ 0)' }),
        net: Type.Number({ description: 'long + short' }),
        gross: Type.Number({ description: 'long − short (1: weights are normalised by the gross)' }),
        leverage: Nullable(
          Type.Number({ description: 'gross ÷ |net| (1.6 for a 130/30 book); null for a net-zero book' }),
        ),
        long_count: Type.Integer(),
        short_count: Type.Integer(),
        gross_amount: Type.Number({ description: 'Σ|amount| as given (dollars for share counts)' }),
        net_amount: Type.Number({ description: 'Σ amount as given (dollars for share counts)' }),
        amount_unit: Type.Union([Type.Literal('dollars'), Type.Literal('as_given')]),
      },
      { description: 'Long/short exposure; every risk figure is per 1 of gross' },
    ),
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
    forecast: Type.Object(
      {
        horizon_days: Type.Integer(),
        volatility: NullableNumber,
        systematic_vol: NullableNumber,
        residual_vol: NullableNumber,
        estimator: Type.String(),
      },
      {
        description:
          'Volatility over horizon_days (not annualised), per 1 of gross: √(horizon variance) of the book, its ' +
          'systematic and its residual part',
      },
    ),
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
    notes: Type.Array(Type.String(), {
      description:
        'Where a figure differs by construction from another endpoint (a residual volatility far from /metrics) or ' +
        'looks odd (a negative layer share), and why',
    }),
  },
  { $id: 'SnapshotBlock' },
)

const contributionRow = (key: string, extra: Record<string, TSchema> = {}) =>
  Type.Object({ [key]: Type.String(), ...extra, ...contributionSchema.properties })

const hedgeOutcome = Type.Object({ residual_vol_ann: NullableNumber, variance_reduction: NullableNumber })

export const riskSummarySchema = Type.Object(
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

export const timeBehaviorSchema = Type.Object(
  {
    dates: Type.Array(IsoDate),
    portfolio_return: series(
      'Frozen-weight daily return Σ w_i·r_i; null on a day no position has a return (skipped by every realised volatility)',
    ),
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
export const attributionSchema = Type.Object(
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
