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
 * Cross-sectional operations (spec §2.7, §4, §8; METHODOLOGY §9–§10): the industry panel,
 * rankings (screen and per ticker), universe membership, the market/sector ETF factor returns and
 * the residual-reversion basket. All are stored per trading day and answer at any `teo`.
 */

const Format = Type.String({ description: 'json (default), parquet or csv; else Accept decides' })
const ERRORS = [400, 401, 402, 404, 406, 429]
const Teo = Type.String({
  format: 'date',
  description:
    'Trading day to answer for (YYYY-MM-DD, default data_as_of). A day that is not a trading day resolves to the ' +
    'previous trading day (the response says so in teo / teo_requested); a day outside the store answers 404 ' +
    'DATE_NOT_AVAILABLE naming the available range.',
})
const teoFields = {
  teo: IsoDate,
  teo_requested: Type.Optional(IsoDate),
  teo_note: Type.Optional(Type.String()),
}
const UniverseBasis = Type.Union(
  [Type.Literal('market_cap'), Type.Literal('dollar_volume'), Type.Literal('all_valid')],
  {
    description:
      'How the default universe (cohorts, deciles) was formed: uni_mc_3000 by market cap; without market caps ' +
      'uni_dv_3000 by dollar volume; without volume either, every valid stock (METHODOLOGY §9)',
  },
)
const common = { _metadata: riskMetadataSchema, _agent: agentMetaSchema }

// ---------------------------------------------------------------------------------------------

const PanelLevel = Type.Union([Type.Literal('market'), Type.Literal('sector'), Type.Literal('subsector')])

export const industryRowSchema = Type.Object(
  {
    industry: Type.String({
      description:
        'Stable industry identifier: the GICS sub-industry name in snake_case (e.g. application_software)',
    }),
    industry_name: Type.String({ description: 'GICS sub-industry name (e.g. Application Software)' }),
    level: PanelLevel,
    beta_mean: Nullable(Type.Number({ description: 'Σwβ/Σw of the level beta over members' })),
    beta_variance: Nullable(Type.Number({ description: 'Σw(β−beta_mean)²/Σw' })),
    n_companies: Type.Integer(),
    total_log_mcap_weight: Nullable(
      Type.Number({ description: 'Σw, w = ln(1+market_cap); the member count when weight_basis is equal' }),
    ),
    sector_etf: Nullable(Type.String({ description: "Sector ETF the industry's members are assigned" })),
    subsector_etf: Nullable(
      Type.String({ description: 'Subsector ETF of the industry, null when it has none' }),
    ),
  },
  { $id: 'IndustryPanelRow' },
)

export const getIndustryPanel = defineOperation({
  id: 'getIndustryPanel',
  method: 'GET',
  path: '/industry-panel',
  summary:
    'Industry beta panel: weighted mean and variance of market, sector or subsector betas per industry',
  description:
    'Per GICS sub-industry and level (market: l1_mkt_beta, sector: l2_sec_beta, subsector: l3_sub_beta), over ' +
    'active default-universe members with a beta at teo: beta_mean = Σwβ/Σw, beta_variance = Σw(β−mean)²/Σw, ' +
    'w = ln(1+market_cap) (weight_basis log_market_cap) or 1 for every member when the dataset has no market caps ' +
    '(weight_basis equal). Industries with fewer than min_peers members are left out. Without level, all three ' +
    'levels. Rows are ordered by level, then industry name. Parquet/CSV: one row per industry and level.',
  tags: ['data'],
  auth: 'key',
  lineage: true,
  querystring: Type.Object(
    {
      level: Type.Optional(PanelLevel),
      teo: Type.Optional(Teo),
      min_peers: Type.Optional(
        Type.Integer({ minimum: 1, maximum: 3000, default: 5, description: 'Minimum members (default 5)' }),
      ),
      format: Type.Optional(Format),
    },
    { additionalProperties: false },
  ),
  status: 200,
  response: Type.Object(
    {
      ...teoFields,
      level: Nullable(PanelLevel),
      min_peers: Type.Integer(),
      weight_basis: Type.Union([Type.Literal('log_market_cap'), Type.Literal('equal')]),
      universe_basis: UniverseBasis,
      industries: Type.Array(industryRowSchema),
      ...common,
    },
    { $id: 'IndustryPanelResponse' },
  ),
  errors: ERRORS,
})

