import type { TSchema } from 'typebox'
import { oauthErrorSchema, problemSchema, WIRE_ERRORS } from './errors.ts'
import { bodyMayBeOmitted, type Operation, openApiPath } from './operation.ts'
import { OPERATIONS } from './operations.ts'
import { WEBHOOK_PAYLOADS } from './ops/webhooks.ts'
import { CAPABILITIES, microsToUsd } from './pricing.ts'

/**
 * Interface version (docs/decisions/naming-and-identity.md): OpenAPI info.version and the
 * X-API-Version header.
 */
export const API_VERSION = '3.0.0-agent'

type Json = Record<string, unknown>

/**
 * Replaces nested schemas that carry a `$id` by `$ref`s into components, so the document keeps
 * the contract's names (AgentMeta, RiskMetadata …) and each is defined once.
 */
function hoist(schema: unknown, components: Record<string, unknown>, top = true): unknown {
  if (Array.isArray(schema)) return schema.map((s) => hoist(s, components, false))
  if (schema === null || typeof schema !== 'object') return schema
  const s = schema as Json
  const id = typeof s.$id === 'string' ? s.$id : null
  const copy: Json = {}
  for (const [k, v] of Object.entries(s)) {
    if (k === '$id') continue
    copy[k] =
      k === 'properties' || k === 'patternProperties'
        ? mapValues(v as Json, components)
        : hoist(v, components, false)
  }
  if (id && !top) {
    components[id] = copy
    return { $ref: `#/components/schemas/${id}` }
  }
  if (id) components[id] = copy
  return id ? { $ref: `#/components/schemas/${id}` } : copy
}

function mapValues(props: Json, components: Record<string, unknown>): Json {
  return Object.fromEntries(Object.entries(props).map(([k, v]) => [k, hoist(v, components, false)]))
}

function parameters(op: Operation): Json[] {
  const out: Json[] = []
  const add = (where: 'path' | 'query', schema: TSchema | undefined) => {
    const s = schema as Json | undefined
    const props = (s?.properties ?? {}) as Record<string, Json>
    const required = new Set((s?.required ?? []) as string[])
    for (const [name, p] of Object.entries(props)) {
      const { description, ...rest } = p
      out.push({
        name,
        in: where,
        required: where === 'path' || required.has(name),
        ...(description ? { description } : {}),
        schema: rest,
      })
    }
  }
  add('path', op.params)
  add('query', op.querystring)
  return out
}

function pricingOf(op: Operation): Json | undefined {
  const c = CAPABILITIES.find((x) => x.operationId === op.id)
  if (!c) return undefined
  return {
    capability_id: c.id,
    tier: c.tier,
    model: c.model,
    cost_usd: microsToUsd(c.unitMicros),
    billing_code: c.billingCode,
    ...(c.minChargeMicros !== null ? { min_charge: microsToUsd(c.minChargeMicros) } : {}),
    ...(c.batchUnitMicros !== null ? { batch_cost_usd: microsToUsd(c.batchUnitMicros) } : {}),
    ...(c.model === 'per_token'
      ? {
          input_cost_per_1k_tokens_usd: microsToUsd(c.unitMicros),
          output_cost_per_1k_tokens_usd: microsToUsd(c.outputUnitMicros ?? 0),
          plus: 'the cost of each tool call, at its own price',
        }
      : {}),
  }
}

/** The headers of every metered answer (per-token chat reports its cost only). */
function meteredHeaders(op: Operation): Json {
  const c = CAPABILITIES.find((x) => x.operationId === op.id)
  if (!c || c.model === 'per_token') return {}
  const h = (description: string) => ({ schema: { type: 'string' }, description })
  return {
    headers: {
      'X-API-Cost-USD': h('What this call was charged, in USD (0 for a cached or already-paid repeat)'),
      'X-Balance-USD': h(
        "The account's prepaid balance after this call's charge, in USD: the settled balance as the call began minus X-API-Cost-USD (as _agent.balance_usd)",
      ),
      'X-Cache-Status': h('HIT (free repeat), MISS or BYPASS (Cache-Control: no-cache)'),
    },
  }
}

