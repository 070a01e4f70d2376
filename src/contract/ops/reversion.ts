import { Type } from 'typebox'
import { defineOperation } from '../operation.ts'
import { Nullable, NullableNumber, TickerParam } from '../schemas.ts'
import { common, ERRORS, Format, Teo, teoFields, UniverseBasis } from './cross-common.ts'

/** The residual-reversion signal of a basket (docs/methodology.md §13 "Residual-reversion basket"). */

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