// ---------------------------------------------------------------------------------------------

const Metric = Type.Union(
  [
    Type.Literal('mkt_cap'),
    Type.Literal('gross_return'),
    Type.Literal('sector_residual'),
    Type.Literal('subsector_residual'),
    Type.Literal('er_l1'),
    Type.Literal('er_l2'),
    Type.Literal('er_l3'),
  ],
  {
    description:
      'mkt_cap (at teo); gross_return, sector_residual (l2_rr), subsector_residual (l3_rr) compounded over the window; ' +
      'er_l1, er_l2, er_l3 averaged over the window',
  },
)
const Window = Type.Union(
  [Type.Literal('1d'), Type.Literal('21d'), Type.Literal('63d'), Type.Literal('252d')],
  { description: 'Trading days ending at teo; a window needs every day non-null' },
)
const Cohort = Type.Union([Type.Literal('universe'), Type.Literal('sector'), Type.Literal('subsector')], {
  description:
    'universe: active default-universe members; sector / subsector: those sharing the sector (subsector) ETF',
})
const RANK_DOC =
  'Higher value ranks first, ties by symbol key; rank_ordinal 1 = best; rank_percentile = 100 × (1 − (rank_ordinal−1)/cohort_size); ' +
  'decile = ceil(10 × rank_ordinal / cohort_size), 1 = best.'

export const rankingRowSchema = Type.Object(
  {
    ticker: Type.String(),
    symbol: Type.String(),
    value: Type.Number(),
    rank_ordinal: Type.Integer({ minimum: 1 }),
    rank_percentile: Type.Number(),
    decile: Type.Integer({ minimum: 1, maximum: 10 }),
    cohort_size: Type.Integer({ minimum: 1 }),
    sector_etf: Nullable(Type.String()),
    subsector_etf: Nullable(Type.String()),
  },
  { $id: 'RankingRow' },
)

export const rankingsScreen = defineOperation({
  id: 'rankingsScreen',
  method: 'POST',
  path: '/rankings/screen',
  summary: 'Screen the cross-section: stocks ranked by a metric over a window within a cohort',
  description:
    `${RANK_DOC} min_percentile keeps rows with rank_percentile ≥ it; decile keeps one decile; sector_filter keeps ` +
    'members of one sector ETF (an unknown sector ETF is a 400 naming the valid ones). Defaults: cohort universe, window 21d. With cohort sector or subsector the rows come from several cohorts (each ranked ' +
    'within its own): sorted by rank_ordinal, then symbol key. Up to limit rows (default 100, at most 500). ' +
    'Rankings at data_as_of are precomputed; other days are computed from the store on the first request (then ' +
    'cached). Parquet/CSV: the rows.',
  tags: ['data'],
  auth: 'key',
  lineage: true,
  body: Type.Object(
    {
      metric: Metric,
      cohort: Type.Optional(Cohort),
      window: Type.Optional(Window),
      min_percentile: Type.Optional(Type.Number({ minimum: 0, maximum: 100 })),
      decile: Type.Optional(Type.Integer({ minimum: 1, maximum: 10, description: '1 = best' })),
      sector_filter: Type.Optional(
        Type.String({ maxLength: 32, description: 'A sector ETF ticker, e.g. XLK' }),
      ),
      limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 500, default: 100 })),
      teo: Type.Optional(Teo),
      format: Type.Optional(Format),
    },
    { additionalProperties: false },
  ),
  status: 200,
  response: Type.Object(
    {
      ...teoFields,
      metric: Metric,
      cohort: Cohort,
      window: Window,
      universe_basis: UniverseBasis,
      total_matches: Type.Integer({ description: 'Rows matching the filters before limit' }),
      rows: Type.Array(rankingRowSchema),
      ...common,
    },
    { $id: 'RankingsScreenResponse' },
  ),
  errors: ERRORS,
})

const tickerRankSchema = Type.Object(
  {
    metric: Metric,
    window: Window,
    cohort: Cohort,
    value: NullableNumber,
    rank_ordinal: Nullable(Type.Integer()),
    rank_percentile: NullableNumber,
    decile: Nullable(Type.Integer()),
    cohort_size: Nullable(Type.Integer()),
  },
  { $id: 'TickerRank' },
)

