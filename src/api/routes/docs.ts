import { createHash, timingSafeEqual } from 'node:crypto'
import { readFile } from 'node:fs/promises'
import { WIRE_ERRORS } from '../../contract/errors.ts'
import { buildOpenApi } from '../../contract/openapi.ts'
import { AppError } from '../../platform/errors.ts'
import type { ServiceContext } from '../../services/context.ts'
import { billingDoc } from '../../services/discovery/billing-doc.ts'
import { bearerOf } from '../auth-hook.ts'
import type { PromMetrics } from '../prom.ts'
import { htmlPage } from './landing.ts'
import type { RouteTable } from './types.ts'

function sameSecret(a: string, b: string): boolean {
  const x = createHash('sha256').update(a).digest()
  const y = createHash('sha256').update(b).digest()
  return timingSafeEqual(x, y)
}

const METHODOLOGY = new URL('../../../docs/methodology.md', import.meta.url)

const escapeHtml = (s: string) =>
  s.replace(
    /[&<>"']/g,
    (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] as string,
  )

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

export function docsRoutes(ctx: ServiceContext, prom: PromMetrics): RouteTable {
  const openapi = JSON.stringify(buildOpenApi({ publicUrl: ctx.config.publicUrl }))
  const errors = errorsPage()
  let methodology: string | null = null
  const billing = billingDoc({
    publicUrl: ctx.config.publicUrl,
    topUpUrl: ctx.config.topUpUrl,
    stripe: ctx.config.stripe !== null,
  })
  return {
    getBillingDocs: async (_req, reply) =>
      reply.header('Content-Type', 'text/markdown; charset=utf-8').send(billing),
    getOpenApi: async (_req, reply) =>
      reply.header('Content-Type', 'application/json; charset=utf-8').send(openapi),
    getErrorDocs: async (_req, reply) => htmlPage(reply, ERRORS_CSP, errors),
    getMethodologyDocs: async (_req, reply) => {
      methodology ??= await readFile(METHODOLOGY, 'utf8')
      return reply.header('Content-Type', 'text/markdown; charset=utf-8').send(methodology)
    },
    getPrometheusMetrics: async (req, reply) => {
      // Operator data (traffic per operation, refusals, process figures): off unless the operator
      // set a token, then only for its bearer.
      const token = ctx.config.metricsToken
      if (token === null)
        throw new AppError('NOT_FOUND', 'No such endpoint: the operator has not enabled Prometheus metrics')
      if (!sameSecret(bearerOf(req) ?? '', token))
        throw new AppError('MISSING_CREDENTIALS', 'Send Authorization: Bearer <METRICS_TOKEN>')
      return reply.header('Content-Type', prom.registry.contentType).send(await prom.registry.metrics())
    },
  }
}
