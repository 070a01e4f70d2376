import { summarizeResult } from '../../contract/result-text.ts'

/**
 * What the chat model reads of a tool's answer, within a byte budget: the answer's metadata
 * (`_metadata`, with the dataset kind and synthetic flag, and `_agent`) first and always kept, then
 * the data with every time series newest first. Over the budget, the oldest rows of the longest
 * series go first, and the text says what was left out — so a model asked for the latest value
 * sees the latest value. `chatToolContent` puts the MCP result summary before it.
 */

const ISO_DATE = /^\d{4}-\d{2}-\d{2}/
const KEPT_FIRST = ['_metadata', '_agent']

type Json = null | boolean | number | string | Json[] | { [k: string]: Json }
type Obj = { [k: string]: Json }

const isObj = (v: Json | undefined): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v)
const bytes = (v: unknown) => Buffer.byteLength(JSON.stringify(v), 'utf8')

/** A series that can be cut: rows with a date, or parallel arrays beside a `dates` array. */
interface Series {
  path: string
  length: () => number
  /** Keeps the first (newest) `n` entries. */
  keep: (n: number) => void
}

/** The date of a row (`date`, `as_of`, `period_end` …), or null when it has none. */
function rowDate(row: Json): string | null {
  if (!isObj(row)) return null
  for (const [k, v] of Object.entries(row))
    if (typeof v === 'string' && ISO_DATE.test(v) && /date|as_of|period/.test(k)) return v
  return null
}

/** Rows with dates, newest first (a stable sort: ties keep their order). */
function rowSeries(owner: Obj, key: string, path: string): Series | null {
  const rows = owner[key] as Json[]
  if (rows.length < 2 || rows.some((r) => rowDate(r) === null)) return null
  const sorted = [...rows].sort((a, b) => ((rowDate(b) as string) < (rowDate(a) as string) ? -1 : 1))
  owner[key] = sorted
  return {
    path,
    length: () => (owner[key] as Json[]).length,
    keep: (n) => {
      owner[key] = (owner[key] as Json[]).slice(0, n)
    },
  }
}

/** `dates` and the arrays of the same length beside it, reversed together when oldest first. */
function columnSeries(owner: Obj, path: string): Series | null {
  const dates = owner.dates
  if (!Array.isArray(dates) || dates.length < 2 || !dates.every((d) => typeof d === 'string')) return null
  const cols = Object.keys(owner).filter(
    (k) => Array.isArray(owner[k]) && (owner[k] as Json[]).length === dates.length,
  )
  if ((dates[0] as string) < (dates[dates.length - 1] as string))
    for (const k of cols) owner[k] = [...(owner[k] as Json[])].reverse()
  return {
    path: `${path}dates`,
    length: () => (owner.dates as Json[]).length,
    keep: (n) => {
      for (const k of cols) owner[k] = (owner[k] as Json[]).slice(0, n)
    },
  }
}

/** Every series in `v` (newest first from here on), found at any depth. */
function findSeries(v: Json, path: string, out: Series[]): void {
  if (Array.isArray(v)) {
    v.forEach((x, i) => {
      findSeries(x, `${path}[${i}].`, out)
    })
    return
  }
  if (!isObj(v)) return
  const cols = columnSeries(v, path)
  if (cols) out.push(cols)
  for (const k of Object.keys(v)) {
    if (KEPT_FIRST.includes(k)) continue
    const child = v[k] as Json
    const rows = Array.isArray(child) ? rowSeries(v, k, `${path}${k}`) : null
    if (rows) out.push(rows)
    else if (!(cols && Array.isArray(child))) findSeries(v[k] as Json, `${path}${k}.`, out)
  }
}

/** The answer with `_metadata` and `_agent` first (a model reads them before the data). */
function metadataFirst(body: Obj): Obj {
  const out: Obj = {}
  for (const k of KEPT_FIRST) if (k in body) out[k] = body[k] as Json
  for (const [k, v] of Object.entries(body)) if (!KEPT_FIRST.includes(k)) out[k] = v
  return out
}

/**
 * The text of a tool's JSON answer for the model, at most about `maxBytes` (UTF-8). Series are
 * newest first; over the budget the longest series loses its oldest half until the answer fits
 * (each keeps at least its newest row), and `_omitted` names what went. An answer that still does
 * not fit (no series to cut) is cut at the byte budget after its metadata, with a note.
 */
export function toolResultText(json: string, maxBytes: number): string {
  let parsed: Json
  try {
    parsed = JSON.parse(json) as Json
  } catch {
    return cut(json, maxBytes)
  }
  if (!isObj(parsed)) return bytes(parsed) <= maxBytes ? JSON.stringify(parsed) : cut(json, maxBytes)
  const body = metadataFirst(parsed)
  const series: Series[] = []
  findSeries(body, '', series)
  const total = new Map(series.map((s) => [s.path, s.length()]))
  const withNote = () => {
    const omitted = series
      .filter((s) => s.length() < (total.get(s.path) as number))
      .map((s) => ({ series: s.path, kept_newest: s.length(), of: total.get(s.path) as number }))
    return omitted.length === 0
      ? body
      : {
          ...body,
          _omitted: {
            note: 'Oldest rows left out to fit; ask for a shorter date range or fewer fields for the rest.',
            series: omitted,
          },
        }
  }
  while (bytes(withNote()) > maxBytes) {
    const longest = series.filter((s) => s.length() > 1).sort((a, b) => b.length() - a.length())[0]
    if (!longest) break
    longest.keep(Math.ceil(longest.length() / 2))
  }
  const text = JSON.stringify(withNote())
  return Buffer.byteLength(text, 'utf8') <= maxBytes ? text : cut(text, maxBytes)
}

function cut(text: string, maxBytes: number): string {
  const b = Buffer.from(text, 'utf8')
  if (b.length <= maxBytes) return text
  // Cut on a character boundary (a split trailing sequence decodes to U+FFFD, dropped).
  const head = new TextDecoder('utf-8', { fatal: false }).decode(b.subarray(0, maxBytes))
  return `${head.replace(/\uFFFD$/, '')}\n[truncated: the result was ${b.length} bytes; only the first ${maxBytes} are shown. Ask for less (fewer tickers, a shorter range).]`
}

/** Between the summary and the data in a chat tool result. */
export const DATA_MARK = '\nData (newest first):\n'

/** The share of a tool result's byte budget the summary may take; the rest is the data. */
const SUMMARY_MAX_BYTES = 4096

/**
 * What the chat model reads of a tool's answer: the same compact summary MCP results carry (key
 * numbers with units, dates, the dataset kind and synthetic flag, cost and balance), then the
 * answer's JSON with every series newest first in what is left of `maxBytes`.
 */
export function chatToolContent(tool: string, json: string, maxBytes: number): string {
  let parsed: unknown
  try {
    parsed = JSON.parse(json)
  } catch {
    return toolResultText(json, maxBytes)
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
    return toolResultText(json, maxBytes)
  const lines = summarizeResult(tool, parsed as Record<string, unknown>)
    .split('\n')
    .filter((l) => !l.startsWith('JSON: ') && !l.startsWith('The complete typed answer'))
  const kept: string[] = []
  let used = 0
  for (const line of lines) {
    const n = Buffer.byteLength(line, 'utf8') + 1
    if (used + n > SUMMARY_MAX_BYTES) break
    kept.push(line)
    used += n
  }
  const head = `${kept.join('\n')}${DATA_MARK}`
  return head + toolResultText(json, Math.max(1024, maxBytes - Buffer.byteLength(head, 'utf8')))
}
