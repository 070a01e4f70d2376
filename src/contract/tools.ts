import type { TSchema } from 'typebox'
import { AppError } from '../platform/errors.ts'
import type { TransportRequest } from './client.ts'
import { type Operation, openApiPath } from './operation.ts'
import { OPERATIONS } from './operations.ts'
import { CAPABILITIES, type Capability, chargeMicros, microsToUsd } from './pricing.ts'

/**
 * The MCP tool catalogue, derived from the contract: one tool per priced data operation (named by
 * its capability id) plus the free account tools. A tool's input schema is the union of the
 * operation's path, query and body fields; calling it is calling the operation, so auth, limits,
 * prices and errors are the REST ones by construction.
 */
export interface ToolSpec {
  name: string
  title: string
  description: string
  operation: Operation
  capability: Capability | null
  inputSchema: Record<string, unknown>
  /** The answer's JSON Schema (the operation's response), when its root is one object. */
  outputSchema: Record<string, unknown> | null
  /** MCP tool annotations, as the specification defines them (docs/decisions/tool-annotations.md). */
  annotations: ToolAnnotations
  /** What a call costs, for hosts that read `_meta` (free tools: paid false). */
  pricing: ToolPricing
}

interface ToolAnnotations {
  title: string
  readOnlyHint: boolean
  destructiveHint: boolean
  idempotentHint: boolean
  openWorldHint: boolean
}

interface ToolPricing {
  paid: boolean
  /** The price of the smallest successful call (per_position: one position, at least the minimum). */
  cost_usd: number
  model: Capability['model'] | 'free'
  /** per_position: per successful ticker; batch: the price of a call naming several tickers. */
  unit_usd: number
  min_charge_usd: number | null
  batch_cost_usd: number | null
  /** At or above EXPENSIVE_USD a call: hosts should ask the user before each call. */
  confirm: boolean
}

/** A call at least this expensive is presented as one to confirm (snapshot, 0.25 USD). */
const EXPENSIVE_USD = 0.1

/** Tools whose answer is live third-party data: always charged, never the same twice. */
const LIVE_TOOLS = new Set(['plaid_holdings'])

/** Free operations offered as tools, and their tool names. */
const FREE_TOOLS: Record<string, string> = {
  getTickers: 'tickers_search',
  getPricing: 'pricing',
  getBalance: 'balance',
  estimate: 'estimate',
  getInvoices: 'invoices',
}

/** Tools answer JSON only: `format` (tabular export) is a REST feature. */
const HIDDEN_FIELDS = new Set(['format'])

type Json = Record<string, unknown>

function strip(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(strip)
  if (schema === null || typeof schema !== 'object') return schema
  return Object.fromEntries(
    Object.entries(schema as Json)
      .filter(([k]) => k !== '$id')
      .map(([k, v]) => [k, strip(v)]),
  )
}

function fieldsOf(schema: TSchema | undefined): { props: Json; required: string[] } {
  const s = schema as { properties?: Json; required?: string[]; anyOf?: TSchema[] } | undefined
  if (!s) return { props: {}, required: [] }
  if (!s.properties && Array.isArray(s.anyOf)) {
    const obj = s.anyOf.find((x) => (x as { properties?: Json }).properties)
    return { props: ((obj as { properties?: Json } | undefined)?.properties ?? {}) as Json, required: [] }
  }
  return { props: s.properties ?? {}, required: s.required ?? [] }
}

function toolInputSchema(op: Operation): Record<string, unknown> {
  const props: Json = {}
  const required: string[] = []
  for (const part of [op.params, op.querystring, op.body]) {
    const f = fieldsOf(part)
    for (const [k, v] of Object.entries(f.props)) if (!HIDDEN_FIELDS.has(k)) props[k] = strip(v)
    for (const r of f.required) if (!HIDDEN_FIELDS.has(r)) required.push(r)
  }
  return {
    type: 'object',
    properties: props,
    ...(required.length ? { required } : {}),
    additionalProperties: false,
  }
}

