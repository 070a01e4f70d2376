import type { TSchema } from 'typebox'
import { AppError } from '../platform/errors.ts'
import type { TransportRequest } from './client.ts'
import { type Operation, openApiPath } from './operation.ts'
import { OPERATIONS } from './operations.ts'
import { CAPABILITIES, type Capability } from './pricing.ts'

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
}

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
    const price = capability
      ? `Costs ${capability.unitMicros / 1e6} USD ${capability.model === 'per_position' ? 'per successful ticker' : 'per call'}${capability.minChargeMicros ? ` (minimum ${capability.minChargeMicros / 1e6} USD)` : ''}${capability.batchUnitMicros !== null ? ` for one ticker, ${capability.batchUnitMicros / 1e6} USD per batch call` : ''}; cached repeats are free.`
      : 'Free.'
    out.push({
      name,
      title: op.summary,
      description: `${op.summary}. ${price} Same as ${op.method} ${openApiPath(op.path)}.${op.description ? ` ${op.description}` : ''}`,
      operation: op,
      capability,
      inputSchema: toolInputSchema(op),
    })
  }
  return out
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
