import { readFileSync } from 'node:fs'
import { readFile } from 'node:fs/promises'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { WIRE_ERRORS } from '../../contract/errors.ts'
import type { API_REFERENCE_ASSETS } from '../../contract/ops/docs.ts'
import { AppError } from '../../platform/errors.ts'
import { billingDoc } from '../../services/billing/billing-doc.ts'
import { escapeHtml, htmlPage } from '../pages.ts'
import { type RouteDeps, type RouteFile, routeFile } from './types.ts'

/**
 * The documents under /docs: the errors page, the methodology, billing and webhook guides
 * (Markdown from docs/), and the interactive API reference (`/docs/api`): Swagger UI from the
 * pinned swagger-ui-dist package, served from node_modules by this instance (no CDN: it works
 * offline), reading /openapi.json.
 */

const METHODOLOGY = new URL('../../../docs/methodology.md', import.meta.url)
const WEBHOOKS = new URL('../../../docs/webhooks.md', import.meta.url)

/** The errors page is static text: nothing may load, run, frame it or be posted from it. */
const ERRORS_CSP = "default-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

function errorsPage(): string {
  const rows = Object.entries(WIRE_ERRORS)
    .map(
      ([code, e]) =>
        `<tr id="${code.toLowerCase()}"><td><code>${code}</code></td><td>${e.status}</td><td>${escapeHtml(e.title)}</td></tr>`,
    )
    .join('\n')
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>erm3 errors</title></head><body>
<h1>erm3 errors</h1>
<p>Every error is <code>application/problem+json</code> (RFC 9457) with <code>type</code>, <code>title</code>, <code>status</code>,
<code>detail</code>, <code>instance</code>, <code>code</code> and <code>request_id</code>. OAuth endpoints answer
<code>{error, error_description}</code> (RFC 6749).</p>
<p><code>request_id</code> (and the <code>X-Request-ID</code> header) is erm3's own id for the request, never one the
client chose; a client's <code>X-Request-ID</code> or <code>X-Correlation-ID</code> comes back as
<code>X-Correlation-ID</code>.</p>
<table><thead><tr><th>code</th><th>status</th><th>meaning</th></tr></thead><tbody>
${rows}
</tbody></table></body></html>`
}

/** Swagger UI sets styles through the DOM (allowed) and inlines its icons as data: images. */
const REFERENCE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "font-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ')

/** What the reference page runs once Swagger UI is loaded (an external file, so no inline script). */
const REFERENCE_INIT = `window.addEventListener('load', function () {
  window.ui = SwaggerUIBundle({
    url: '/openapi.json',
    dom_id: '#swagger-ui',
    deepLinking: true,
    validatorUrl: null,
    tryItOutEnabled: false,
  })
})
`

const REFERENCE_PAGE = `<!doctype html><html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>erm3 API reference</title>
<link rel="stylesheet" href="/docs/api/swagger-ui.css">
</head><body>
<p style="margin:1rem"><a href="/">erm3</a> · <a href="/openapi.json">openapi.json</a></p>
<div id="swagger-ui"></div>
<script src="/docs/api/swagger-ui-bundle.js"></script>
<script src="/docs/api/erm3-reference.js"></script>
</body></html>`

type Asset = (typeof API_REFERENCE_ASSETS)[number]
const ASSET_TYPES: Record<Asset, string> = {
  'swagger-ui-bundle.js': 'text/javascript; charset=utf-8',
  'swagger-ui.css': 'text/css; charset=utf-8',
  'erm3-reference.js': 'text/javascript; charset=utf-8',
}

const isAsset = (name: string): name is Asset => Object.hasOwn(ASSET_TYPES, name)

const swaggerDir = () => dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'))

export function docsRoutes({ ctx }: RouteDeps): RouteFile {
  const errors = errorsPage()
  let methodology: string | null = null
  let webhooks: string | null = null
  const billing = billingDoc({
    publicUrl: ctx.config.publicUrl,
    topUpUrl: ctx.config.topUpUrl,
    stripe: ctx.config.stripe !== null,
  })
  const assets = new Map<Asset, string>()
  const asset = (name: Asset): string => {
    let body = assets.get(name)
    if (body === undefined) {
      body = name === 'erm3-reference.js' ? REFERENCE_INIT : readFileSync(join(swaggerDir(), name), 'utf8')
      assets.set(name, body)
    }
    return body
  }
  return routeFile(import.meta.url, {
    getBillingDocs: async (_req, reply) =>
      reply.header('Content-Type', 'text/markdown; charset=utf-8').send(billing),
    getErrorDocs: async (_req, reply) => htmlPage(reply, ERRORS_CSP, errors),
    getMethodologyDocs: async (_req, reply) => {
      methodology ??= await readFile(METHODOLOGY, 'utf8')
      return reply.header('Content-Type', 'text/markdown; charset=utf-8').send(methodology)
    },
    getWebhookDocs: async (_req, reply) => {
      webhooks ??= await readFile(WEBHOOKS, 'utf8')
      return reply.header('Content-Type', 'text/markdown; charset=utf-8').send(webhooks)
    },
    getApiReference: async (_req, reply) =>
      htmlPage(reply.header('Cache-Control', 'public, max-age=3600'), REFERENCE_CSP, REFERENCE_PAGE),
    getApiReferenceAsset: async (req, reply) => {
      const name = req.params.asset
      if (!isAsset(name)) throw new AppError('NOT_FOUND', `No such file of the API reference: ${name}`)
      return reply
        .header('Content-Type', ASSET_TYPES[name])
        .header('Cache-Control', 'public, max-age=3600')
        .header('X-Content-Type-Options', 'nosniff')
        .send(asset(name))
    },
  })
}
