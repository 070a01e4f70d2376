import { createHash } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { readFile } from 'node:fs/promises'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import type { FastifyReply } from 'fastify'
import { WIRE_ERRORS } from '../../contract/errors.ts'
import type { API_REFERENCE_ASSETS } from '../../contract/ops/docs.ts'
import { AppError } from '../../platform/errors.ts'
import { escapeHtml, type RenderedHeading, renderMarkdown } from '../../platform/markdown.ts'
import { readEvaluation } from '../../services/analytics/evaluate/cache.ts'
import { MODEL_QUALITY_STYLE, modelQualityPage } from '../../services/analytics/evaluate/page.ts'
import { billingDoc } from '../../services/discovery/billing-doc.ts'
import { htmlPage } from '../pages.ts'
import { type RouteDeps, type RouteFile, routeFile } from './types.ts'

/**
 * The documents under /docs: the errors page, the methodology, billing and webhook guides
 * (Markdown from docs/), and the interactive API reference (`/docs/api`): Swagger UI from the
 * pinned swagger-ui-dist package, served from node_modules by this instance (no CDN: it works
 * offline), reading /openapi.json.
 */

const METHODOLOGY = new URL('../../../docs/methodology.md', import.meta.url)

const sha256 = (s: string) => `'sha256-${createHash('sha256').update(s).digest('base64')}'`

/**
 * The methodology page's style: the contents beside the text on wide screens, formulas (inline
 * code that reads as one, class "math") set apart from names, tables ruled and scrollable.
 */
const METHODOLOGY_STYLE = `body{font:16px/1.6 system-ui,sans-serif;color:#1d1d1f;margin:0}
.wrap{display:grid;grid-template-columns:minmax(13rem,17rem) minmax(0,48rem);gap:2.5rem;max-width:70rem;margin:0 auto;padding:1rem}
header{grid-column:1/-1;font-size:.95rem}
nav.toc{position:sticky;top:1rem;align-self:start;max-height:calc(100vh - 2rem);overflow-y:auto;font-size:.9rem;line-height:1.45}
nav.toc h2{font-size:1rem;margin:0 0 .4rem}nav.toc ul{margin:0;padding:0;list-style:none}nav.toc ul ul{margin:.15rem 0 .35rem;padding-left:.9rem}
nav.toc li{margin:.12rem 0}
@media (max-width:56rem){.wrap{display:block}nav.toc{position:static;max-height:none;border:1px solid #e5e5ea;border-radius:6px;padding:.6rem 1rem}}
main h1{margin-top:.4rem}main h2{margin-top:2.4rem;padding-bottom:.2rem;border-bottom:1px solid #e5e5ea;font-size:1.35rem}
main h3{margin-top:1.7rem;font-size:1.12rem}
a{color:#0b57d0}
code,pre{font-family:ui-monospace,"DejaVu Sans Mono",Menlo,Consolas,monospace;font-size:.88em}
code{background:#f3f3f5;border-radius:4px;padding:.05rem .25rem}
code.math{background:#eef4fb;color:#0f3460;border:1px solid #d6e4f5;font-size:.92em;padding:.05rem .3rem;font-variant-ligatures:none}
pre{background:#f3f3f5;border-radius:6px;padding:.6rem .8rem;overflow-x:auto}pre code{background:none;padding:0}
.table{overflow-x:auto;margin:1rem 0}
table{border-collapse:collapse;font-size:.92rem}
th,td{border:1px solid #d0d7de;padding:.35rem .6rem;text-align:left;vertical-align:top}
thead th{background:#f6f8fa}tbody tr:nth-child(even){background:#fafbfc}
td code.math{white-space:normal}`

