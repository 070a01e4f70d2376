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
  description:
    'A web page rendered from docs/methodology.md, with a table of contents and an anchor per section ' +
    '(#9-lstar-and-the-recommended-level). A client whose Accept header prefers text/markdown to text/html ' +
    'gets the Markdown instead, as served at /docs/methodology.md.',
  tags: ['docs'],
  auth: 'none',
  status: 200,
  response: Type.String(),
  contentType: 'text/html; charset=utf-8, text/markdown; charset=utf-8',
  errors: [],
})

export const getMethodologyMarkdown = defineOperation({
  id: 'getMethodologyMarkdown',
  method: 'GET',
  path: '/docs/methodology.md',
  summary: 'The methodology as Markdown: the source of /docs/methodology, byte for byte',
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
  summary: 'Prometheus metrics for operators (Bearer METRICS_TOKEN; 404 unless the operator set one)',
  tags: ['operations'],
  auth: 'none',
  status: 200,
  response: Type.String(),
  contentType: 'text/plain; version=0.0.4; charset=utf-8',
  errors: [401, 404],
})

export const getLanding = defineOperation({
  id: 'getLanding',
  method: 'GET',
  path: '/',
  summary:
    'The front door: what erm3 is, whether this instance serves synthetic or imported data and its data_as_of, how to get a key, and links to every document',
  tags: ['docs'],
  auth: 'none',
  status: 200,
  response: Type.String(),
  contentType: 'text/html; charset=utf-8',
  errors: [],
})

export const getApiReference = defineOperation({
  id: 'getApiReference',
  method: 'GET',
  path: '/docs/api',
  summary:
    'Interactive API reference rendered in the browser from /openapi.json (Swagger UI, served by this instance)',
  tags: ['docs'],
  auth: 'none',
  status: 200,
  response: Type.String(),
  contentType: 'text/html; charset=utf-8',
  errors: [],
})

/** The files the reference page loads, all served from this instance (it works offline). */
export const API_REFERENCE_ASSETS = ['swagger-ui-bundle.js', 'swagger-ui.css', 'erm3-reference.js'] as const

export const getApiReferenceAsset = defineOperation({
  id: 'getApiReferenceAsset',
  method: 'GET',
  path: '/docs/api/:asset',
  summary: `A script or style sheet of the API reference page (${API_REFERENCE_ASSETS.join(', ')})`,
  tags: ['docs'],
  auth: 'none',
  params: Type.Object({ asset: Type.String({ maxLength: 64 }) }, { additionalProperties: false }),
  status: 200,
  response: Type.String(),
  contentType: 'text/javascript; charset=utf-8, text/css; charset=utf-8',
  errors: [404],
})

export const getModelQualityDocs = defineOperation({
  id: 'getModelQualityDocs',
  method: 'GET',
  path: '/docs/model-quality',
  summary:
    'Model quality: the out-of-sample bias, rolling MRAD and hedge effectiveness of the risk forecasts on the served build (from `erm3 evaluate`), with plots',
  tags: ['docs'],
  auth: 'none',
  status: 200,
  response: Type.String(),
  contentType: 'text/html; charset=utf-8',
  errors: [],
})
