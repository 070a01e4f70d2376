/**
 * Emits clients/typescript/src/operations.ts: a TypeScript type for every schema of the OpenAPI
 * document (components by name), the request and answer types of every operation, and the
 * operation table the client's runtime reads. Self-contained: the published package imports
 * nothing from the server.
 */
import { type ClientOperation, type Doc, type Field, priceLine, type Schema } from './model.ts'

const IDENT = /^[A-Za-z_$][A-Za-z0-9_$]*$/

function comment(text: string, pad: string): string {
  const t = text.replace(/\*\//g, '*\\/').replace(/\s+/g, ' ').trim()
  return t ? `${pad}/** ${t} */\n` : ''
}

function key(name: string): string {
  return IDENT.test(name) ? name : JSON.stringify(name)
}

function objectType(s: Schema, pad: string): string {
  const props = (s.properties ?? {}) as Record<string, Schema>
  const required = new Set((s.required ?? []) as string[])
  const inner = `${pad}  `
  const lines = Object.entries(props).map(
    ([name, p]) =>
      `${comment(String(p.description ?? ''), inner)}${inner}${key(name)}${required.has(name) ? '' : '?'}: ${tsType(p, inner)}`,
  )
  const extra = [
    ...Object.values((s.patternProperties ?? {}) as Record<string, Schema>),
    ...(typeof s.additionalProperties === 'object' ? [s.additionalProperties as Schema] : []),
  ]
  if (extra.length > 0 || (s.additionalProperties !== false && lines.length === 0)) {
    const value =
      lines.length > 0 || extra.length === 0 ? 'unknown' : extra.map((e) => tsType(e, inner)).join(' | ')
    lines.push(`${inner}[key: string]: ${value}`)
  }
  return lines.length === 0 ? 'Record<string, never>' : `{\n${lines.join('\n')}\n${pad}}`
}

function scalar(type: string): string {
  if (type === 'integer' || type === 'number') return 'number'
  if (type === 'string' || type === 'boolean' || type === 'null') return type
  return 'unknown'
}

/** The TypeScript type of a JSON Schema (the subset the contract uses). */
function tsType(s: Schema | undefined, pad = ''): string {
  if (!s || typeof s !== 'object') return 'unknown'
  if (typeof s.$ref === 'string') return String(s.$ref.split('/').pop())
  if (s.const !== undefined) return JSON.stringify(s.const)
  if (Array.isArray(s.enum)) return s.enum.map((v) => JSON.stringify(v)).join(' | ')
  const alts = (s.anyOf ?? s.oneOf) as Schema[] | undefined
  if (alts) return alts.map((a) => wrap(tsType(a, pad))).join(' | ')
  if (Array.isArray(s.allOf)) return (s.allOf as Schema[]).map((a) => wrap(tsType(a, pad))).join(' & ')
  if (Array.isArray(s.type))
    return (s.type as string[]).map((t) => tsType({ ...s, type: t }, pad)).join(' | ')
  if (s.type === 'array') return `Array<${tsType(s.items as Schema | undefined, pad)}>`
  if (s.type === 'object' || s.properties) return objectType(s, pad)
  return scalar(String(s.type))
}

function wrap(t: string): string {
  return /[|&]/.test(t) && !t.startsWith('{') ? `(${t})` : t
}

function fieldsType(fields: Field[], pad: string): string {
  const inner = `${pad}  `
  const lines = fields.map(
    (f) =>
      `${comment(f.description, inner)}${inner}${key(f.name)}${f.required ? '' : '?'}: ${tsType(f.schema, inner)}`,
  )
  return `{\n${lines.join('\n')}\n${pad}}`
}

function requestType(op: ClientOperation): string {
  const pad = '    '
  const parts: string[] = []
  if (op.pathParams.length > 0) parts.push(`${pad}params: ${fieldsType(op.pathParams, pad)}`)
  if (op.query.length > 0)
    parts.push(`${pad}query${op.query.some((q) => q.required) ? '' : '?'}: ${fieldsType(op.query, pad)}`)
  if (op.body) parts.push(`${pad}body${op.body.required ? '' : '?'}: ${tsType(op.body.schema, pad)}`)
  return parts.length === 0 ? 'Record<string, never>' : `{\n${parts.join('\n')}\n  }`
}

function responseType(op: ClientOperation): string {
  if (op.response) return tsType(op.response, '  ')
  return op.status === 204 ? 'null' : 'string'
}

function tableEntry(op: ClientOperation): string {
  const entry = {
    method: op.method,
    path: op.path,
    status: op.status,
    auth: op.auth,
    pathParams: op.pathParams.map((p) => p.name),
    query: op.query.map((p) => p.name),
    body: op.body
      ? {
          mediaType: op.body.mediaType,
          required: op.body.required,
          fields: op.body.fields?.map((f) => f.name) ?? null,
        }
      : null,
    responseTypes: op.responseTypes,
    responseFields: op.responseFields,
    idempotent: op.idempotent,
    costUsd: op.pricing ? Number(op.pricing.cost_usd) : null,
  }
  return `  ${op.id}: ${JSON.stringify(entry)},`
}

/** The text of clients/typescript/src/operations.ts. */
export function typescriptOperations(doc: Doc, ops: ClientOperation[]): string {
  const components = Object.entries(doc.components.schemas).map(
    ([name, s]) => `${comment(String(s.description ?? ''), '')}export type ${name} = ${tsType(s)}\n`,
  )
  const requests = ops.map(
    (op) =>
      `${comment(`${op.method} ${op.path}: ${op.summary}. ${priceLine(op.pricing)}`, '  ')}  ${op.id}: ${requestType(op)}`,
  )
  const responses = ops.map((op) => `  ${op.id}: ${responseType(op)}`)
  return [
    '// Generated by scripts/gen-clients.ts from the OpenAPI document (npm run gen:clients). Do not edit.',
    '',
    ...components,
    '/** What each operation takes: path parameters, query and body, as the server validates them. */',
    'export interface Requests {',
    ...requests,
    '}',
    '',
    '/** The success answer of each operation (a text document as a string). */',
    'export interface Responses {',
    ...responses,
    '}',
    '',
    '/** Method, path, parameter and field names, media types and price of each operation. */',
    'export const OPERATIONS = {',
    ...ops.map(tableEntry),
    '} as const',
    '',
    'export type OperationId = keyof typeof OPERATIONS',
    '',
  ].join('\n')
}
