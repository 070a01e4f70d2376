import { Type } from 'typebox'
import { defineOperation } from '../operation.ts'

/** Documents served by the API itself (no auth, free). */

export const getOpenApi = defineOperation({
  id: 'getOpenApi',
  method: 'GET',
  path: '/openapi.json',
  summary: 'This OpenAPI 3.1 document',
  tags: ['docs'],
  auth: 'none',
  status: 200,
  response: Type.Object({}, { additionalProperties: true }),
  errors: [],
})

export const getErrorDocs = defineOperation({
  id: 'getErrorDocs',
  method: 'GET',
  path: '/docs/errors',
  summary: 'The error table: every code, its status and meaning (the `type` URI of each error points here)',
  tags: ['docs'],
  auth: 'none',
  status: 200,
  response: Type.String(),
  contentType: 'text/html; charset=utf-8',
  errors: [],
})

export const getMethodologyDocs = defineOperation({
  id: 'getMethodologyDocs',
  method: 'GET',
  path: '/docs/methodology',
  summary: 'The methodology: how every number is computed (`_metadata.wiki_uri`)',
  tags: ['docs'],
  auth: 'none',
  status: 200,
  response: Type.String(),
  contentType: 'text/markdown; charset=utf-8',
  errors: [],
})

export const getBillingDocs = defineOperation({
  id: 'getBillingDocs',
  method: 'GET',
  path: '/docs/billing',
  summary:
    'How money works on this instance: prepaid balance, prices, what is charged, and how to top up (the `top_up_url` of a 402 unless the operator configured TOP_UP_URL)',
  tags: ['docs'],
  auth: 'none',
  status: 200,
  response: Type.String(),
  contentType: 'text/markdown; charset=utf-8',
  errors: [],
})

export const getPrometheusMetrics = defineOperation({
  id: 'getPrometheusMetrics',
  method: 'GET',
  path: '/metrics-prom',
  summary: 'Prometheus metrics for operators (Bearer METRICS_TOKEN when configured)',
  tags: ['operations'],
  auth: 'none',
  status: 200,
  response: Type.String(),
  contentType: 'text/plain; version=0.0.4; charset=utf-8',
  errors: [401],
})
