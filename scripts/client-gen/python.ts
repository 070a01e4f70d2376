/**
 * Emits clients/python/erm3/_operations.py: the operation table, the wire error codes and one
 * typed method per operation (path parameters positional, query parameters and body fields as
 * keywords), each with a docstring that says what the call does and what it costs.
 */
import { type ClientOperation, type Doc, errorCodes, type Field, priceLine, type Schema } from './model.ts'

const KEYWORDS = new Set(['from', 'class', 'def', 'global', 'import', 'in', 'is', 'lambda', 'pass', 'return'])
/** Names the generated methods keep for themselves. */
const RESERVED = new Set(['self', 'timeout', 'headers'])

/** `getOAuthGrants` → `get_oauth_grants`, `decomposeV4` → `decompose_v4`. */
function snakeCase(id: string): string {
  return id
    .replace(/OAuth/g, 'Oauth')
    .replace(/([A-Z]+)([A-Z][a-z])/g, '$1_$2')
    .replace(/([a-z0-9])([A-Z])/g, '$1_$2')
    .toLowerCase()
}

/** The Python argument name of a wire name (`from` → `from_`). */
function argName(name: string): string {
  const n = name.replace(/[^A-Za-z0-9_]/g, '_')
  return KEYWORDS.has(n) ? `${n}_` : n
}

function pyType(s: Schema | undefined, doc: Doc, depth = 0): string {
  if (!s || depth > 4) return 'Any'
  if (typeof s.$ref === 'string') {
    const target = doc.components.schemas[String(s.$ref).split('/').pop() as string]
    return pyType(target, doc, depth + 1)
  }
  if (s.const !== undefined) return `Literal[${JSON.stringify(s.const)}]`
  const alts = (s.anyOf ?? s.oneOf) as Schema[] | undefined
  if (alts) return [...new Set(alts.map((a) => pyType(a, doc, depth + 1)))].join(' | ')
  const t = s.type
  if (t === 'string') return 'str'
  if (t === 'integer') return 'int'
  if (t === 'number') return 'float'
  if (t === 'boolean') return 'bool'
  if (t === 'null') return 'None'
  if (t === 'array') return `list[${pyType(s.items as Schema | undefined, doc, depth + 1)}]`
  if (t === 'object') return 'dict[str, Any]'
  return 'Any'
}

function pyString(s: string): string {
  return JSON.stringify(s)
}

function pyValue(v: unknown): string {
  if (v === null) return 'None'
  if (v === true) return 'True'
  if (v === false) return 'False'
  if (Array.isArray(v)) return `(${v.map(pyValue).join(', ')}${v.length === 1 ? ',' : ''})`
  if (typeof v === 'string') return pyString(v)
  return String(v)
}

function tableEntry(op: ClientOperation): string {
  const body = op.body
    ? `BodySpec(${pyString(op.body.mediaType)}, ${pyValue(op.body.required)}, ${pyValue(op.body.fields?.map((f) => f.name) ?? null)})`
    : 'None'
  const args = [
    `id=${pyString(op.id)}`,
    `method=${pyString(op.method)}`,
    `path=${pyString(op.path)}`,
    `status=${op.status}`,
    `auth=${pyValue(op.auth)}`,
    `path_params=${pyValue(op.pathParams.map((p) => p.name))}`,
    `query=${pyValue(op.query.map((p) => p.name))}`,
    `body=${body}`,
    `response_types=${pyValue(op.responseTypes)}`,
    `response_fields=${pyValue(op.responseFields)}`,
    `idempotent=${pyValue(op.idempotent)}`,
    `cost_usd=${op.pricing ? Number(op.pricing.cost_usd) : 'None'}`,
  ]
  return `    ${pyString(op.id)}: Operation(\n        ${args.join(',\n        ')},\n    ),`
}

interface Arg {
  wire: string
  py: string
  where: 'path' | 'query' | 'body'
  required: boolean
  type: string
  description: string
}

