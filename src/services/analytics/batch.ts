import { LSTAR_FIELDS } from '../../contract/ops/analytics.ts'
import { canonicalTicker } from '../../engine/data/aliases.ts'
import type { ModelStore } from '../../engine/model-store/reader.ts'
import { AppError } from '../../platform/errors.ts'
import type { ModelEnvironment, ModelRegistry } from '../models.ts'
import { keepColumns, keepFields, parseFields } from './fields.ts'
import { lstarSeries, lstarTable } from './lstar.ts'
import { dataOf, paginate } from './pagination.ts'
import { seriesConfidence } from './series.ts'
import { type ResolvedTicker, resolveTicker } from './tickers.ts'
import { spanLabel } from './window.ts'

/** Shared rules of the batch operations, and POST /batch/lstar. */

const MAX_BATCH_TICKERS = 100

/** Per-ticker failure inside a batch that as a whole succeeded. */
interface BatchTickerError {
  status: 'error'
  code: 'INVALID_TICKER' | 'TICKER_NOT_FOUND'
  detail: string
  suggestions?: string[]
}

/**
 * The positions of a batch: trimmed and upper-cased, duplicates (also alias spellings such as
 * BRK-B / BRK.B) counted once under the first spelling asked. More than 100 distinct tickers →
 * TOO_MANY_TICKERS. Called before metering, so the reservation covers exactly these positions.
 */
export function batchTickers(raw: readonly string[]): string[] {
  const seen = new Map<string, string>()
  for (const t of raw) {
    const key = canonicalTicker(t)
    if (!seen.has(key)) seen.set(key, t.trim().toUpperCase())
  }
  if (seen.size > MAX_BATCH_TICKERS) {
    throw new AppError(
      'TOO_MANY_TICKERS',
      `At most ${MAX_BATCH_TICKERS} distinct tickers per call, got ${seen.size}`,
    )
  }
  return [...seen.values()]
}

type Outcome<T> = ({ status: 'ok' } & T) | BatchTickerError

/** The page of a batch being answered: its tickers, and the walk's `total` and `next_cursor`. */
export interface BatchPage {
  tickers: string[]
  total: number
  next_cursor: string | null
}

/**
 * One page of a batch's distinct tickers, in the order asked (the one cursor convention,
 * pagination.ts): bound to the store's data and to the rest of the request (`format` aside, so a
 * walk may change format). Called before metering: the reservation covers the page's tickers.
 */
export function batchPage(
  store: ModelStore,
  tickers: string[],
  body: { limit?: number | undefined; cursor?: string | undefined; format?: unknown } & object,
): BatchPage {
  const { limit, cursor, format: _format, ...rest } = body
  const page = paginate(
    tickers,
    { limit: limit ?? MAX_BATCH_TICKERS, cursor },
    dataOf(store),
    { ...rest, tickers },
    'body',
  )
  return { tickers: page.rows, total: page.total, next_cursor: page.next_cursor }
}

/** The page fields of a batch answer; a whole batch (no page) is one page. */
export const pageFields = (tickers: readonly string[], page: BatchPage | undefined) => ({
  total: page?.total ?? tickers.length,
  next_cursor: page?.next_cursor ?? null,
})

/**
 * Runs `one` for every ticker (a few at a time: they share the store's readers). A ticker that
 * is invalid or unknown becomes its own error entry; any other failure fails the call. When no
 * ticker succeeded the call fails as a whole (404 if any was unknown, else 400) and costs nothing.
 */
