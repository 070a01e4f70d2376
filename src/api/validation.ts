import { Ajv, type Options } from 'ajv'
import addFormats from 'ajv-formats'
import type { FastifySchemaCompiler } from 'fastify'

/**
 * Two validators: query strings and path parameters arrive as text, so they are coerced
 * (`?years=5` → 5); JSON bodies are typed already, so they are not (`{"years": "5"}` is an error,
 * not a silent conversion). Both report every problem at once.
 */
function make(opts: Options): Ajv {
  const ajv = new Ajv({ allErrors: true, removeAdditional: false, useDefaults: true, strict: false, ...opts })
  addFormats.default(ajv)
  return ajv
}

export function createValidatorCompiler(): FastifySchemaCompiler<unknown> {
  const coercing = make({ coerceTypes: 'array' })
  const strict = make({ coerceTypes: false })
  return ({ schema, httpPart }) => (httpPart === 'body' ? strict : coercing).compile(schema as object)
}

/**
 * Schemas reuse named parts (three LevelHedgeSnapshot legs …); the OpenAPI builder turns those
 * `$id`s into component refs, while Fastify's compilers want each `$id` once: strip them here.
 */
export function anonymous(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(anonymous)
  if (schema === null || typeof schema !== 'object') return schema
  return Object.fromEntries(
    Object.entries(schema as Record<string, unknown>)
      .filter(([k]) => k !== '$id')
      .map(([k, v]) => [k, anonymous(v)]),
  )
}
