/**
 * Results a model can read (docs/agents.md): the text form of an operation's answer, for hosts
 * and models that see only text. A compact, faithful summary — what was asked, the date, what
 * the data is (synthetic or not), the key numbers with their units, series newest first with
 * summary statistics, what a partial answer lacks, what the call cost and the balance left —
 * followed by the JSON itself when it is small. Pure: one answer in, one text out, so the MCP
 * tools and /chat say the same thing.
 */
import { datedAscending, entryDate, type PreviewNote } from './result-preview.ts'

type Json = Record<string, unknown>

/** The answer's JSON is appended to the text when at most this long. */
const TEXT_JSON_MAX_CHARS = 6_000
/** The text is never longer (with a preview's 48,000 characters, a result stays under ~80,000). */
const TEXT_MAX_CHARS = 28_000
/** Scalar values listed, series summarised and batch entries listed, at most. */
const MAX_VALUES = 40
const MAX_SERIES = 8
const MAX_ENTRIES = 20
/** Rows of a series shown, newest first. */
const LATEST_ROWS = 5

const isObject = (v: unknown): v is Json => v !== null && typeof v === 'object' && !Array.isArray(v)

/** A number as text: 6 significant digits at most, no exponent for ordinary magnitudes. */
function num(x: number): string {
  if (!Number.isFinite(x)) return String(x)
  if (Number.isInteger(x)) return String(x)
  const a = Math.abs(x)
  if (a !== 0 && (a < 1e-4 || a >= 1e12)) return x.toExponential(4)
  return String(Number(x.toPrecision(6)))
}

/** The unit of a value, from its name (the contract's naming conventions). */
function unitOf(path: string): string {
  const key =
    path
      .split('.')
      .at(-1)
      ?.replace(/\[\d+\]$/, '') ?? ''
  if (/^hedge\./.test(path) || /(^|_)hr$|hedge_notional|^(market|sector|subsector)_hr$/.test(key))
    return 'USD of ETF per USD 1 of stock'
  if (/(^|_)er$|explained_variance|^er_/.test(key)) return 'fraction of variance'
  if (/_usd$/.test(key)) return 'USD'
  if (/^price|_close$|^close$/.test(key)) return 'USD per share'
  if (/return|(^|_)(rr|fr|cfr)$/.test(key)) return 'fraction, 0.01 = 1%'
  if (/vol/.test(key)) return 'fraction, annualised'
  return ''
}

function value(path: string, v: unknown): string {
  const unit = typeof v === 'number' ? unitOf(path) : ''
  const shown = typeof v === 'number' ? num(v) : JSON.stringify(v)
  return `${path} = ${shown}${unit ? ` (${unit})` : ''}`
}

/** What the answer is about: the ticker, the date of the state, the date of the data. */
function headline(tool: string, body: Json): string {
  const meta = isObject(body._metadata) ? body._metadata : {}
  const parts: string[] = []
  for (const k of ['ticker', 'symbol', 'universe', 'metric', 'level'])
    if (typeof body[k] === 'string' && !parts.includes(body[k] as string)) parts.push(body[k] as string)
  const name =
    isObject(body.display) && typeof body.display.name === 'string' ? ` (${body.display.name})` : ''
  const dates: string[] = []
  if (typeof body.teo === 'string') dates.push(`state of ${body.teo}`)
  const asOf = meta.data_as_of ?? body.data_as_of ?? body.as_of
  if (typeof asOf === 'string') dates.push(`data as of ${asOf}`)
  return `${tool}${parts.length ? ` ${parts.join(' ')}` : ''}${name}${dates.length ? `, ${dates.join(', ')}` : ''}.`
}

/** What the numbers are: erm3's generated market, imported files or vendor data. */
function datasetLine(body: Json): string | null {
  const meta = isObject(body._metadata) ? body._metadata : null
  const d = meta && isObject(meta.dataset) ? meta.dataset : null
  if (!d) return null
  const model = typeof meta?.model_version === 'string' ? ` Model ${meta.model_version}.` : ''
  if (d.kind === 'synthetic')
    return `Data: SYNTHETIC — erm3's generated demo market (seed ${d.seed ?? '?'}), not market data; tickers are labels on generated series. Say so whenever you report these numbers.${model}`
  if (d.kind === 'vendor')
    return `Data: market data fetched from ${Array.isArray(d.sources) ? d.sources.join(', ') : 'vendors'}.${model}`
  return `Data: price files imported by the operator.${model}`
}

/** A partial answer: some of the tickers asked were not answered. */
export interface PartialResult {
  asked: number
  answered: number
  /** Tickers not answered, with the error code of each. */
  failed: { ticker: string; code: string }[]
}