function operationObject(op: Operation, components: Record<string, unknown>): Json {
  // A route serving files of several kinds (the reference page's assets) lists each type,
  // comma-separated; JSON among them is the response schema (the sign-in link: JSON or a page).
  const okContent = op.contentType
    ? Object.fromEntries(
        op.contentType.split(/,\s*/).map((t) => {
          const type = t.split(';')[0] as string
          return [
            type,
            { schema: type === 'application/json' ? hoist(op.response, components) : { type: 'string' } },
          ]
        }),
      )
    : { 'application/json': { schema: hoist(op.response, components) } }
  const responses: Json = {
    [String(op.status)]: { description: 'Success', content: okContent, ...meteredHeaders(op) },
  }
  for (const status of [...op.errors, 500]) {
    const codes = Object.entries(WIRE_ERRORS)
      .filter(([, e]) => e.status === status)
      .map(([c]) => c)
    responses[String(status)] = {
      description: codes.join(', ') || 'Error',
      content:
        op.errorStyle === 'oauth'
          ? { 'application/json': { schema: { $ref: '#/components/schemas/OAuthError' } } }
          : { 'application/problem+json': { schema: { $ref: '#/components/schemas/Problem' } } },
    }
  }
  const pricing = pricingOf(op)
  return {
    operationId: op.id,
    summary: op.summary,
    ...(op.description ? { description: op.description } : {}),
    tags: op.tags,
    security:
      op.auth === 'key'
        ? [{ bearerKey: [] }]
        : op.auth === 'session'
          ? [{ sessionJwt: [] }]
          : op.auth === 'key_or_session'
            ? [{ bearerKey: [] }, { sessionJwt: [] }]
            : [],
    parameters: parameters(op),
    ...(op.body
      ? {
          requestBody: {
            // A body marked Type.Optional may be left out entirely (no Content-Type, no bytes).
            required: !bodyMayBeOmitted(op.body),
            content: { [op.bodyType ?? 'application/json']: { schema: hoist(op.body, components) } },
          },
        }
      : {}),
    responses,
    ...(pricing ? { 'x-pricing': pricing } : {}),
  }
}

/**
 * OpenAPI 3.1 `webhooks`: what erm3 POSTs to a subscription, per event (payloads are components).
 * Signature: `X-Erm3-Signature: t=<unix>,v1=<hex HMAC-SHA256(secret, t + "." + body)>` (/docs/webhooks).
 */
function webhookDocs(components: Record<string, unknown>): Json {
  const header = (description: string) => ({ required: true, schema: { type: 'string' }, description })
  return Object.fromEntries(
    Object.entries(WEBHOOK_PAYLOADS).map(([event, schema]) => [
      event,
      {
        post: {
          summary: `${event} event delivery`,
          description: (schema as { description?: string }).description,
          tags: ['webhooks'],
          parameters: [
            { name: 'X-Erm3-Event', in: 'header', ...header(`The event type: ${event}`) },
            { name: 'X-Erm3-Delivery', in: 'header', ...header('Delivery id, the same on every retry') },
            {
              name: 'X-Erm3-Signature',
              in: 'header',
              ...header('t=<unix seconds>,v1=<hex HMAC-SHA256(secret, t + "." + raw body)>'),
            },
          ],
          requestBody: {
            required: true,
            content: { 'application/json': { schema: hoist(schema, components) } },
          },
          responses: {
            '2XX': { description: 'Delivered. Anything else (or no answer in 10 s) is retried for 24 h.' },
          },
        },
      },
    ]),
  )
}

/** The OpenAPI 3.1 document of every operation in the contract. */
export function buildOpenApi(opts: { publicUrl: string; operations?: readonly Operation[] }): Json {
  const components: Record<string, unknown> = {}
  hoist(problemSchema, components)
  hoist(oauthErrorSchema, components)
  const paths: Record<string, Json> = {}
  for (const op of opts.operations ?? OPERATIONS) {
    const p = openApiPath(op.path)
    paths[p] ??= {}
    ;(paths[p] as Json)[op.method.toLowerCase()] = operationObject(op, components)
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'erm3 — equity risk decomposition API',
      version: API_VERSION,
      description:
        'Market / sector / subsector / residual decomposition of US equities. Metered against a prepaid balance; cached responses are free.',
      license: { name: 'Apache-2.0', identifier: 'Apache-2.0' },
    },
    servers: [{ url: opts.publicUrl }],
    paths,
    webhooks: webhookDocs(components),
    components: {
      schemas: components,
      securitySchemes: {
        bearerKey: { type: 'http', scheme: 'bearer', description: 'API key erm_{agent|user}_{live|test}_…' },
        sessionJwt: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' },
      },
    },
  }
}
