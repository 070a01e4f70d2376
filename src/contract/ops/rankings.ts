import { Type } from 'typebox'
import { defineOperation } from '../operation.ts'
import { NextCursor, Nullable, NullableNumber, PageTotal, pageQueryProps, TickerParam } from '../schemas.ts'
import { common, ERRORS, Format, Teo, teoFields, UniverseBasis } from './cross-common.ts'

/**
 * Rankings (docs/methodology.md §12 "Rankings"): the screen of the cross-section and every rank of
 * one ticker.
 */

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
const WINDOW_DOC = 'Trading days ending at teo; a window needs every day non-null'
const Window = Type.Union(
  [Type.Literal('1d'), Type.Literal('21d'), Type.Literal('63d'), Type.Literal('252d')],
  { description: WINDOW_DOC },
)
const COHORT_DOC =
  'universe: active default-universe members; sector / subsector: those sharing the sector (subsector) ETF'
const Cohort = Type.Union([Type.Literal('universe'), Type.Literal('sector'), Type.Literal('subsector')], {
  description: COHORT_DOC,
})
/**
 * What a screen without `cohort` or `window` ranks by: schema defaults, so the validator fills
 * them and a request spelling them out is the same request (contract/request-identity.ts).
 */
export const SCREEN_DEFAULTS = { cohort: 'universe', window: '21d' } as const
const ScreenCohort = Type.Union(Cohort.anyOf, { description: COHORT_DOC, default: SCREEN_DEFAULTS.cohort })
const ScreenWindow = Type.Union(Window.anyOf, { description: WINDOW_DOC, default: SCREEN_DEFAULTS.window })
const RANK_DOC =
  'Higher value ranks first, ties by symbol key; rank_ordinal 1 = best; rank_percentile = 100 × (1 − (rank_ordinal−1)/cohort_size); ' +
  'decile = ceil(10 × rank_ordinal / cohort_size), 1 = best.'

const rankingRowSchema = Type.Object(
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
    'within its own): sorted by rank_ordinal, then symbol key. Paged by the one cursor convention (limit, cursor → ' +
    'next_cursor, total): limit rows a page (default 100, at most 500); send the next_cursor back as cursor with ' +
    'the same other fields for the next page (each page is a call). total (= total_matches) counts the rows over all pages. ' +
    'Rankings at data_as_of are precomputed; other days are computed from the store on the first request (then ' +
    'cached). Parquet/CSV: the rows of the page.',
  tags: ['data'],
  auth: 'key',
  lineage: true,
  body: Type.Object(
    {
      metric: Metric,
      cohort: Type.Optional(ScreenCohort),
      window: Type.Optional(ScreenWindow),
      min_percentile: Type.Optional(Type.Number({ minimum: 0, maximum: 100 })),
      decile: Type.Optional(Type.Integer({ minimum: 1, maximum: 10, description: '1 = best' })),
      sector_filter: Type.Optional(
        Type.String({ maxLength: 32, description: 'A sector ETF ticker, e.g. XLK' }),
      ),
      ...pageQueryProps(100, 500),
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
      total_matches: Type.Integer({ description: 'Rows matching the filters over all pages (= total)' }),
      total: PageTotal,
      next_cursor: NextCursor,
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