/** The method's arguments: path parameters, then query parameters and body fields (a body field wins a shared name). */
function argsOf(op: ClientOperation, doc: Doc): Arg[] {
  const arg = (f: Field, where: Arg['where']): Arg => ({
    wire: f.name,
    py: argName(f.name),
    where,
    required: where === 'path' || (f.required && (where === 'query' || op.body?.required === true)),
    type: pyType(f.schema, doc),
    description: f.description,
  })
  const bodyFields = op.body?.fields ?? []
  const bodyNames = new Set(bodyFields.map((f) => f.name))
  const args = [
    ...op.pathParams.map((f) => arg(f, 'path')),
    ...op.query.filter((f) => !bodyNames.has(f.name)).map((f) => arg(f, 'query')),
    ...bodyFields.map((f) => arg(f, 'body')),
  ]
  if (op.body && !op.body.fields)
    args.push({
      wire: '',
      py: 'body',
      where: 'body',
      required: op.body.required,
      type: 'Any',
      description: 'The request body.',
    })
  for (const a of args) if (RESERVED.has(a.py)) throw new Error(`${op.id}: argument ${a.py} is reserved`)
  return args
}

function docstring(op: ClientOperation, args: Arg[]): string {
  const wrapText = (t: string, pad: string, next = pad) =>
    t
      .replace(/\s+/g, ' ')
      .trim()
      .replace(/(.{1,88})(\s|$)/g, `${next}$1\n`)
      .replace(next, pad)
      .replace(/\\/g, '\\\\')
      .replace(/"""/g, '\\"\\"\\"')
  const lines = [`        """${op.method} ${op.path}: ${op.summary.replace(/\\/g, '\\\\')}\n\n`]
  lines.push(wrapText(priceLine(op.pricing), '        '))
  if (op.description) lines.push('\n', wrapText(op.description, '        '))
  if (args.length > 0) {
    lines.push('\n        Args:\n')
    for (const a of args)
      lines.push(wrapText(`${a.py}: ${a.description || a.where}`, '            ', '                '))
  }
  lines.push('        """\n')
  return lines.join('')
}

function method(op: ClientOperation, doc: Doc): string {
  const args = argsOf(op, doc)
  const positional = args.filter((a) => a.where === 'path').map((a) => `${a.py}: ${a.type}`)
  const keywords = [
    ...args.filter((a) => a.where !== 'path' && a.required),
    ...args.filter((a) => a.where !== 'path' && !a.required),
  ].map((a) =>
    a.required
      ? `${a.py}: ${a.type}`
      : `${a.py}: ${a.type.endsWith('| None') ? a.type : `${a.type} | None`} = None`,
  )
  const sig = [
    'self',
    ...positional,
    '*',
    ...keywords,
    'timeout: float | None = None',
    'headers: Mapping[str, str] | None = None',
  ]
  const part = (where: Arg['where']) =>
    `{${args
      .filter((a) => a.where === where && a.wire !== '')
      .map((a) => `${pyString(a.wire)}: ${a.py}`)
      .join(', ')}}`
  const whole = args.find((a) => a.where === 'body' && a.wire === '')
  const body = whole ? 'body' : op.body ? part('body') : 'None'
  return [
    `    def ${snakeCase(op.id)}(${sig.join(', ')}) -> Answer:\n`,
    docstring(op, args),
    `        return self._invoke(${pyString(op.id)}, ${part('path')}, ${part('query')}, ${body}, timeout=timeout, headers=headers)\n`,
  ].join('')
}

/** The text of clients/python/erm3/_operations.py. */
export function pythonOperations(doc: Doc, ops: ClientOperation[]): string {
  const codes = Object.entries(errorCodes(doc)).map(([c, s]) => `    ${pyString(c)}: ${s},`)
  return [
    '# Generated by scripts/gen-clients.ts from the OpenAPI document (npm run gen:clients). Do not edit.',
    '"""The operations of the erm3 API: the table the client reads, and one method per operation."""',
    '',
    'from __future__ import annotations',
    '',
    'from collections.abc import Mapping',
    'from typing import Any, Literal',
    '',
    'from ._core import Answer, BodySpec, Operation, _Transport',
    '',
    '#: Every operation of the API, by operation id.',
    'OPERATIONS: dict[str, Operation] = {',
    ...ops.map(tableEntry),
    '}',
    '',
    '#: The wire error codes and the HTTP status of each.',
    'ERROR_CODES: dict[str, int] = {',
    ...codes,
    '}',
    '',
    '',
    'class Operations(_Transport):',
    '    """One method per operation; each returns an :class:`Answer` (its data, cost, balance and lineage)."""',
    '',
    ops.map((op) => method(op, doc)).join('\n'),
  ].join('\n')
}
