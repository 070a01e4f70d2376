import { Type } from 'typebox'
import { defineOperation } from '../operation.ts'
import { IsoDate, NextCursor, Nullable, PageTotal, pageQueryProps } from '../schemas.ts'
import { common, ERRORS, Format, Teo, teoFields } from './cross-common.ts'

/** Membership of the monthly universes (docs/methodology.md §11 "Universes"). */

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
    'and there are no members. Members by rank, paged by the one cursor convention (limit, cursor → next_cursor, ' +
    'total): limit members a page (default 1000, at most 3000, so any universe fits one page); each page is a call. ' +
    'counts and total are over all pages. Parquet/CSV: the members of the page.',
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
    { teo: Type.Optional(Teo), format: Type.Optional(Format), ...pageQueryProps(1000, 3000) },
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
      total: PageTotal,
      next_cursor: NextCursor,
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
