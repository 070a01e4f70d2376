import { createHash } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import type { FastifyReply } from 'fastify'
import type { API_REFERENCE_ASSETS } from '../../contract/ops/docs.ts'
import { AppError } from '../../platform/errors.ts'
import type { ServiceContext } from '../../services/context.ts'
import { datasetOf, describeDataset } from '../../services/models.ts'
import type { RouteTable } from './types.ts'

/**
 * The front door (`/`) and the interactive API reference (`/docs/api`): HTML pages with a strict
 * Content-Security-Policy. The reference is Swagger UI from the pinned swagger-ui-dist package,
 * served from node_modules by this instance (no CDN: it works offline), reading /openapi.json.
 */

const escapeHtml = (s: string) =>
  s.replace(
    /[&<>"']/g,
    (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] as string,
  )

const sha256 = (s: string) => `'sha256-${createHash('sha256').update(s).digest('base64')}'`

const STYLE = `body{font:16px/1.5 system-ui,sans-serif;max-width:46rem;margin:2rem auto;padding:0 1rem;color:#1d1d1f}
code,pre{font:14px/1.4 ui-monospace,monospace;background:#f3f3f5;border-radius:4px}
code{padding:0 .2rem}pre{padding:.6rem .8rem;overflow-x:auto}
.data{border:2px solid #2b6cb0;border-radius:6px;padding:.6rem 1rem;margin:1rem 0}
.synthetic{border-color:#c05621;background:#fffaf0}
h2{margin-top:1.6rem;font-size:1.15rem}`

const LANDING_CSP = [
  "default-src 'none'",
  `style-src ${sha256(STYLE)}`,
  "img-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ')

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

const swaggerDir = () => dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'))

function landingPage(ctx: ServiceContext): string {
  const url = ctx.config.publicUrl
  const e = escapeHtml
  const store = ctx.models.peek('live')
  const origin = store ? datasetOf(store) : null
  const kind = origin ? (origin.kind === 'synthetic' ? 'Synthetic data' : 'Imported data') : 'No data yet'
  const asOf = store ? ` — data as of <strong>${e(store.dataAsOf)}</strong>` : ''
  return `<!doctype html><html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>erm3 — equity risk decomposition</title>
<style>${STYLE}</style>
</head><body>
<h1>erm3</h1>
<p>An open-source, self-hostable <strong>equity risk decomposition</strong> service. It splits each US
stock's risk into <strong>market</strong>, <strong>sector</strong>, <strong>subsector</strong> and a
<strong>residual</strong>, with explained-risk fractions, ETF hedge ratios, betas and daily factor returns,
through a metered REST API and an MCP server for agents.</p>

<div class="data${origin?.kind === 'synthetic' ? ' synthetic' : ''}" id="dataset">
<p><strong>${kind}</strong>${asOf}</p>
<p>${e(describeDataset(origin))}</p>
</div>

<h2>Get a key</h2>
<ul>
<li>Operator: <code>node bin/erm3.js accounts create --email you@example.com --balance 0</code>,
then <code>node bin/erm3.js keys create --account acct_… --env live</code> (or <code>--env test</code>: free, reads a sandbox market).</li>
<li>Sign in without a password: <code>POST ${e(url)}/auth/login {"email"}</code> mails a link (open it in the same browser, or post its token: <code>POST /auth/callback {"token"}</code>); the session then provisions keys with <code>POST /auth/provision</code>.</li>
${
  ctx.config.freeProvisionDailyCap > 0
    ? `<li>Try it anonymously: <code>POST ${e(url)}/auth/provision-free</code> gives a live key with 0.50 USD.</li>
`
    : ''
}</ul>
<pre>curl -H "Authorization: Bearer erm_agent_live_…" ${e(url)}/metrics/AAPL</pre>

<h2>Documents</h2>
<ul>
<li><a href="/docs/api">Interactive API reference</a> (from <a href="/openapi.json">/openapi.json</a>)</li>
<li><a href="/docs/methodology">Methodology</a> (<a href="/docs/methodology.md">Markdown</a>): how every number is computed</li>
<li><a href="/pricing">Prices</a>, <a href="/docs/billing">billing</a> and <a href="/docs/errors">errors</a></li>
<li><a href="/llms.txt">llms.txt</a> and the <a href="/.well-known/agent-manifest">agent manifest</a></li>
<li><a href="/health">Health</a></li>
</ul>

<h2>MCP</h2>
<p>Streamable HTTP at <code>${e(url)}/mcp</code> (SSE at <code>${e(url)}/mcp/sse</code>) with
<code>Authorization: Bearer &lt;key&gt;</code>, or OAuth from the 401.</p>
</body></html>`
}

/** An HTML page with the headers every erm3 page has: its CSP, no sniffing, no referrer. */
export function htmlPage(reply: FastifyReply, csp: string, body: string) {
  return reply
    .header('Content-Type', 'text/html; charset=utf-8')
    .header('Content-Security-Policy', csp)
    .header('X-Content-Type-Options', 'nosniff')
    .header('Referrer-Policy', 'no-referrer')
    .send(body)
}

export function landingRoutes(ctx: ServiceContext): RouteTable {
  const assets = new Map<Asset, string>()
  const asset = (name: Asset): string => {
    let body = assets.get(name)
    if (body === undefined) {
      body = name === 'erm3-reference.js' ? REFERENCE_INIT : readFileSync(join(swaggerDir(), name), 'utf8')
      assets.set(name, body)
    }
    return body
  }
  return {
    getLanding: async (_req, reply) =>
      htmlPage(reply.header('Cache-Control', 'no-cache'), LANDING_CSP, landingPage(ctx)),
    getApiReference: async (_req, reply) =>
      htmlPage(reply.header('Cache-Control', 'public, max-age=3600'), REFERENCE_CSP, REFERENCE_PAGE),
    getApiReferenceAsset: async (req, reply) => {
      const name = (req.params as { asset: string }).asset
      if (!Object.hasOwn(ASSET_TYPES, name))
        throw new AppError('NOT_FOUND', `No such file of the API reference: ${name}`)
      return reply
        .header('Content-Type', ASSET_TYPES[name as Asset])
        .header('Cache-Control', 'public, max-age=3600')
        .header('X-Content-Type-Options', 'nosniff')
        .send(asset(name as Asset))
    },
  }
}
