import { STORE_FILES } from '../../engine/model-store/layout.ts'
import type { ModelStore } from '../../engine/model-store/reader.ts'
import type { ModelEnvironment, ModelRegistry, NothingToAnswer } from '../models.ts'
import { stateDay, stateOn } from './metrics.ts'
import { resolveTicker } from './tickers.ts'

/**
 * What an operation has to answer about a ticker (docs/decisions/empty-answers.md): the factor
 * model (`model`: metrics, decompositions, Lstar, rankings; on `as_of` when the request gives one) or the company's SEC filings
 * (`filings`: fundamentals) or the stock universe's cross-section (`rankings`: a stock too short
 * for the model is still ranked by size and return; an ETF is not ranked). When there is nothing, the answer is served free, the reason in
 * `_metadata.nothing_to_answer`. Decided from what the build already holds (the symbol's kind,
 * its state on its last priced day, its CIK and filings document), before any money is reserved,
 * so an account without funds still gets the free answer.
 */
export type AnswerSource = 'model' | 'filings' | 'rankings'

const ETF_MODEL =
  'ETFs carry no factor decomposition (the model decomposes stocks onto ETFs); see /etf-returns for its returns'
const ETF_FILINGS = 'ETFs file no company fundamentals; see /etf-returns for its returns'
const ETF_RANKINGS =
  'ETFs are not ranked: rankings are of the stock universe; see /etf-returns for its returns'
const ETF_REASON: Record<AnswerSource, string> = {
  model: ETF_MODEL,
  filings: ETF_FILINGS,
  rankings: ETF_RANKINGS,
}

/** The model state on `day` (null: its last priced day), read as the answer reads it (metrics.ts). */
async function modelState(
  store: ModelStore,
  index: number,
  symbol: string,
  day: number | null,
): Promise<NothingToAnswer | null> {
  const { t, values } = await stateOn(store, index, day, ['l1_mkt_hr'] as const)
  if (t >= 0 && Number.isFinite(values.l1_mkt_hr)) return null
  const on =
    day !== null && t === day ? `on as_of (${store.date(t)})` : `on its last priced day (${store.date(t)})`
  const when = t >= 0 ? on : '(it has no price in this dataset)'
  return {
    asset_type: 'stock',
    reason: `${symbol} has too short a price history for the model ${when}: no factor decomposition; see /returns for its returns`,
    see: '/returns',
  }
}

async function filingsState(
  store: ModelStore,
  index: number,
  symbol: string,
): Promise<NothingToAnswer | null> {
  const cik = store.symbols[index]?.cik ?? null
  if (cik !== null && (await store.document(STORE_FILES.fundamentals(cik))) !== null) return null
  return {
    asset_type: 'stock',
    reason:
      cik === null
        ? `${symbol} has no SEC CIK in this dataset, so there are no fundamentals for it`
        : `no SEC company facts for ${symbol} (CIK ${cik}) in this dataset`,
    see: null,
  }
}

/**
 * Null when the ticker has something to answer from `source`; else why not. An unknown ticker is
 * the usual 404 (thrown, free like every error).
 */
export async function nothingToAnswer(
  models: ModelRegistry,
  env: ModelEnvironment,
  rawTicker: string,
  source: AnswerSource,
  asOf?: string,
): Promise<NothingToAnswer | null> {
  const store = models.store(env)
  const { day } = stateDay(store, asOf)
  const r = resolveTicker(store, rawTicker, day === null ? undefined : store.calendar[day])
  if (store.symbols[r.index]?.asset_type === 'etf')
    return { asset_type: 'etf', reason: ETF_REASON[source], see: '/etf-returns' }
  if (source === 'rankings') return null
  return source === 'model'
    ? modelState(store, r.index, r.symbol, day)
    : filingsState(store, r.index, r.symbol)
}