export const getRankings = defineOperation({
  id: 'getRankings',
  method: 'GET',
  path: '/rankings/:ticker',
  summary: 'Every metric × window × cohort rank of one ticker at a day',
  description: `${RANK_DOC} 7 metrics × 4 windows × 3 cohorts = 84 rows; a row of a stock not ranked there (not an active member, or no value over the window) has nulls.`,
  tags: ['data'],
  auth: 'key',
  lineage: true,
  params: Type.Object({ ticker: TickerParam }, { additionalProperties: false }),
  querystring: Type.Object(
    { teo: Type.Optional(Teo), format: Type.Optional(Format) },
    { additionalProperties: false },
  ),
  status: 200,
  response: Type.Object(
    {
      ticker: Type.String(),
      symbol: Type.String(),
      ...teoFields,
      sector_etf: Nullable(Type.String()),
      subsector_etf: Nullable(Type.String()),
      universe_basis: UniverseBasis,
      rankings: Type.Array(tickerRankSchema),
      ...common,
    },
    { $id: 'TickerRankingsResponse' },
  ),
  errors: ERRORS,
})

// ---------------------------------------------------------------------------------------------

export const getUniverseMembers = defineOperation({
  id: 'getUniverseMembers',
  method: 'GET',
  path: '/universe/:universe/members',
  summary: 'Members of a monthly universe at a day, with their rank and whether they are active',
  description:
    'uni_mc_N ranks valid stocks by market cap, uni_dv_N by mean daily dollar volume over 63 trading days, on ' +
    'the last trading day of each month (mask_as_of); the top N are the mask for the next month. active = in the ' +
    'mask AND valid at teo (a close and a return). A universe the dataset cannot form (no market caps for uni_mc, ' +
    'no volume for uni_dv) answers 400 saying which input is missing. Before the first month-end mask_as_of is null ' +
    'and there are no members. Parquet/CSV: the members.',
  tags: ['data'],
  auth: 'key',
  lineage: true,
  params: Type.Object(
    {
      universe: Type.Union(
        [
          Type.Literal('uni_mc_50'),
          Type.Literal('uni_mc_500'),
          Type.Literal('uni_mc_1000'),
          Type.Literal('uni_mc_3000'),
          Type.Literal('uni_dv_50'),
          Type.Literal('uni_dv_500'),
          Type.Literal('uni_dv_1000'),
          Type.Literal('uni_dv_3000'),
        ],
        { description: 'Universe name' },
      ),
    },
    { additionalProperties: false },
  ),
  querystring: Type.Object(
    { teo: Type.Optional(Teo), format: Type.Optional(Format) },
    { additionalProperties: false },
  ),
  status: 200,
  response: Type.Object(
    {
      universe: Type.String(),
      ...teoFields,
      mask_as_of: Nullable(IsoDate),
      basis: Type.Union([Type.Literal('market_cap'), Type.Literal('dollar_volume')]),
      counts: Type.Object({ mask: Type.Integer(), active: Type.Integer() }),
      members: Type.Array(
        Type.Object({
          ticker: Type.String(),
          symbol: Type.String(),
          rank: Type.Integer({ minimum: 1 }),
          active: Type.Boolean(),
        }),
      ),
      ...common,
    },
    { $id: 'UniverseMembersResponse' },
  ),
  errors: ERRORS,
})

// ---------------------------------------------------------------------------------------------

