import { escapeHtml } from '../../../platform/markdown.ts'
import { BIAS_HEADER, biasRows, HEDGE_HEADER, hedgeRows, sizeLabel } from './report.ts'
import type { EvaluationResult } from './summary.ts'

/**
 * GET /docs/model-quality (docs/model-quality.md): the cached evaluation of the served build as
 * tables and inline SVG plots (rolling 12-month bias per estimator and book size), or how to run
 * it when the build has none. Static markup only: no script, one inline style sheet.
 */

export const MODEL_QUALITY_STYLE = `body{font:16px/1.55 system-ui,sans-serif;color:#1d1d1f;max-width:62rem;margin:0 auto;padding:1rem}
table{border-collapse:collapse;font-size:.9rem;margin:.8rem 0}th,td{border:1px solid #d0d7de;padding:.3rem .55rem;text-align:right}
th:first-child,td:first-child,td:nth-child(2){text-align:left}thead th{background:#f6f8fa}
code{background:#f3f3f5;border-radius:4px;padding:.05rem .25rem}.plots{display:grid;grid-template-columns:repeat(auto-fill,minmax(28rem,1fr));gap:1rem}
figure{margin:0}figcaption{font-size:.9rem;color:#444}svg text{font:11px system-ui,sans-serif;fill:#444}`

const COLORS = ['#6e6e73', '#0b57d0', '#1e8e3e', '#d93025', '#9334e6', '#f29900']

function htmlTable(header: string[], rows: string[][]): string {
  const th = header.map((h) => `<th>${escapeHtml(h)}</th>`).join('')
  const body = rows.map((r) => `<tr>${r.map((c) => `<td>${escapeHtml(c)}</td>`).join('')}</tr>`).join('\n')
  return `<table><thead><tr>${th}</tr></thead><tbody>\n${body}\n</tbody></table>`
}

/** One plot: the rolling bias of every estimator for one book size, with the 0.9–1.1 band. */
function plot(r: EvaluationResult, size: string): string {
  const W = 440
  const H = 200
  const pad = { l: 34, r: 8, t: 8, b: 22 }
  const series = r.estimators.map((e) => r.bias[e.name]?.[size]?.rolling ?? [])
  const dates = [...new Set(series.flat().map((p) => p.date))].sort()
  if (dates.length < 2) return ''
  const values = series
    .flat()
    .map((p) => p.bias)
    .filter((v) => Number.isFinite(v))
  const lo = Math.min(0.6, ...values)
  const hi = Math.max(1.4, ...values)
  const x = (d: string) => pad.l + ((W - pad.l - pad.r) * dates.indexOf(d)) / (dates.length - 1)
  const y = (v: number) => pad.t + ((H - pad.t - pad.b) * (hi - v)) / (hi - lo)
  const band = `<rect x="${pad.l}" y="${y(1.1).toFixed(1)}" width="${W - pad.l - pad.r}" height="${(y(0.9) - y(1.1)).toFixed(1)}" fill="#e6f4ea"/>`
  const ticks = [lo, 1, hi]
    .map((v) => `<text x="2" y="${(y(v) + 4).toFixed(1)}">${v.toFixed(2)}</text>`)
    .join('')
  const years = [dates[0], dates[dates.length - 1]]
    .map(
      (d, k) => `<text x="${k === 0 ? pad.l : W - pad.r - 60}" y="${H - 6}">${escapeHtml(String(d))}</text>`,
    )
    .join('')
  const lines = series
    .map((pts, k) => {
      const path = pts
        .filter((p) => Number.isFinite(p.bias))
        .map((p) => `${x(p.date).toFixed(1)},${y(p.bias).toFixed(1)}`)
        .join(' ')
      return `<polyline fill="none" stroke="${COLORS[k % COLORS.length]}" stroke-width="1.4" points="${path}"/>`
    })
    .join('')
  const legend = r.estimators
    .map((e, k) => `<tspan fill="${COLORS[k % COLORS.length]}">■ ${escapeHtml(e.name)} </tspan>`)
    .join('')
  return `<figure><svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ${W} ${H + 16}" role="img" aria-label="rolling 12-month bias, ${escapeHtml(sizeLabel(size))}">${band}<line x1="${pad.l}" x2="${W - pad.r}" y1="${y(1).toFixed(1)}" y2="${y(1).toFixed(1)}" stroke="#999" stroke-dasharray="3 3"/>${lines}${ticks}${years}<text x="${pad.l}" y="${H + 12}">${legend}</text></svg><figcaption>Rolling 12-month bias, ${escapeHtml(sizeLabel(size))} (green band: 0.9–1.1)</figcaption></figure>`
}

function resultBody(r: EvaluationResult): string {
  const sizes = Object.keys(r.bias[r.estimators[0]?.name ?? ''] ?? {})
  return `<p>Build <code>${escapeHtml(r.build ?? '(directory)')}</code> (${escapeHtml(r.dataset.kind)} data, as of ${escapeHtml(r.data_as_of)}),
evaluated ${escapeHtml(r.generated_at)} in ${r.seconds.toFixed(0)} s: ${r.dates.count} dates from ${escapeHtml(String(r.dates.first))} to ${escapeHtml(String(r.dates.last))},
horizon ${r.options.horizon} trading days, ${r.options.singles} random single stocks and ${r.options.booksPerSize} random equal-weight books per size at each date (seed ${r.options.seed}).</p>
<h2>Bias and rolling MRAD</h2>
<p>Bias is the standard deviation of z = realised return ÷ forecast volatility over the next horizon (1 is a calibrated forecast; above 1 the risk was under-forecast).
MRAD is the mean |rolling 12-month bias − 1|; “MRAD vs first” compares it with the first estimator, <code>${escapeHtml(r.estimators[0]?.name ?? '')}</code> (today’s forecast). 2008 and 2020 are the bias within those calendar years.</p>
${htmlTable(BIAS_HEADER, biasRows(r))}
<p>Estimators: ${r.estimators.map((e) => `<code>${escapeHtml(e.name)}</code> ${escapeHtml(e.description)}`).join('; ')}.
Recommended by this evaluation: <strong>${escapeHtml(r.recommended ?? '—')}</strong>.</p>
<div class="plots">${sizes.map((s) => plot(r, s)).join('\n')}</div>
<h2>Out-of-sample hedge effectiveness</h2>
<p>Variance of the return over the next horizon after holding each level’s hedge (frozen at the date) ÷ the unhedged variance; lower is better.</p>
${htmlTable(HEDGE_HEADER, hedgeRows(r))}`
}

const EMPTY = `<p>No evaluation is cached for the build this instance serves. Run it on the server’s model store:</p>
<pre><code>erm3 evaluate --store &lt;model store root&gt;</code></pre>
<p>It writes <code>evaluations/&lt;build&gt;.json</code> beside <code>builds/</code>, which this page then shows
(about ten minutes on the default synthetic market; <code>--dates 24</code> for a quick look).</p>`

export function modelQualityPage(r: EvaluationResult | null): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>erm3 model quality</title>
<style>${MODEL_QUALITY_STYLE}</style>
</head><body>
<p><a href="/">erm3</a> · <a href="/docs/methodology">Methodology</a></p>
<h1>Model quality: how well the risk forecasts come true</h1>
${r ? resultBody(r) : EMPTY}
</body></html>`
}
