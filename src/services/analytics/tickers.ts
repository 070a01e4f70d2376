import { canonicalTicker, isValidTicker } from '../../engine/data/aliases.ts'
import type { ModelStore } from '../../engine/model-store/reader.ts'
import { AppError } from '../../platform/errors.ts'

/** A ticker as asked and the symbol it resolved to in one store. */
export interface ResolvedTicker {
  /** As asked (trimmed, upper-cased). */
  ticker: string
  /** Canonical symbol key. */
  symbol: string
  index: number
  /**
   * Set when the ticker asked is an old one of the symbol it resolved to, which trades under
   * another ticker now: `FB is now META (since 2022-06-09)` (`_metadata.ticker_note`).
   */
  note?: string
}

const knownTickers = new WeakMap<ModelStore, string[]>()

function tickersOf(store: ModelStore): string[] {
  let list = knownTickers.get(store)
  if (!list) {
    list = [...new Set(store.symbols.flatMap((s) => s.tickers.map((w) => w.ticker)))].sort()
    knownTickers.set(store, list)
  }
  return list
}

function editDistance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, j) => j)
  for (let i = 1; i <= a.length; i++) {
    let diag = row[0]
    row[0] = i
    for (let j = 1; j <= b.length; j++) {
      const up = row[j]
      row[j] = Math.min(up + 1, row[j - 1] + 1, diag + (a[i - 1] === b[j - 1] ? 0 : 1))
      diag = up
    }
  }
  return row[b.length]
}

/** Up to `n` known tickers close to `t`: same prefix first, then by edit distance. */
export function suggestTickers(store: ModelStore, t: string, n = 5): string[] {
  return tickersOf(store)
    .map((k) => ({ k, d: k.startsWith(t) || t.startsWith(k) ? 0.5 : editDistance(t, k) }))
    .filter((x) => x.d <= 2)
    .sort((a, b) => a.d - b.d || a.k.localeCompare(b.k))
    .slice(0, n)
    .map((x) => x.k)
}

/**
 * The note of a ticker that the symbol at `index` held before its current one; undefined when
 * `ticker` is that symbol's latest ticker (a reused ticker's current holder included). When a
 * later company holds the ticker now (an answer for an earlier day), the note does not say the
 * ticker "is now" the old holder's.
 */
function renameNote(store: ModelStore, ticker: string, index: number): string | undefined {
  const windows = store.symbols[index]?.tickers ?? []
  const latest = windows[windows.length - 1]
  if (!latest || latest.ticker === ticker) return undefined
  if (store.resolve(ticker) === index) return `${ticker} is now ${latest.ticker} (since ${latest.from})`
  const until = windows.findLast((w) => w.ticker === ticker)?.to
  return `${ticker} named this security until ${until}; it is ${latest.ticker} since ${latest.from}`
}

/**
 * The one ticker rule of every route, tool and command: trim, upper-case, alias (BRK-B → BRK.B),
 * validate, then resolve in the store (the latest holder, or the holder on `day` when given);
 * unknown tickers get suggestions, old tickers of a renamed symbol a `note`.
 */
export function resolveTicker(store: ModelStore, raw: string, day?: number): ResolvedTicker {
  const asked = raw.trim().toUpperCase()
  const canonical = canonicalTicker(raw)
  if (!isValidTicker(canonical)) {
    throw new AppError(
      'INVALID_TICKER',
      `${JSON.stringify(raw)} is not a ticker (1–12 characters of A–Z, 0–9, '.', '-')`,
    )
  }
  const index = store.resolve(canonical, day)
  if (index < 0) {
    throw new AppError('TICKER_NOT_FOUND', `No security with ticker ${canonical}`, {
      extra: { suggestions: suggestTickers(store, canonical) },
    })
  }
  const note = renameNote(store, canonical, index)
  return {
    ticker: asked,
    symbol: store.symbols[index]?.symbol ?? canonical,
    index,
    ...(note ? { note } : {}),
  }
}