function failedEntries(body: Json): { ticker: string; code: string }[] {
  const out: { ticker: string; code: string }[] = []
  const results = body.results
  if (isObject(results)) {
    for (const [k, v] of Object.entries(results))
      if (isObject(v) && v.status === 'error') out.push({ ticker: k, code: String(v.code ?? 'ERROR') })
  } else if (Array.isArray(results)) {
    for (const v of results)
      if (isObject(v) && v.status === 'error') out.push({ ticker: String(v.ticker), code: String(v.code) })
  }
  const snap = isObject(body.snapshot) ? body.snapshot : null
  if (snap && Array.isArray(snap.unresolved))
    for (const u of snap.unresolved as Json[]) out.push({ ticker: String(u.ticker), code: String(u.code) })
  return out
}

/** The partial-answer facts of a batch or portfolio answer; null when everything asked was answered. */
export function partialOf(body: Json): PartialResult | null {
  const failed = failedEntries(body)
  if (failed.length === 0) return null
  const snap = isObject(body.snapshot) ? body.snapshot : null
  let answered: number
  if (typeof body.succeeded === 'number') answered = body.succeeded
  else if (Array.isArray(body.results)) answered = body.results.length - failed.length
  else answered = snap && Array.isArray(snap.positions) ? snap.positions.length : 0
  return { asked: answered + failed.length, answered, failed }
}

/**
 * The positions of a book priced by a proxy (no model at as_of, or not in the dataset): an agent
 * must not report their risk as the stock's own. Null when there are none.
 */
function proxiedLine(body: Json): string | null {
  const snap = isObject(body.snapshot) ? body.snapshot : null
  if (!snap || !Array.isArray(snap.positions)) return null
  const parts: string[] = []
  for (const p of snap.positions as Json[]) {
    if (!isObject(p) || p.risk_basis !== 'proxy' || !isObject(p.proxy)) continue
    const why = p.in_dataset === false ? 'not in the dataset' : 'no model at as_of'
    parts.push(`${String(p.ticker)} (${why}) by ${String(p.proxy.etf)}`)
  }
  return parts.length ? `PROXIED: ${parts.join('; ')}; their risk is the proxy's, not their own.` : null
}

function partialLine(p: PartialResult): string {
  const byCode = new Map<string, string[]>()
  for (const f of p.failed) byCode.set(f.code, [...(byCode.get(f.code) ?? []), f.ticker])
  const what = [...byCode]
    .map(([code, t]) => `${code === 'TICKER_NOT_FOUND' ? 'unknown' : code}: ${t.join(', ')}`)
    .join('; ')
  return `PARTIAL: ${p.answered} of ${p.asked} tickers answered; ${what}.`
}

/** A series of the answer: rows (objects), or columns sharing a `dates` array. */
interface Series {
  path: string
  total: number
  dated: boolean
  /** Column name → values, oldest first when dated (row arrays are turned into columns). */
  columns: Map<string, unknown[]>
  /** The column holding each row's date, when dated. */
  dateColumn: string | null
}

interface Walked {
  values: [string, unknown][]
  series: Series[]
  entries: [string, Json][]
}

function rowsToSeries(path: string, rows: Json[]): Series {
  const columns = new Map<string, unknown[]>()
  for (const [i, r] of rows.entries())
    for (const [k, v] of Object.entries(r)) {
      if (isObject(v) || Array.isArray(v)) continue
      let c = columns.get(k)
      if (!c) {
        c = new Array(rows.length).fill(null)
        columns.set(k, c)
      }
      c[i] = v
    }
  const dated = datedAscending(rows)
  const dateColumn = dated ? (['date', 'period_end_date', 'as_of'].find((k) => columns.has(k)) ?? null) : null
  return { path, total: rows.length, dated: dated && dateColumn !== null, columns, dateColumn }
}

function columnsSeries(path: string, o: Json): Series | null {
  const dates = o.dates
  if (!Array.isArray(dates) || dates.length < 2) return null
  const columns = new Map<string, unknown[]>([['date', dates]])
  for (const [k, v] of Object.entries(o))
    if (k !== 'dates' && Array.isArray(v) && v.length === dates.length) columns.set(k, v)
  return { path, total: dates.length, dated: datedAscending(dates), columns, dateColumn: 'date' }
}

/** Per-ticker results of a batch: a map of objects, or an array of objects that name their ticker. */
function batchEntries(v: unknown): [string, Json][] | null {
  if (isObject(v)) {
    const e = Object.entries(v)
    return e.length > 0 && e.every(([, x]) => isObject(x) && typeof x.status === 'string')
      ? (e as [string, Json][])
      : null
  }
  if (Array.isArray(v) && v.length > 0 && v.every((x) => isObject(x) && typeof x.ticker === 'string'))
    return (v as Json[]).map((x) => [String(x.ticker), x])
  return null
}