/** Static text with one inline style sheet (by hash): nothing may load, run, frame it or be posted from it. */
const METHODOLOGY_CSP = [
  "default-src 'none'",
  `style-src ${sha256(METHODOLOGY_STYLE)}`,
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ')

/** The contents: the numbered sections, each with its subsections. */
function contents(headings: RenderedHeading[]): string {
  const sections: { link: string; subs: string[] }[] = []
  for (const h of headings) {
    const link = `<a href="#${escapeHtml(h.id)}">${escapeHtml(h.text)}</a>`
    if (h.depth === 2) sections.push({ link, subs: [] })
    else if (h.depth === 3) sections[sections.length - 1]?.subs.push(link)
  }
  const li = (s: (typeof sections)[number]) =>
    `<li>${s.link}${s.subs.length ? `<ul>${s.subs.map((l) => `<li>${l}</li>`).join('')}</ul>` : ''}</li>`
  return `<ul>${sections.map(li).join('')}</ul>`
}

/** docs/methodology.md as a page: rendered once per process, at the first request. */
async function methodologyPage(markdown: string): Promise<string> {
  // The page has its own contents beside the text: the document's contents line is left out.
  const body = markdown.replace(/<!-- generated:contents -->[\s\S]*?<!-- \/generated:contents -->\n?/, '')
  const { html, headings } = await renderMarkdown(body)
  const title = headings.find((h) => h.depth === 1)?.text ?? 'erm3 methodology'
  return `<!doctype html><html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title>
<style>${METHODOLOGY_STYLE}</style>
</head><body><div class="wrap">
<header><a href="/">erm3</a> · <a href="/docs/api">API reference</a> · <a href="/docs/methodology.md">Markdown source</a></header>
<nav class="toc" aria-label="Contents"><h2>Contents</h2>${contents(headings)}</nav>
<main>
${html}</main>
</div></body></html>`
}

/**
 * Whether an Accept header prefers text/markdown to text/html. Each type takes the q of its most
 * specific range (the type itself, else `text/*`, else any type); a tie serves HTML, so browsers,
 * curl and clients without an Accept header get the page.
 */
export function prefersMarkdown(accept: string | undefined): boolean {
  if (!accept) return false
  const q = new Map<string, number>()
  for (const part of accept.split(',')) {
    const [type = '', ...params] = part.trim().split(';')
    const qp = params.map((p) => p.trim()).find((p) => p.startsWith('q='))
    const v = qp ? Number(qp.slice(2)) : 1
    const key = type.trim().toLowerCase()
    if (key && Number.isFinite(v)) q.set(key, Math.max(q.get(key) ?? 0, v))
  }
  const of = (type: string) => q.get(type) ?? q.get('text/*') ?? q.get('*/*') ?? 0
  return of('text/markdown') > of('text/html')
}
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

/** The model-quality page: static markup and inline SVG under one inline style sheet (by hash). */
const MODEL_QUALITY_CSP = [
  "default-src 'none'",
  `style-src ${sha256(MODEL_QUALITY_STYLE)}`,
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

const isAsset = (name: string): name is Asset => Object.hasOwn(ASSET_TYPES, name)

const swaggerDir = () => dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'))

export function docsRoutes({ ctx }: RouteDeps): RouteFile {
  const errors = errorsPage()
  // Read and rendered once, at the first request (a failure is retried by the next one).
  let source: Promise<Buffer> | null = null
  let page: Promise<string> | null = null
  const markdown = () =>
    (source ??= readFile(METHODOLOGY).catch((err) => {
      source = null
      throw err
    }))
  const rendered = () =>
    (page ??= markdown()
      .then((b) => methodologyPage(b.toString('utf8')))
      .catch((err) => {
        page = null
        throw err
      }))
  const sendMarkdown = async (reply: FastifyReply) =>
    reply
      .header('Content-Type', 'text/markdown; charset=utf-8')
      .header('X-Content-Type-Options', 'nosniff')
      .send(await markdown())
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
    getMethodologyDocs: async (req, reply) => {
      reply.header('Vary', 'Accept')
      if (prefersMarkdown(req.headers.accept)) return sendMarkdown(reply)
      return htmlPage(reply, METHODOLOGY_CSP, await rendered())
    },
    getMethodologyMarkdown: async (_req, reply) => sendMarkdown(reply),
    getModelQualityDocs: async (_req, reply) => {
      // The live build's cached evaluation (erm3 evaluate), read per request: it appears once run.
      const store = ctx.models.peek('live')
      const result = store ? await readEvaluation(store) : null
      return htmlPage(reply.header('Cache-Control', 'no-cache'), MODEL_QUALITY_CSP, modelQualityPage(result))
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