export function toolCatalogue(operations: readonly Operation[] = OPERATIONS): ToolSpec[] {
  const out: ToolSpec[] = []
  for (const op of operations) {
    const capability = CAPABILITIES.find((c) => c.operationId === op.id) ?? null
    // Per-token operations (POST /chat) are agents themselves, not tools: no tool calls a model.
    if (capability?.model === 'per_token') continue
    const name = capability?.id ?? FREE_TOOLS[op.id]
    if (!name) continue
    const pricing = toolPricing(capability)
    const live = LIVE_TOOLS.has(name)
    out.push({
      name,
      title: op.summary,
      description: `${priceText(capability, pricing, live)} ${op.summary}. Same as ${op.method} ${openApiPath(op.path)}.${op.description ? ` ${op.description}` : ''}`,
      operation: op,
      capability,
      inputSchema: toolInputSchema(op),
      outputSchema: toolOutputSchema(op),
      annotations: toolAnnotations(op, capability, pricing, live),
      pricing,
    })
  }
  return out
}

function toolPricing(c: Capability | null): ToolPricing {
  if (!c)
    return {
      paid: false,
      cost_usd: 0,
      model: 'free',
      unit_usd: 0,
      min_charge_usd: null,
      batch_cost_usd: null,
      confirm: false,
    }
  const cost = microsToUsd(chargeMicros(c, 1))
  return {
    paid: true,
    cost_usd: cost,
    model: c.model,
    unit_usd: microsToUsd(c.unitMicros),
    min_charge_usd: c.minChargeMicros === null ? null : microsToUsd(c.minChargeMicros),
    batch_cost_usd: c.batchUnitMicros === null ? null : microsToUsd(c.batchUnitMicros),
    confirm: cost >= EXPENSIVE_USD,
  }
}

/** The price, first in the description, so a host or a user sees it before any call. */
function priceText(c: Capability | null, p: ToolPricing, live: boolean): string {
  if (!c) return 'FREE.'
  const unit =
    c.model === 'per_position'
      ? `${p.unit_usd} USD per successful ticker${p.min_charge_usd ? ` (minimum ${p.min_charge_usd} USD)` : ''}`
      : `${p.unit_usd} USD per call${p.batch_cost_usd !== null ? ` with one ticker, ${p.batch_cost_usd} USD per batch call` : ''}`
  const repeat = live
    ? 'every call is charged (live data).'
    : 'repeating the same call on the same data_as_of is free.'
  const confirm = p.confirm
    ? ' EXPENSIVE: confirm with the user before each call; `estimate` prices it first.'
    : ''
  return `PAID: ${unit}; ${repeat}${confirm}`
}

/**
 * Annotations as the MCP specification defines them (docs/decisions/tool-annotations.md): a paid
 * call debits the prepaid balance, so it is not read-only; repeating it on the same data is free
 * and answers the same, so it is idempotent (live data excepted); erm3 answers from its own data
 * (live brokerage data excepted), so the world is closed.
 */
function toolAnnotations(
  op: Operation,
  c: Capability | null,
  p: ToolPricing,
  live: boolean,
): ToolAnnotations {
  return {
    title: c ? `${op.summary} (${p.confirm ? 'EXPENSIVE, ' : ''}${p.cost_usd} USD)` : op.summary,
    readOnlyHint: !p.paid,
    destructiveHint: false,
    idempotentHint: !live,
    openWorldHint: live,
  }
}

/** Added to every tool's output schema: what the MCP result carries besides the REST answer. */
const MCP_RESULT_FIELDS: Json = {
  _preview: {
    type: 'object',
    description:
      'Present when the answer was too long to show whole: what was cut (each series keeps its newest rows) and how long the full answer is. The full answer: resources/read of the resource_link in the content, or the REST request with format=csv|parquet|json (free: already paid).',
  },
  _partial: {
    type: 'object',
    description:
      'Present when some tickers asked were not answered: asked, answered, failed [{ticker, code}].',
  },
}

/**
 * Levels of an output schema given in full; deeper values are described by their type only. A
 * client compiles a validator per tool on tools/list (the TypeScript SDK does, for every session):
 * the contract's full response schemas took seconds to compile, these a fraction.
 */
const OUTPUT_SCHEMA_DEPTH = 2

