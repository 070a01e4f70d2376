/**
 * Answers that fit a model's context (docs/agents.md, "Answers that fit"): an answer whose JSON is
 * longer than RESULT_CAP_CHARS is shown as a preview of the same shape — every long series cut to
 * its latest entries, and, when that is not enough, a batch's per-ticker entries cut to the first
 * ones — with `_preview` saying what was left out. The full answer stays one free request away
 * (the same request again, as a table: a request already paid for on this data_as_of is free).
 */

/** The longest answer JSON shown whole: ~12k tokens, so text and structure stay under ~20k. */
export const RESULT_CAP_CHARS = 48_000

type Json = Record<string, unknown>

/** One cut made by a preview: the array or map at `path`, `total` entries of which `shown` are kept. */
interface PreviewCut {
  path: string
  total: number
  shown: number
  /** For a dated series: the first and last date kept (the newest are kept). */
  from?: string
  to?: string
  /** For a map cut (a batch's results): the keys left out. */
  omitted?: string[]
}

/** `_preview` of a cut answer. */
export interface PreviewNote {
  full_chars: number
  shown_chars: number
  cap_chars: number
  /** The first MAX_LISTED_CUTS cuts; `cuts_not_listed` counts the others (same kind, other tickers). */
  cuts: PreviewCut[]
  cuts_not_listed: number
}

const MAX_LISTED_CUTS = 12

const DATE = /^\d{4}-\d{2}-\d{2}/

/** The date of a series entry: a date string, or a row's `date` / `period_end_date`. */
export function entryDate(v: unknown): string | null {
  if (typeof v === 'string') return DATE.test(v) ? v.slice(0, 10) : null
  if (v && typeof v === 'object' && !Array.isArray(v)) {
    const o = v as Json
    for (const k of ['date', 'period_end_date', 'as_of'])
      if (typeof o[k] === 'string' && DATE.test(o[k] as string)) return (o[k] as string).slice(0, 10)
  }
  return null
}

/** True when the array's entries are dated, oldest first: a preview keeps its end (the newest). */
export function datedAscending(a: readonly unknown[]): boolean {
  if (a.length < 2) return false
  const first = entryDate(a[0])
  const last = entryDate(a[a.length - 1])
  return first !== null && last !== null && first <= last
}

interface Limits {
  /** Entries kept of a long array. */
  rows: number
  /** Entries kept of a large map of objects (a batch's per-ticker results). */
  keys: number
}

/** From mild to severe: the first that fits is used. */
const LEVELS: readonly Limits[] = [
  { rows: 500, keys: Infinity },
  { rows: 252, keys: Infinity },
  { rows: 126, keys: Infinity },
  { rows: 63, keys: Infinity },
  { rows: 21, keys: Infinity },
  { rows: 10, keys: Infinity },
  { rows: 5, keys: Infinity },
  { rows: 5, keys: 50 },
  { rows: 5, keys: 20 },
  { rows: 3, keys: 10 },
  { rows: 2, keys: 5 },
  { rows: 1, keys: 3 },
  { rows: 1, keys: 1 },
]

function cutArray(a: unknown[], keep: number, path: string, cuts: PreviewCut[], limits: Limits): unknown[] {
  const newest = datedAscending(a)
  const kept = newest ? a.slice(a.length - keep) : a.slice(0, keep)
  const cut: PreviewCut = { path, total: a.length, shown: kept.length }
  const from = entryDate(kept[0])
  const to = entryDate(kept[kept.length - 1])
  if (from && to) Object.assign(cut, { from, to })
  cuts.push(cut)
  return kept.map((x, i) => shrink(x, `${path}[${i}]`, cuts, limits))
}

/** An object with `dates` and columns as long: every column is cut like `dates` (newest kept). */
function cutColumns(o: Json, path: string, cuts: PreviewCut[], limits: Limits): Json | null {
  const dates = o.dates
  if (!Array.isArray(dates) || dates.length <= limits.rows) return null
  const n = dates.length
  const start = datedAscending(dates) ? n - limits.rows : 0
  const out: Json = {}
  for (const [k, v] of Object.entries(o)) {
    if (Array.isArray(v) && v.length === n) out[k] = v.slice(start, start + limits.rows)
    else out[k] = shrink(v, join(path, k), cuts, limits)
  }
  const kept = out.dates as unknown[]
  cuts.push({
    path: join(path, 'dates'),
    total: n,
    shown: kept.length,
    ...(entryDate(kept[0])
      ? { from: entryDate(kept[0]) as string, to: entryDate(kept.at(-1)) as string }
      : {}),
  })
  return out
}

const join = (path: string, key: string) => (path ? `${path}.${key}` : key)

/** A map of many objects (per-ticker results): only the first `limits.keys` entries are kept. */
function isEntryMap(o: Json, limits: Limits): boolean {
  const values = Object.values(o)
  return (
    values.length > limits.keys &&
    values.every((v) => v !== null && typeof v === 'object' && !Array.isArray(v))
  )
}

function shrink(v: unknown, path: string, cuts: PreviewCut[], limits: Limits): unknown {
  if (Array.isArray(v)) {
    if (v.length > limits.rows) return cutArray(v, limits.rows, path, cuts, limits)
    return v.map((x, i) => shrink(x, `${path}[${i}]`, cuts, limits))
  }
  if (v === null || typeof v !== 'object') return v
  const o = v as Json
  const columns = cutColumns(o, path, cuts, limits)
  if (columns) return columns
  let entries = Object.entries(o)
  if (path !== '' && isEntryMap(o, limits)) {
    const keys = Object.keys(o)
    cuts.push({ path, total: keys.length, shown: limits.keys, omitted: keys.slice(limits.keys) })
    entries = entries.slice(0, limits.keys)
  }
  const out: Json = {}
  // Lineage and billing are never cut: they say what the numbers are and what they cost.
  for (const [k, x] of entries)
    out[k] = path === '' && k.startsWith('_') ? x : shrink(x, join(path, k), cuts, limits)
  return out
}

/**
 * The answer itself when its JSON is at most `capChars` long; else the mildest preview that fits,
 * with `_preview` (PreviewNote) added. Pure: the argument is not changed.
 */
export function previewResult(
  body: Json,
  capChars = RESULT_CAP_CHARS,
): { body: Json; preview: PreviewNote | null } {
  const full = JSON.stringify(body).length
  if (full <= capChars) return { body, preview: null }
  let last: { body: Json; preview: PreviewNote } | null = null
  for (const limits of LEVELS) {
    const cuts: PreviewCut[] = []
    const shown = shrink(body, '', cuts, limits) as Json
    const preview: PreviewNote = {
      full_chars: full,
      shown_chars: 0,
      cap_chars: capChars,
      cuts: cuts.slice(0, MAX_LISTED_CUTS),
      cuts_not_listed: Math.max(0, cuts.length - MAX_LISTED_CUTS),
    }
    const withNote = { ...shown, _preview: preview }
    // The note holds its own length: measured with 0 in its place, then the digits added.
    const bare = JSON.stringify(withNote).length - 1
    preview.shown_chars = bare + String(bare).length
    if (String(preview.shown_chars).length !== String(bare).length) preview.shown_chars++
    last = { body: withNote, preview }
    if (preview.shown_chars <= capChars) break
  }
  return last as { body: Json; preview: PreviewNote }
}