export const getEtfFactorReturns = defineOperation({
  id: 'getEtfFactorReturns',
  method: 'GET',
  path: '/etf/factor-returns',
  summary: 'Close and 1d/21d/63d/252d total returns of the market ETF and the 11 sector ETFs',
  description:
    'Returns are compounded daily total returns prod(1+r)−1 over the last 1, 21, 63 and 252 trading days ending ' +
    'at teo (null when any day is missing). tickers: comma-separated or repeated, default all 12 (SPY and the 11 ' +
    'sector SPDRs); any other ticker answers 400 naming the allowed set. Parquet/CSV: one row per ETF.',
  tags: ['data'],
  auth: 'key',
  lineage: true,
  querystring: Type.Object(
    {
      tickers: Type.Optional(
        Type.String({ maxLength: 200, description: 'e.g. SPY,XLK,XLF (default: all 12)' }),
      ),
      teo: Type.Optional(Teo),
      format: Type.Optional(Format),
    },
    { additionalProperties: false },
  ),
  status: 200,
  response: Type.Object(
    {
      ...teoFields,
      etfs: Type.Array(
        Type.Object({
          ticker: Type.String(),
          role: Type.Union([Type.Literal('market'), Type.Literal('sector')]),
          close: NullableNumber,
          return_1d: NullableNumber,
          return_21d: NullableNumber,
          return_63d: NullableNumber,
          return_252d: NullableNumber,
        }),
      ),
      ...common,
    },
    { $id: 'EtfFactorReturnsResponse' },
  ),
  errors: ERRORS,
})

// ---------------------------------------------------------------------------------------------

const histogramBucket = (key: string, max: number) =>
  Type.Object({
    [key]: Type.Integer({ minimum: 1, maximum: max }),
    count: Type.Integer(),
    weight: Type.Number({ description: 'Sum of the members’ weights in the bucket' }),
  })

export const residualReversionBasket = defineOperation({
  id: 'residualReversionBasket',
  method: 'POST',
  path: '/signals/residual-reversion/basket',
  summary:
    'Residual-reversion signal of a basket: weighted z, decile and quality histograms, per-member rows',
  description:
    'z = (sum of the last 5 l3_rr) / (std of the last 60 l3_rr × √5) at teo; decile 1..10 over the default ' +
    'universe (1 = most negative z); quality_quintile 1..5 of l3_sub_er (5 = highest). Give tickers (equal ' +
    'weights) or positions [{ticker, weight}], at most 500, no duplicates. A member is included when it has a z ' +
    'and, with signal_quality_min_quintile, a quality quintile at least that; every other member is listed with ' +
    'included false and the reason (TICKER_NOT_FOUND, NO_SIGNAL, NO_QUALITY, BELOW_QUALITY). aggregate.z = ' +
    'Σ w·z / Σ|w| over included members. When no ticker is known the call answers 404. Parquet/CSV: the members.',
  tags: ['data'],
  auth: 'key',
  lineage: true,
  body: Type.Object(
    {
      tickers: Type.Optional(Type.Array(TickerParam, { minItems: 1, maxItems: 500 })),
      positions: Type.Optional(
        Type.Array(
          Type.Object(
            { ticker: TickerParam, weight: Type.Number({ description: 'Signed weight (any scale)' }) },
            { additionalProperties: false },
          ),
          { minItems: 1, maxItems: 500 },
        ),
      ),
      signal_quality_min_quintile: Type.Optional(Type.Integer({ minimum: 1, maximum: 5 })),
      teo: Type.Optional(Teo),
      format: Type.Optional(Format),
    },
    { additionalProperties: false },
  ),
  status: 200,
  response: Type.Object(
    {
      ...teoFields,
      signal_quality_min_quintile: Nullable(Type.Integer()),
      universe_basis: UniverseBasis,
      aggregate: Type.Object({
        z: NullableNumber,
        weighting: Type.String(),
        n_members: Type.Integer(),
        n_included: Type.Integer(),
        gross_weight: Type.Number(),
      }),
      decile_histogram: Type.Array(histogramBucket('decile', 10)),
      quality_quintile_histogram: Type.Array(histogramBucket('quality_quintile', 5)),
      members: Type.Array(
        Type.Object({
          ticker: Type.String(),
          symbol: Nullable(Type.String()),
          z: NullableNumber,
          decile: Nullable(Type.Integer()),
          quality_quintile: Nullable(Type.Integer()),
          weight: Type.Number(),
          included: Type.Boolean(),
          reason: Nullable(Type.String()),
        }),
      ),
      ...common,
    },
    { $id: 'ResidualReversionBasketResponse' },
  ),
  errors: ERRORS,
})

export const CROSS_OPS = {
  getIndustryPanel,
  rankingsScreen,
  getRankings,
  getUniverseMembers,
  getEtfFactorReturns,
  residualReversionBasket,
} as const
