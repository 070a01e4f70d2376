import { Type } from 'typebox'
import { methodologyRef } from '../methodology.ts'
import { agentMetaSchema, IsoDate, riskMetadataSchema } from '../schemas.ts'

/** Pieces every cross-sectional operation shares: the day it answers for, the formats, the errors. */

export const Format = Type.String({ description: 'json (default), parquet or csv; else Accept decides' })
export const ERRORS = [400, 401, 402, 404, 406, 429]
export const Teo = Type.String({
  format: 'date',
  description:
    'Trading day to answer for (YYYY-MM-DD, default data_as_of). A day that is not a trading day resolves to the ' +
    'previous trading day (the response says so in teo / teo_requested); a day outside the store answers 404 ' +
    'DATE_NOT_AVAILABLE naming the available range.',
})
export const teoFields = {
  teo: IsoDate,
  teo_requested: Type.Optional(IsoDate),
  teo_note: Type.Optional(Type.String()),
}
export const UniverseBasis = Type.Union(
  [Type.Literal('market_cap'), Type.Literal('dollar_volume'), Type.Literal('all_valid')],
  {
    description:
      'How the default universe (cohorts, deciles) was formed: uni_mc_3000 by market cap; without market caps ' +
      `uni_dv_3000 by dollar volume; without volume either, every valid stock (${methodologyRef('universes')})`,
  },
)
export const common = { _metadata: riskMetadataSchema, _agent: agentMetaSchema }
