/**
 * What the client generators read from the OpenAPI document: each operation's method, path,
 * parameters, body fields, response fields, media types and price, in the document's order.
 * Both clients' operation tables come from this one reading, and their contract tests compare
 * those tables with the document a server serves.
 */

export type Schema = Record<string, unknown>
export type Doc = {
  paths: Record<string, Record<string, Schema>>
  components: { schemas: Record<string, Schema> }
}

export interface Field {
  name: string
  required: boolean
  description: string
  schema: Schema
}

export interface ClientOperation {
  id: string
  method: string
  path: string
  status: number
  summary: string
  description: string
  /** Security schemes that admit the call (`bearerKey`, `sessionJwt`); empty: no credential. */
  auth: string[]
  pathParams: Field[]
  query: Field[]
  /** The request body: its media type, whether it may be left out, and its top-level fields. */
  body: { mediaType: string; required: boolean; fields: Field[] | null; schema: Schema } | null
  responseTypes: string[]
  /** The JSON answer's schema (null for documents that are not JSON). */
  response: Schema | null
  responseFields: string[]
  /** GET, HEAD, PUT and DELETE: safe to send again after a connection failed. */
  idempotent: boolean
  pricing: Schema | null
}

/** A component's schema for `{$ref}`, or the schema itself. */
function deref(doc: Doc, s: Schema): Schema {
  const ref = s.$ref
  if (typeof ref !== 'string') return s
  return doc.components.schemas[ref.split('/').pop() as string] ?? {}
}

/** Top-level property names of an object schema (every alternative's, for a union), sorted. */
function topFields(doc: Doc, s: Schema): string[] {
  const r = deref(doc, s)
  const out = new Set<string>(Object.keys((r.properties ?? {}) as Schema))
  for (const alt of [...((r.anyOf ?? []) as Schema[]), ...((r.oneOf ?? []) as Schema[])])
    for (const f of topFields(doc, alt)) out.add(f)
  return [...out].sort()
}

function bodyOf(doc: Doc, o: Schema): ClientOperation['body'] {
  const rb = o.requestBody as { required?: boolean; content: Record<string, { schema: Schema }> } | undefined
  if (!rb) return null
  const [mediaType, media] = Object.entries(rb.content)[0] as [string, { schema: Schema }]
  const r = deref(doc, media.schema)
  const required = new Set((r.required ?? []) as string[])
  const fields = r.properties
    ? Object.entries(r.properties as Record<string, Schema>).map(([name, schema]) => ({
        name,
        required: required.has(name),
        description: String(schema.description ?? ''),
        schema,
      }))
    : null
  return { mediaType, required: rb.required === true, fields, schema: media.schema }
}

function paramsOf(o: Schema, where: 'path' | 'query'): Field[] {
  return ((o.parameters ?? []) as Schema[])
    .filter((p) => p.in === where)
    .map((p) => ({
      name: String(p.name),
      required: p.required === true,
      description: String(p.description ?? ''),
      schema: p.schema as Schema,
    }))
}

function operationOf(doc: Doc, path: string, method: string, o: Schema): ClientOperation {
  const status = Object.keys(o.responses as Schema).find((s) => /^2/.test(s)) as string
  const content = ((o.responses as Record<string, Schema>)[status]?.content ?? {}) as Record<
    string,
    { schema: Schema }
  >
  const json = content['application/json']?.schema ?? null
  return {
    id: String(o.operationId),
    method: method.toUpperCase(),
    path,
    status: Number(status),
    summary: String(o.summary ?? ''),
    description: String(o.description ?? ''),
    auth: ((o.security ?? []) as Schema[]).flatMap((s) => Object.keys(s)),
    pathParams: paramsOf(o, 'path'),
    query: paramsOf(o, 'query'),
    body: bodyOf(doc, o),
    responseTypes: Object.keys(content),
    response: json,
    responseFields: json ? topFields(doc, json) : [],
    idempotent: ['GET', 'HEAD', 'PUT', 'DELETE'].includes(method.toUpperCase()),
    pricing: (o['x-pricing'] as Schema | undefined) ?? null,
  }
}

/** Every operation of the document, in its order. */
export function clientOperations(doc: Doc): ClientOperation[] {
  return Object.entries(doc.paths).flatMap(([path, methods]) =>
    Object.entries(methods).map(([method, o]) => operationOf(doc, path, method, o)),
  )
}

/** The wire error codes and their statuses, as the document's error responses list them. */
export function errorCodes(doc: Doc): Record<string, number> {
  const out: Record<string, number> = {}
  for (const methods of Object.values(doc.paths))
    for (const o of Object.values(methods))
      for (const [status, r] of Object.entries(o.responses as Record<string, Schema>)) {
        if (!/^[45]/.test(status) || !(r.content as Schema)?.['application/problem+json']) continue
        for (const code of String(r.description).split(', '))
          if (/^[A-Z_]+$/.test(code)) out[code] = Number(status)
      }
  return Object.fromEntries(Object.entries(out).sort(([a], [b]) => (a < b ? -1 : 1)))
}

/** The one-line price of a call, as the docstrings and doc comments say it. */
export function priceLine(p: Schema | null): string {
  if (!p) return 'Free (no metered price).'
  const cost = Number(p.cost_usd)
  if (p.model === 'per_token')
    return `Price: ${p.input_cost_per_1k_tokens_usd} USD per 1,000 input tokens and ${p.output_cost_per_1k_tokens_usd} USD per 1,000 output tokens, plus each tool call at its own price.`
  const batch = p.batch_cost_usd !== undefined ? ` (${p.batch_cost_usd} USD a ticker in a batch)` : ''
  const min = p.min_charge !== undefined ? `, at least ${p.min_charge} USD a call` : ''
  const unit = p.model === 'per_position' ? 'a position' : 'a call'
  return `Price: ${cost} USD ${unit}${batch}${min} (GET /pricing lists every price).`
}
