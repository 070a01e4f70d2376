import { Type } from 'typebox'
import { defineOperation } from '../operation.ts'
import { NullableNumber } from '../schemas.ts'
import { common, ERRORS, Format, Teo, teoFields } from './cross-common.ts'

/** Close and trailing total returns of the market ETF and the 11 sector ETFs. */

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
