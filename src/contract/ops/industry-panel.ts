import { Type } from 'typebox'
import { defineOperation } from '../operation.ts'
import { Nullable } from '../schemas.ts'
import { common, ERRORS, Format, Teo, teoFields, UniverseBasis } from './cross-common.ts'

/**
 * The industry beta panel (docs/methodology.md §12 "Industry beta panel"): per GICS sub-industry,
 * the weighted mean and variance of a level beta.
 */

const PanelLevel = Type.Union([Type.Literal('market'), Type.Literal('sector'), Type.Literal('subsector')])

const industryRowSchema = Type.Object(
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
