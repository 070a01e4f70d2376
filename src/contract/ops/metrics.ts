import { Type } from 'typebox'
import { BETA_FIELDS, DECOMP_FIELDS, LEVEL_FIELDS } from '../../platform/metric-fields.ts'
import { defineOperation } from '../operation.ts'
import {
  agentMetaSchema,
  IsoDate,
  Nullable,
  NullableNumber,
  riskMetadataSchema,
  StateAsOf,
  TickerParam,
} from '../schemas.ts'

/** GET /metrics/{ticker}: MetricsSnapshotResponse (the metrics, their envelope, the hedge levels). */

export const METRICS_V3_FIELDS = [
  'vol_23d',
  'vol_252d_ann',
  'price_close',
  'market_cap',
  'stock_var',
  ...LEVEL_FIELDS,
  ...DECOMP_FIELDS,
  ...BETA_FIELDS,
] as const

export const metricsV3Schema = Type.Object(
  {
    ...(Object.fromEntries(METRICS_V3_FIELDS.map((f) => [f, NullableNumber])) as {
      [K in (typeof METRICS_V3_FIELDS)[number]]: typeof NullableNumber
    }),
    lstar_level: Nullable(Type.Union([Type.Literal(1), Type.Literal(2), Type.Literal(3)])),
  },
  { $id: 'MetricsV3' },
)

const levelEnum = Nullable(Type.Union([Type.Literal('L1'), Type.Literal('L2'), Type.Literal('L3')]))

const levelHedgeSnapshotSchema = Type.Object(
  {
    market_hr: NullableNumber,
    sector_hr: NullableNumber,
    subsector_hr: NullableNumber,
    market_er: NullableNumber,
    sector_er: NullableNumber,
    subsector_er: NullableNumber,
    residual_er: NullableNumber,
    hedge_etfs: Type.Object({
      market: Type.String(),
      sector: Nullable(Type.String()),
      subsector: Nullable(Type.String()),
    }),
  },
  { $id: 'LevelHedgeSnapshot' },
)

export const hedgeLevelsSchema = Type.Object(
  {
    L1: levelHedgeSnapshotSchema,
    L2: levelHedgeSnapshotSchema,
    L3: levelHedgeSnapshotSchema,
    recommended_level: Type.Optional(levelEnum),
    statistical_lstar: Type.Optional(levelEnum),
  },
  { $id: 'HedgeLevelsBlock' },
)

export const metricsSnapshotSchema = Type.Object(
  {
    symbol: Type.String(),
    ticker: Type.String(),
    teo: IsoDate,
    periodicity: Type.String(),
    metrics: metricsV3Schema,
    display: Type.Record(Type.String(), Type.String()),
    meta: Type.Object({ sector_etf: Nullable(Type.String()), asset_type: Nullable(Type.String()) }),
    hedge_levels: Type.Optional(Nullable(hedgeLevelsSchema)),
    _metadata: riskMetadataSchema,
    _agent: agentMetaSchema,
  },
  { $id: 'MetricsSnapshotResponse' },
)

export const getMetrics = defineOperation({
  id: 'getMetrics',
  method: 'GET',
  path: '/metrics/:ticker',
  summary:
    'MetricsV3 snapshot of a ticker (latest, or as_of a past day): HR, ER, betas, factor/residual returns, Lstar, hedge levels',
  tags: ['data'],
  auth: 'key',
  lineage: true,
  params: Type.Object({ ticker: TickerParam }, { additionalProperties: false }),
  querystring: Type.Object(
    {
      as_of: Type.Optional(StateAsOf),
    },
    { additionalProperties: false },
  ),
  status: 200,
  response: metricsSnapshotSchema,
  errors: [400, 401, 402, 404, 429],
})
