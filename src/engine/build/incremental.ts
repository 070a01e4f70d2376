import type { Dataset, DatasetManifest } from '../data/format.ts'
import { type DefaultUniverseBasis, DOLLAR_VOLUME_DAYS, monthEnds } from '../model/cross/index.ts'
import type { ModelParams } from '../model/params.ts'
import {
  CODE_FIELDS,
  chunkSymbolsFor,
  type InputDigests,
  MODEL_VERSION,
  STORE_FILES,
  STORE_VERSION,
} from '../model-store/layout.ts'
import { ModelStore } from '../model-store/reader.ts'
import { codeDTypes } from './fields.ts'
import { restatedGroups, restatedPartial } from './input-digests.ts'
import type { BuildInputs } from './inputs.ts'

const CHUNK_DAYS = 256
/**
 * History the reversion z of the new days needs: its rolling variance is rebuilt exactly on days
 * t % 60 == 0 from the 60-day window, so a day depends on at most 59 + 59 earlier days.
 */
const REVERSION_TAIL = 128
/**
 * Days of returns before the last the data_as_of rankings read from the inputs (252-day windows,
 * with margin); their per-stock fields they read back from the new store (products.ts).
 */
const RANKING_TAIL = 256
/** The kernel's vol_252d_ann window, whatever the estimation window. */
const VOL_DAYS = 252
export interface IncrementalPlan {
  prev: ModelStore
  /** First day of the dataset panels the build reads (a tail read). */
  inputFrom: number
  /** The dataset the plan was checked against (its manifest digest). */
  datasetDigest: string
  /** First new day (the previous build's day count). */
  from: number
  /** First day of the first day-chunk that is rewritten; earlier chunks are hard-linked. */
  chunkStart: number
  /** First day of the reversion inputs loaded back into the engine's blocks. */
  loadFrom: number
}

/**
 * Decides, from the dataset manifest alone, whether the dataset may only append days to what the
 * current build was made from. Any other change (parameters, classification, a restated price)
 * needs a full build: the reason is returned instead of a plan. `confirmIncremental` completes
 * the check once the tail of the dataset is read.
 */
export async function planIncremental(
  storeRoot: string,
  dm: DatasetManifest,
  params: ModelParams,
  classificationDigest: string,
): Promise<IncrementalPlan | { reason: string }> {
  let prev: ModelStore
  try {
    prev = await ModelStore.open(storeRoot)
  } catch {
    return { reason: 'no current build to extend' }
  }
  const no = async (reason: string) => {
    await prev.close()
    return { reason }
  }
  const m = prev.manifest
  // The same versions write the same arrays and layouts: only those can be extended in place.
  if (m.model_version !== MODEL_VERSION || m.store_version !== STORE_VERSION)
    return no('the current build was made by another model or store version')
  if (prev.factors === null) return no('the current build predates the factor series')
  if (JSON.stringify(m.parameters) !== JSON.stringify(params)) return no('model parameters changed')
  if (m.dataset.classification !== classificationDigest) return no('securities or factor registry changed')
  const T0 = prev.calendar.length
  const T = dm.calendar.days
  if (T0 >= T) return no('the dataset has no new days')
  // The old days' inputs must be bit-identical: compare digests, not the store's arrays.
  const recorded = m.input_digests
  if (!recorded || recorded.days !== T0 || typeof recorded.files !== 'object')
    return no('the current build has no input digests')
  const restated = restatedGroups(recorded, dm)
  if (restated) return no(restated)
  const from = T0
  const chunkStart = Math.floor(T0 / CHUNK_DAYS) * CHUNK_DAYS
  const loadFrom = Math.max(0, T0 - REVERSION_TAIL)
  // The new days' universe masks rank on the last month-end before them; the old calendar shows
  // every month-end before its last day (which is one only if the next day opens a new month).
  const ends = monthEnds(prev.calendar)
  const lastEnd = ends.length > 0 ? ends[ends.length - 1] : 0
  const first = inputFrom(params, from, Math.min(loadFrom, T - 1 - RANKING_TAIL), lastEnd, recorded)
  return { prev, from, chunkStart, loadFrom, inputFrom: first, datasetDigest: dm.digest }
}

/**
 * The first day of the price panels the build reads. The replay from the rebase day reads a
 * window of returns before it (the 252-day volatility too); the reversion inputs loaded back
 * and the rankings' returns start at `loaded`; the universes of the new days rank on the last month-end before them, with
 * DOLLAR_VOLUME_DAYS of dollar volume; and the restatement check reads the recorded incomplete
 * row group. One more day for each, as a return needs the previous close.
 */
function inputFrom(
  params: ModelParams,
  from: number,
  loaded: number,
  lastMonthEnd: number,
  recorded: InputDigests,
): number {
  const rebase = from - (from % params.rebaseEvery)
  const replay = rebase - Math.max(params.window, VOL_DAYS)
  const universes = lastMonthEnd - DOLLAR_VOLUME_DAYS
  const partial = Math.floor(recorded.days / recorded.row_group_days) * recorded.row_group_days
  return Math.max(0, Math.min(replay, loaded, universes, partial + 1) - 1)
}

/**
 * The checks that need the dataset's days: the calendar, the symbols, the default-universe basis,
 * the last recorded days. `basis` is defaultUniverseBasis of the tail read: it is never above
 * the whole history's (fewer days to find a market cap or a volume in), and the previous build's
 * basis is that of the old days, so when the two agree a full build would decide the same; when
 * they differ (market caps or volume appeared, or the tail has none) only a full build can decide.
 */
export function confirmIncremental(
  plan: IncrementalPlan,
  ds: Dataset,
  x: BuildInputs,
  basis: DefaultUniverseBasis,
): string | null {
  const { prev, from: T0 } = plan
  for (let t = 0; t < T0; t++) if (prev.calendar[t] !== x.calendar[t]) return 'the calendar history changed'
  if (prev.symbols.length !== x.symbols.length || prev.symbols.some((s, i) => s.symbol !== x.symbols[i]))
    return 'the symbol list changed (new listings)'
  const layout = layoutChange(prev, x)
  if (layout) return layout
  const m = prev.manifest
  if (m.universe_basis !== basis.universe_basis || m.weight_basis !== basis.weight_basis)
    return `the default universe's basis changed (${m.universe_basis} in the current build, ${basis.universe_basis} in the days read)`
  const recorded = prev.manifest.input_digests
  return recorded ? restatedPartial(recorded, ds) : 'the current build has no input digests'
}

/**
 * Why the previous build's per-stock arrays cannot be appended to (BlockArray links their chunks
 * as they are), or null: the same symbols give the same symbol chunk (chunkSymbolsFor), and the
 * same ETFs the same code types (codeDTypes), but a build made by an erm3 that chunked or typed
 * them otherwise has others.
 */
function layoutChange(prev: ModelStore, x: BuildInputs): string | null {
  const dtypes = codeDTypes(x)
  const chunk = chunkSymbolsFor(x.symbols.length)
  for (const c of CODE_FIELDS) {
    const a = prev.arrayMeta(STORE_FILES.code(c))
    if (a.chunks[1] !== chunk) return `the current build's symbol chunks (${a.chunks[1]}) are not ${chunk}`
    if (a.dtype !== dtypes[c]) return `the current build's codes/${c} is ${a.dtype}, not ${dtypes[c]}`
  }
  return null
}
