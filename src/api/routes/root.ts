import { createHash } from 'node:crypto'
import type { ServiceContext } from '../../services/context.ts'
import { datasetOf, describeDataset, originTitle } from '../../services/models.ts'
import { escapeHtml, htmlPage } from '../pages.ts'
import { type RouteDeps, type RouteFile, routeFile } from './types.ts'

/** The front door (`GET /`): an HTML page with a strict Content-Security-Policy. */

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

function landingPage(ctx: ServiceContext): string {
  const url = ctx.config.publicUrl
  const e = escapeHtml
  const store = ctx.models.peek('live')
  const origin = store ? datasetOf(store) : null
  const kind = e(originTitle(origin))
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
<p id="dashboard"><a href="/app">Open the dashboard</a>: sign in with your e-mail address (no password), explore a
ticker's risk, analyse a portfolio and create API keys${
    ctx.config.signupCreditMicros > 0
      ? ` — a new account starts with ${(ctx.config.signupCreditMicros / 1e6).toFixed(2)} USD of credit to try it`
      : ''
  }.</p>
<ul>
<li>Operator: <code>node bin/erm3.js accounts create --email you@example.com --balance 0</code>,
then <code>node bin/erm3.js keys create --account acct_… --env live</code> (or <code>--env test</code>: free, reads a sandbox market).</li>
<li>Sign in without a password: <code>POST ${e(url)}/auth/login {"email"}</code> mails a link (open it in the same browser, or post its token: <code>POST /auth/callback {"token"}</code>); the session then provisions keys with <code>POST /auth/provision</code>.</li>
${
  ctx.config.freeProvisionDailyCap > 0
    ? `<li>Try it anonymously: <code>curl -X POST ${e(url)}/auth/provision-free</code> (no body needed) gives a live key with 0.50 USD.</li>
`
    : ''
}</ul>
<pre>curl -H "Authorization: Bearer erm_agent_live_…" ${e(url)}/metrics/AAPL</pre>

<h2>Documents</h2>
<ul>
<li><a href="/docs/api">Interactive API reference</a> (from <a href="/openapi.json">/openapi.json</a>)</li>
<li><a href="/docs/methodology">Methodology</a> (<a href="/docs/methodology.md">Markdown</a>): how every number is computed; <a href="/docs/model-quality">model quality</a>: how well its risk forecasts come true</li>
<li><a href="/pricing">Prices</a>, <a href="/docs/billing">billing</a> and <a href="/docs/errors">errors</a></li>
<li><a href="/llms.txt">llms.txt</a> and the <a href="/.well-known/agent-manifest">agent manifest</a></li>
<li><a href="/health">Health</a></li>
</ul>

<h2>MCP</h2>
<p>Streamable HTTP at <code>${e(url)}/mcp</code> (SSE at <code>${e(url)}/mcp/sse</code>) with
<code>Authorization: Bearer &lt;key&gt;</code>, or OAuth from the 401.</p>
</body></html>`
}

export function rootRoutes({ ctx }: RouteDeps): RouteFile {
  return routeFile(import.meta.url, {
    getLanding: async (_req, reply) =>
      htmlPage(reply.header('Cache-Control', 'no-cache'), LANDING_CSP, landingPage(ctx)),
  })
}