function walk(v: unknown, path: string, out: Walked, top: boolean): void {
  if (Array.isArray(v)) {
    if (v.length > 0 && v.every(isObject)) out.series.push(rowsToSeries(path, v as Json[]))
    else if (v.length <= 12) out.values.push([path, v])
    else out.values.push([path, `${v.length} values: ${v.slice(0, 12).map(String).join(', ')} …`])
    return
  }
  if (!isObject(v)) {
    out.values.push([path, v])
    return
  }
  const cols = columnsSeries(path, v)
  if (cols) out.series.push(cols)
  for (const [k, x] of Object.entries(v)) {
    if (top && (k === '_agent' || k === '_metadata' || k === '_preview')) continue
    if (cols && Array.isArray(x) && cols.columns.has(k === 'dates' ? 'date' : k)) continue
    const p = path ? `${path}.${k}` : k
    const entries = top && k === 'results' ? batchEntries(x) : null
    if (entries) out.entries.push(...entries)
    else walk(x, p, out, false)
  }
}

function valueLines(values: [string, unknown][]): string[] {
  const shown = values.filter(([, v]) => v !== null && v !== undefined)
  const lines = shown.slice(0, MAX_VALUES).map(([p, v]) => `- ${value(p, v)}`)
  if (shown.length > MAX_VALUES) lines.push(`- … ${shown.length - MAX_VALUES} more values in the JSON`)
  const nulls = values.length - shown.length
  if (nulls > 0)
    lines.push(`- ${nulls} values are null (not available), e.g. ${values.find(([, v]) => v === null)?.[0]}`)
  return lines
}

function stats(xs: unknown[]): string | null {
  let n = 0
  let sum = 0
  let min = Infinity
  let max = -Infinity
  for (const x of xs)
    if (typeof x === 'number' && Number.isFinite(x)) {
      n++
      sum += x
      if (x < min) min = x
      if (x > max) max = x
    }
  if (n < 2) return null
  return `mean ${num(sum / n)}, min ${num(min)}, max ${num(max)} (${n} values)`
}

function rowText(s: Series, i: number, skip: string | null): string {
  const cells: string[] = []
  for (const [k, c] of s.columns)
    if (k !== skip && c[i] !== undefined)
      cells.push(`${k}=${typeof c[i] === 'number' ? num(c[i] as number) : JSON.stringify(c[i])}`)
  return cells.join(', ')
}

function seriesLines(s: Series): string[] {
  const n = s.total
  const dates = s.dateColumn ? (s.columns.get(s.dateColumn) as unknown[]) : null
  const span = dates ? ` from ${entryDate(dates[0])} to ${entryDate(dates[n - 1])}` : ''
  const lines = [`Series ${s.path || 'rows'}: ${n} ${s.dated ? 'dated rows' : 'rows'}${span}.`]
  const order = s.dated
    ? [...Array(Math.min(LATEST_ROWS, n)).keys()].map((i) => n - 1 - i)
    : [...Array(Math.min(LATEST_ROWS, n)).keys()]
  lines.push(s.dated ? `  Latest ${order.length}, newest first:` : `  First ${order.length}:`)
  for (const i of order)
    lines.push(`  ${dates ? `${entryDate(dates[i])}: ` : ''}${rowText(s, i, s.dateColumn)}`)
  const units = [...s.columns.keys()].map((k) => [k, unitOf(k)] as const).filter(([, u]) => u)
  if (units.length) lines.push(`  Units: ${units.map(([k, u]) => `${k} ${u}`).join('; ')}.`)
  if (n > LATEST_ROWS) {
    const st = [...s.columns].map(([k, c]) => [k, stats(c)] as const).filter(([, x]) => x)
    if (st.length) lines.push(`  Over all ${n} rows: ${st.map(([k, x]) => `${k} ${x}`).join('; ')}.`)
  }
  return lines
}

/** One line per batch entry: its status, scalar values and series in brief. */
function entryLine(key: string, e: Json): string {
  const w: Walked = { values: [], series: [], entries: [] }
  walk(e, '', w, false)
  const vals = w.values
    .filter(([p, v]) => v !== null && p !== 'ticker')
    .slice(0, 14)
    .map(([p, v]) => `${p}=${typeof v === 'number' ? num(v) : typeof v === 'string' ? v : JSON.stringify(v)}`)
  const series = w.series.map((s) => {
    const dates = s.dateColumn ? s.columns.get(s.dateColumn) : null
    const last = s.total - 1
    const latest = [...s.columns]
      .filter(([k, c]) => k !== s.dateColumn && typeof c[last] === 'number')
      .slice(0, 6)
      .map(([k, c]) => `${k}=${num(c[last] as number)}`)
    return `${s.path}: ${s.total} rows${dates ? ` to ${entryDate(dates[last])}, latest ${latest.join(', ')}` : ''}`
  })
  return `- ${key}: ${[...vals, ...series].join('; ')}`
}

