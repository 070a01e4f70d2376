import type { Static } from 'typebox'
import type { getUniverseMembers as universeMembersOp } from '../../../contract/ops/cross.ts'
import type { ModelStore } from '../../../engine/model-store/reader.ts'
import { isoFromDay } from '../../../platform/dates.ts'
import { AppError } from '../../../platform/errors.ts'
import { type ModelEnvironment, type ModelRegistry, universeBasisOf } from '../../models.ts'
import { dataOf, paginate } from '../pagination.ts'
import { rowsTable } from '../series.ts'
import { dayConfidence, resolveTeo, teoNote, tickerAt } from '../trading-day.ts'

/**
 * Universe membership (docs/methodology.md §11): the members of a market-cap or dollar-volume
 * universe on one day.
 */

/** The universes the contract accepts (uni_mc_N, uni_dv_N). */
export type UniverseName = Static<typeof universeMembersOp.params>['universe']

const dollarVolume = new WeakMap<ModelStore, boolean>()

/**
 * Whether the store has dollar-volume universes: a dataset without volume leaves every dv rank 0.
 * Judged on the last day with a monthly mask (any dv rank there), once per store.
 */
async function hasDollarVolume(store: ModelStore): Promise<boolean> {
  const known = dollarVolume.get(store)
  if (known !== undefined) return known
  const maskAsOf = await store.readArray1D('universe/mask_as_of')
  let t = store.calendar.length - 1
  while (t >= 0 && maskAsOf[t] < 0) t--
  let has = false
  if (t >= 0) {
    const dv = await store.readRow('universe/dv_rank', t)
    for (let i = 0; i < dv.length && !has; i++) has = dv[i] > 0
  }
  dollarVolume.set(store, has)
  return has
}

interface MemberRow {
  ticker: string
  symbol: string
  rank: number
  active: boolean
}

/** Members a page when the request names no limit (the contract's default). */
const UNIVERSE_DEFAULT_LIMIT = 1000

/** GET /universe/{universe}/members, one page (`limit`, `cursor`) of the members by rank. */
export async function getUniverseMembers(
  models: ModelRegistry,
  env: ModelEnvironment,
  universe: UniverseName,
  teo?: string,
  want: { limit?: number | undefined; cursor?: string | undefined } = {},
) {
  const store = models.store(env)
  const x = resolveTeo(store, teo)
  const [, kind, size] = universe.split('_') as [string, 'mc' | 'dv', string]
  const n = Number(size)
  if (kind === 'dv' && !(await hasDollarVolume(store))) {
    throw new AppError(
      'INVALID_INPUT',
      `${universe} is ranked by dollar volume (close × volume), and this dataset has no volume: ` +
        'import a volume column to get dollar-volume universes (uni_mc_* need market caps)',
    )
  }
  if (kind === 'mc' && universeBasisOf(store).universe_basis !== 'market_cap') {
    throw new AppError(
      'INVALID_INPUT',
      `${universe} is ranked by market cap, and this dataset has no market caps (no shares outstanding): ` +
        'use the uni_dv_* universes or import shares outstanding',
    )
  }
  const [ranks, valid, maskAsOf] = await Promise.all([
    store.readRow(`universe/${kind}_rank`, x.t),
    store.readRow('universe/valid', x.t),
    store.readArray1D('universe/mask_as_of'),
  ])
  const maskDay = maskAsOf[x.t]
  const day = store.calendar[x.t]
  const members: MemberRow[] = []
  for (let i = 0; i < ranks.length; i++) {
    const r = ranks[i]
    if (r < 1 || r > n) continue
    members.push({
      ticker: tickerAt(store, i, day),
      symbol: store.symbols[i].symbol,
      rank: r,
      active: valid[i] === 1,
    })
  }
  members.sort((a, b) => a.rank - b.rank)
  const active = members.reduce((c, m) => c + (m.active ? 1 : 0), 0)
  const page = paginate(
    members,
    { limit: want.limit ?? UNIVERSE_DEFAULT_LIMIT, cursor: want.cursor },
    dataOf(store),
    { universe, teo: x.teo },
  )
  const body = {
    universe,
    teo: x.teo,
    ...teoNote(x),
    mask_as_of: maskDay >= 0 ? isoFromDay(maskDay) : null,
    basis: kind === 'mc' ? 'market_cap' : 'dollar_volume',
    counts: { mask: members.length, active },
    total: page.total,
    next_cursor: page.next_cursor,
    members: page.rows,
    _metadata: models.metadata(store, [x.teo, x.teo]),
  }
  const table = () => rowsTable(page.rows, { ticker: 'text', symbol: 'text', rank: 'int', active: 'bool' })
  return {
    body,
    store,
    confidence: dayConfidence(store, x, maskDay >= 0 ? 1 : 0),
    table,
    filename: `universe_${universe}_${x.teo}`,
  }
}