export async function perTicker<T extends object>(
  store: ModelStore,
  tickers: readonly string[],
  one: (r: ResolvedTicker) => Promise<T>,
  /** A page of a longer walk answers its failures as such (free) rather than failing the walk. */
  page?: BatchPage,
): Promise<{ results: Record<string, Outcome<T>>; ok: (T & { ticker: string })[] }> {
  const results: Record<string, Outcome<T>> = {}
  const ok: (T & { ticker: string })[] = []
  const outcomes: Outcome<T>[] = new Array(tickers.length)
  let next = 0
  const worker = async () => {
    while (next < tickers.length) {
      const i = next++
      const raw = tickers[i] as string
      try {
        const r = resolveTicker(store, raw)
        outcomes[i] = { status: 'ok', ...(await one(r)), ...(r.note ? { ticker_note: r.note } : {}) }
      } catch (err) {
        if (!(err instanceof AppError) || (err.code !== 'INVALID_TICKER' && err.code !== 'TICKER_NOT_FOUND'))
          throw err
        const suggestions = err.extra.suggestions
        outcomes[i] = {
          status: 'error',
          code: err.code,
          detail: err.message,
          ...(Array.isArray(suggestions) ? { suggestions: suggestions.map(String) } : {}),
        }
      }
    }
  }
  await Promise.all(Array.from({ length: Math.min(8, tickers.length) }, worker))
  tickers.forEach((t, i) => {
    const o = outcomes[i] as Outcome<T>
    results[t] = o
    if (o.status === 'ok') ok.push({ ...(o as T), ticker: t })
  })
  if (ok.length === 0 && !(page && page.total > tickers.length)) {
    const errors = Object.values(results) as BatchTickerError[]
    const notFound = errors.some((e) => e.code === 'TICKER_NOT_FOUND')
    throw new AppError(
      notFound ? 'TICKER_NOT_FOUND' : 'INVALID_TICKER',
      `None of the ${tickers.length} tickers could be served; see results for each`,
      { extra: { suggestions: [...new Set(errors.flatMap((e) => e.suggestions ?? []))], results } },
    )
  }
  return { results, ok }
}

/** Inclusive bounds covering every ticker's window (`_metadata.range` of a batch). */
export function unionRange(ranges: ([string, string] | null)[]): [string, string] | undefined {
  const rs = ranges.filter((r): r is [string, string] => r !== null)
  if (rs.length === 0) return undefined
  return [
    rs.map((r) => r[0]).sort()[0] as string,
    rs
      .map((r) => r[1])
      .sort()
      .reverse()[0] as string,
  ]
}

/** POST /batch/lstar: the same series as GET /lstar per ticker. */
export async function batchLstar(
  models: ModelRegistry,
  env: ModelEnvironment,
  tickers: readonly string[],
  opts: {
    years?: number | undefined
    start?: string | undefined
    end?: string | undefined
    threshold?: number | undefined
    fields?: string | readonly string[] | undefined
    page?: BatchPage | undefined
  },
) {
  const years = opts.years ?? 1
  const theta = opts.threshold ?? 0.01
  const selected = parseFields(opts.fields, LSTAR_FIELDS, 'body')
  const store = models.store(env)
  const span = { years, start: opts.start, end: opts.end }
  const { results, ok } = await perTicker(
    store,
    tickers,
    async (r) => {
      const { series, range, populated } = await lstarSeries(store, r.index, span, theta)
      return {
        ticker: r.ticker,
        symbol: r.symbol,
        ...keepFields(series, LSTAR_FIELDS, selected),
        range,
        populated,
      }
    },
    opts.page,
  )
  // `range` and `populated` feed _metadata and _agent; they are not part of a ticker's series.
  const served = Object.fromEntries(
    Object.entries(results).map(([k, v]) => {
      if (v.status !== 'ok') return [k, v]
      const { range: _r, populated: _p, ...rest } = v
      return [k, rest]
    }),
  )
  const days = ok.reduce((a, x) => a + x.dates.length, 0)
  const populated = ok.reduce((a, x) => a + x.populated, 0)
  const range = unionRange(ok.map((x) => x.range))
  return {
    body: {
      threshold_used: theta,
      years,
      succeeded: ok.length,
      failed: tickers.length - ok.length,
      ...pageFields(tickers, opts.page),
      results: served,
      _metadata: models.metadata(store, range),
    },
    store,
    confidence: seriesConfidence(populated, days, range?.[1] === store.dataAsOf),
    positions: ok.length,
    table: () =>
      keepColumns(lstarTable(ok.map((x) => ({ ticker: x.ticker, series: x }))), LSTAR_FIELDS, selected),
    filename: `batch-lstar_${ok.length}-tickers_${spanLabel(span)}`,
  }
}