function entryLines(entries: [string, Json][]): string[] {
  const lines = entries.slice(0, MAX_ENTRIES).map(([k, e]) => entryLine(k, e))
  if (entries.length > MAX_ENTRIES) lines.push(`- … ${entries.length - MAX_ENTRIES} more entries in the JSON`)
  return lines
}

/** What the call cost and the balance left after it (paid tools). */
function billingLine(body: Json): string | null {
  const a = isObject(body._agent) ? body._agent : null
  if (!a) return null
  const balance =
    typeof a.balance_usd === 'number' ? `; balance after the call ${num(a.balance_usd)} USD` : ''
  const cache = a.cache_status === 'HIT' ? ', already paid or cached' : ''
  return `Cost ${num(Number(a.cost_usd))} USD (${a.cache_status}${cache})${balance}.`
}

function previewLines(p: PreviewNote, rest: string | null): string[] {
  const cuts = p.cuts.map((c) =>
    c.omitted
      ? `${c.path}: ${c.shown} of ${c.total} entries shown (left out: ${c.omitted.slice(0, 30).join(', ')}${c.omitted.length > 30 ? ' …' : ''})`
      : `${c.path}: ${c.shown} of ${c.total} rows shown${c.from ? ` (${c.from} to ${c.to}, the newest)` : ''}`,
  )
  if (p.cuts_not_listed > 0) cuts.push(`… and ${p.cuts_not_listed} more series cut the same way`)
  return [
    `PREVIEW: the full answer is ${p.full_chars} characters (about ${Math.round(p.full_chars / 4)} tokens), over the ${p.cap_chars}-character cap, so the structured result is cut:`,
    ...cuts.map((c) => `- ${c}`),
    ...(rest ? [`The rest: ${rest}`] : []),
  ]
}

export interface SummaryOptions {
  /** The preview note when the structured result was cut (result-preview.ts). */
  preview?: PreviewNote | null
  /** How to get the full answer, said when it was cut. */
  rest?: string | null
}

/**
 * The text of an answer of operation `tool` (a tool or capability name): headline, dataset,
 * partial-answer notice, key values, series (newest first, with statistics), batch entries,
 * cost and balance, the preview notice, and the JSON itself when short. The summary is computed
 * from the whole answer even when the structured result shown is a preview.
 */
export function summarizeResult(tool: string, body: Json, opts: SummaryOptions = {}): string {
  const w: Walked = { values: [], series: [], entries: [] }
  walk(body, '', w, true)
  const partial = partialOf(body)
  const lines = [headline(tool, body)]
  const dataset = datasetLine(body)
  if (dataset) lines.push(dataset)
  if (partial) lines.push(partialLine(partial))
  const proxied = proxiedLine(body)
  if (proxied) lines.push(proxied)
  if (w.values.length) lines.push('Values:', ...valueLines(w.values))
  for (const s of w.series.slice(0, MAX_SERIES)) lines.push(...seriesLines(s))
  if (w.series.length > MAX_SERIES) lines.push(`… ${w.series.length - MAX_SERIES} more series in the JSON.`)
  if (w.entries.length) lines.push(`Per ticker (${w.entries.length}):`, ...entryLines(w.entries))
  const billing = billingLine(body)
  if (billing) lines.push(billing)
  if (opts.preview) lines.push(...previewLines(opts.preview, opts.rest ?? null))
  const json = opts.preview ? null : JSON.stringify(body)
  if (json && json.length <= TEXT_JSON_MAX_CHARS) lines.push(`JSON: ${json}`)
  else lines.push('The complete typed answer is the structured result (structuredContent).')
  return capped(lines)
}

/** The lines joined, the middle left out if they exceed TEXT_MAX_CHARS (the last lines say cost and how to get the rest). */
function capped(lines: string[]): string {
  const text = lines.join('\n')
  if (text.length <= TEXT_MAX_CHARS) return text
  const tail = lines
    .slice(-12)
    .join('\n')
    .slice(-TEXT_MAX_CHARS / 2)
  const head = text.slice(0, TEXT_MAX_CHARS - tail.length - 200)
  return `${head.slice(0, head.lastIndexOf('\n'))}\n… (summary cut at ${TEXT_MAX_CHARS} characters: the rest of the values are in the structured result)\n${tail}`
}
