/**
 * What a request means, independent of how it was spelled (docs/decisions/money.md, "One
 * request, one price"). Two parts, both driven by the operation's own schemas:
 *
 * - `normaliseTickers`: every field of a request that carries tickers (`ticker`, `tickers`,
 *   `sector_filter`, a position's `proxy` ETF, at any depth: `portfolio[].ticker`, `positions[].ticker`; an array of
 *   tickers or a comma-separated list) is trimmed and upper-cased before validation, so handlers,
 *   the response cache and the record of paid requests all see `MSFT` for `" msft "`.
 * - `requestIdentity`: the canonical text of a validated, defaulted request (the validator has
 *   filled the schema defaults): the operation id and its declared parts only (an undeclared
 *   query of an operation without a query schema is not part of the request), `format` left out
 *   (it is a separate part of the response cache key), a missing field with a schema default set
 *   to it (`years`, the screen's `cohort` and `window` …), a missing `teo` or `as_of` resolved to
 *   the data's last day, order-insensitive collections in canonical order, object keys sorted.
 */
import type { TSchema } from 'typebox'
import type { Operation } from './operation.ts'

/** Request fields whose values are tickers (a string, an array of strings, or a comma list). */
const TICKER_FIELDS = new Set(['ticker', 'tickers', 'sector_filter', 'proxy'])

type RequestPartName = 'params' | 'querystring' | 'body'
const PARTS: readonly RequestPartName[] = ['params', 'querystring', 'body']

/** A path to a ticker field: property names, `[]` for "every element of the array". */
type FieldPath = readonly string[]

interface SchemaLike {
  type?: string | string[]
  default?: unknown
  properties?: Record<string, SchemaLike>
  items?: SchemaLike
  anyOf?: SchemaLike[]
}

/** The paths of ticker fields in a schema (objects, arrays of objects, unions of those). */
function tickerPaths(schema: SchemaLike | undefined, prefix: string[] = [], depth = 0): string[][] {
  if (!schema || depth > 6) return []
  const out: string[][] = []
  for (const alt of schema.anyOf ?? []) out.push(...tickerPaths(alt, prefix, depth + 1))
  if (schema.items) out.push(...tickerPaths(schema.items, [...prefix, '[]'], depth + 1))
  for (const [name, sub] of Object.entries(schema.properties ?? {})) {
    if (TICKER_FIELDS.has(name) && carriesStrings(sub)) out.push([...prefix, name])
    else out.push(...tickerPaths(sub, [...prefix, name], depth + 1))
  }
  return out
}

function carriesStrings(s: SchemaLike): boolean {
  if (s.type === 'string') return true
  if (s.type === 'array') return s.items?.type === 'string'
  return (s.anyOf ?? []).some(carriesStrings)
}

/** `" msft "` → `MSFT`; a comma list item by item (`"xlk, xlf"` → `XLK,XLF`); other values as they are. */
function normaliseTickerValue(v: unknown): unknown {
  if (typeof v === 'string')
    return v.includes(',')
      ? v
          .split(',')
          .map((t) => t.trim().toUpperCase())
          .join(',')
      : v.trim().toUpperCase()
  if (Array.isArray(v)) return v.map((x) => (typeof x === 'string' ? x.trim().toUpperCase() : x))
  return v
}

function applyAt(value: unknown, path: FieldPath, i = 0): void {
  if (value === null || typeof value !== 'object') return
  const step = path[i] as string
  if (step === '[]') {
    if (Array.isArray(value)) for (const el of value) applyAt(el, path, i + 1)
    return
  }
  const o = value as Record<string, unknown>
  if (i === path.length - 1) {
    if (Object.hasOwn(o, step)) o[step] = normaliseTickerValue(o[step])
    return
  }
  applyAt(o[step], path, i + 1)
}

/** Normalises the ticker fields of one request part in place (before validation). */
export type TickerNormaliser = (part: RequestPartName, value: unknown) => void

/** The operation's ticker normaliser, or null when no part of its request carries tickers. */
export function tickerNormaliser(op: Operation): TickerNormaliser | null {
  const paths = new Map<RequestPartName, string[][]>()
  for (const part of PARTS) {
    const p = tickerPaths(op[part] as SchemaLike | undefined)
    if (p.length) paths.set(part, p)
  }
  if (paths.size === 0) return null
  return (part, value) => {
    for (const p of paths.get(part) ?? []) applyAt(value, p)
  }
}

/**
 * Collections whose order carries no meaning, by operation: the positions of a snapshot (the
 * answer orders them by weight, then ticker; duplicates are summed by the service with a warning,
 * so they are kept, not merged).
 */
const UNORDERED: Readonly<Record<string, readonly (readonly [RequestPartName, string])[]>> = {
  snapshot: [['body', 'portfolio']],
}

function hasProperty(schema: TSchema | undefined, name: string): boolean {
  const props = (schema as SchemaLike | undefined)?.properties
  return props !== undefined && Object.hasOwn(props, name)
}

function canonicalJson(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonicalJson).join(',')}]`
  if (v && typeof v === 'object') {
    const o = v as Record<string, unknown>
    return `{${Object.keys(o)
      .filter((k) => o[k] !== undefined)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonicalJson(o[k])}`)
      .join(',')}}`
  }
  return JSON.stringify(v) ?? 'null'
}

/** One part of a request as the key sees it: a copy without `format`, data-dependent defaults resolved. */
function canonicalPart(op: Operation, part: RequestPartName, value: unknown, dataAsOf: string): unknown {
  const schema = op[part]
  if (!schema) return null
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return value ?? null
  const o: Record<string, unknown> = { ...(value as Record<string, unknown>) }
  delete o.format
  // A default spelled out is the request left without it, whether or not a validator filled it.
  for (const [k, sub] of Object.entries((schema as SchemaLike).properties ?? {}))
    if (o[k] === undefined && sub.default !== undefined) o[k] = sub.default
  for (const day of ['teo', 'as_of'])
    if (hasProperty(schema, day) && (o[day] === undefined || o[day] === null)) o[day] = dataAsOf
  for (const [p, field] of UNORDERED[op.id] ?? [])
    if (p === part && Array.isArray(o[field]))
      o[field] = (o[field] as unknown[])
        .map((x) => [canonicalJson(x), x] as const)
        .sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0))
        .map(([, x]) => x)
  return o
}

/** A request as validated (and defaulted) by the operation's schemas. */
export interface ValidatedRequest {
  params?: unknown
  query?: unknown
  body?: unknown
}

/**
 * The canonical text of a request's meaning: equal for equivalent spellings, different whenever
 * any validated parameter differs. `dataAsOf` is the last day of the data that answers (a
 * missing `teo` or `as_of` means that day).
 */
export function requestIdentity(op: Operation, req: ValidatedRequest, dataAsOf: string): string {
  return canonicalJson({
    op: op.id,
    params: canonicalPart(op, 'params', req.params, dataAsOf),
    query: canonicalPart(op, 'querystring', req.query, dataAsOf),
    body: canonicalPart(op, 'body', req.body, dataAsOf),
  })
}