/** The JSON types a schema admits (its `type`, or those of its anyOf alternatives). */
function typesOf(s: Json): string[] {
  if (typeof s.type === 'string') return [s.type]
  if (Array.isArray(s.type)) return s.type as string[]
  if (Array.isArray(s.anyOf)) return [...new Set((s.anyOf as Json[]).flatMap(typesOf))]
  return []
}

/** `schema` down to `depth` levels of properties and items; below, `{type}` (and its description). */
function shallow(schema: Json, depth: number): Json {
  if (depth <= 0) {
    const types = typesOf(schema)
    const description =
      schema.description ?? (schema.anyOf as Json[] | undefined)?.find((x) => x.description)?.description
    return {
      ...(types.length === 1 ? { type: types[0] } : types.length > 1 ? { type: types } : {}),
      ...(typeof description === 'string' ? { description } : {}),
    }
  }
  const out: Json = {}
  for (const [k, v] of Object.entries(schema)) {
    if (k === 'properties' && v && typeof v === 'object')
      out[k] = Object.fromEntries(
        Object.entries(v as Json).map(([p, x]) => [p, shallow(x as Json, depth - 1)]),
      )
    else if ((k === 'items' || k === 'additionalProperties') && v && typeof v === 'object')
      out[k] = shallow(v as Json, depth - 1)
    else if (k === 'anyOf' && Array.isArray(v)) out[k] = v.map((x) => shallow(x as Json, depth))
    else if (k === 'patternProperties' && v && typeof v === 'object')
      out[k] = Object.fromEntries(
        Object.entries(v as Json).map(([p, x]) => [p, shallow(x as Json, depth - 1)]),
      )
    else out[k] = v
  }
  return out
}

/**
 * The operation's response schema, as the tool's outputSchema (an object root only, as MCP
 * requires). A tool error's structured result is the problem (code, status, detail) instead, and
 * clients validate that too: so the root requires nothing (every property keeps its type, and
 * the objects inside keep their required lists).
 */
function toolOutputSchema(op: Operation): Record<string, unknown> | null {
  const { required: _required, ...s } = shallow(strip(op.response) as Json, OUTPUT_SCHEMA_DEPTH)
  if (s.type !== 'object' || typeof s.properties !== 'object') return null
  return {
    ...s,
    description:
      'The REST answer (a success), or on a tool error (isError) the problem: code, status, detail.',
    properties: { ...(s.properties as Json), ...MCP_RESULT_FIELDS },
  }
}

/** The REST request a tool call stands for. */
export function toolRequest(tool: ToolSpec, args: Record<string, unknown>, bearer: string): TransportRequest {
  const op = tool.operation
  const rest = { ...args }
  let path = op.path
  for (const [name, schema] of Object.entries(fieldsOf(op.params).props)) {
    const value = String(rest[name] ?? '')
    // A path-like value (`..`) would be resolved away by URL normalisation before any route
    // validates it: check the parameter's pattern here.
    const pattern = (schema as { pattern?: string }).pattern
    if (value === '' || (pattern && !new RegExp(pattern).test(value)))
      throw new AppError(
        name === 'ticker' ? 'INVALID_TICKER' : 'INVALID_REQUEST',
        `${name}: ${JSON.stringify(value)} is not valid${pattern ? ` (must match ${pattern})` : ' (required)'}`,
      )
    path = path.replace(`:${name}`, encodeURIComponent(value))
    delete rest[name]
  }
  const headers: Record<string, string> = { authorization: `Bearer ${bearer}`, accept: 'application/json' }
  if (op.method === 'GET' || op.method === 'DELETE') {
    const q = new URLSearchParams()
    for (const [k, v] of Object.entries(rest)) {
      if (v === undefined || v === null) continue
      if (Array.isArray(v)) for (const x of v) q.append(k, String(x))
      else q.set(k, String(v))
    }
    const qs = q.toString()
    return { method: op.method, url: qs ? `${path}?${qs}` : path, headers }
  }
  headers['content-type'] = 'application/json'
  return { method: op.method, url: path, headers, body: JSON.stringify(rest) }
}
