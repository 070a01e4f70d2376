import type { ResponseOf } from '../../contract/client.ts'
import { data, requireSession } from '../api.ts'
import { bars, lineChart, pct } from '../charts.ts'
import { el, errorMessage, message, num, table } from '../dom.ts'
import { exposureRows } from '../format.ts'

/**
 * Paste positions (ticker and weight or shares per line, negative = short); the snapshot as charts
 * and tables, with the book's long/short exposure and leverage.
 */

type Snapshot = ResponseOf<'snapshot'>

/** `AAPL 40` or `AAPL, 40` per line → positions (weight or shares by the chosen mode). */
function parsePositions(
  text: string,
  mode: 'weight' | 'shares',
): { ticker: string; weight?: number; shares?: number }[] {
  const rows: { ticker: string; weight?: number; shares?: number }[] = []
  for (const [i, raw] of text.split('\n').entries()) {
    const line = raw.trim()
    if (!line || line.startsWith('#')) continue
    // A negative amount is a short.
    const m = /^([A-Za-z0-9.-]+)[\s,;:]+(-?[0-9]*\.?[0-9]+)\s*%?$/.exec(line)
    if (!m)
      throw new Error(`line ${i + 1}: write a ticker and a number, e.g. "AAPL 40" (or "TSLA -10" short)`)
    const value = Number(m[2])
    rows.push(
      mode === 'weight'
        ? { ticker: m[1] as string, weight: value }
        : { ticker: m[1] as string, shares: value },
    )
  }
  if (rows.length === 0) throw new Error('paste at least one position')
  return rows
}

export async function portfolioPage(root: HTMLElement): Promise<void> {
  await requireSession() // 401 → the sign-in page; the key waits for the first data call
  const text = el('textarea', { id: 'positions', rows: 8, cols: 30, spellcheck: false })
  text.value = 'AAPL 30\nMSFT 30\nJPM 20\nXOM 20'
  const mode = el(
    'select',
    { id: 'mode' },
    el('option', { value: 'weight', text: 'weights (dollars or fractions)' }),
    el('option', { value: 'shares', text: 'share counts' }),
  )
  const lookback = el('input', { id: 'lookback', type: 'number', min: 20, max: 2000, value: 252 })
  const benchmark = el('input', { id: 'benchmark', placeholder: 'SPY, XLK or 60:SPY,40:XLK' })
  const out = el('div', { id: 'portfolio-out', 'aria-live': 'polite' })
  const form = el(
    'form',
    {},
    el('label', { for: 'positions', text: 'Positions, one per line: ticker and amount' }),
    text,
    el('label', { for: 'mode', text: 'Amounts are' }),
    mode,
    el('label', { for: 'lookback', text: 'Lookback (trading days)' }),
    lookback,
    el('label', { for: 'benchmark', text: 'Benchmark (optional)' }),
    benchmark,
    el('button', { type: 'submit', text: 'Analyse (0.25 USD)' }),
  )
  root.append(form, out)
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault()
    out.replaceChildren(message('Analysing…'))
    try {
      const portfolio = parsePositions(text.value, mode.value as 'weight' | 'shares')
      const r = await data<Snapshot>('/snapshot', {
        type: 'portfolio',
        portfolio,
        lookback_days: Number(lookback.value),
        ...(benchmark.value.trim() ? { benchmark: benchmark.value.trim() } : {}),
      })
      render(out, r.data, r.costUsd ?? 0, r.cache)
    } catch (e) {
      out.replaceChildren(errorMessage(e))
    }
  })
}

function withId<T extends HTMLElement>(id: string, e: T): T {
  e.id = id
  return e
}

const exposureCaption =
  'Exposure: long, short and net as shares of the gross (every risk figure is per 1 of gross)'

/** Covered, or why not and what prices it instead (a proxy ETF). */
function coveredCell(p: Snapshot['snapshot']['positions'][number]): string {
  if (p.covered) return 'yes'
  const why = p.in_dataset ? (p.reason ?? 'no model') : 'not in the dataset'
  return p.proxy ? `no (${why}): proxied by ${p.proxy.etf}` : `no: ${why}`
}

function render(out: HTMLElement, b: Snapshot, cost: number, cache: string | null): void {
  const s = b.snapshot
  const split = el('section', { class: 'card', id: 'variance-bars' })
  const cum = el('div', { class: 'chart', id: 'chart-portfolio-cumulative' })
  const dd = el('div', { class: 'chart', id: 'chart-drawdown' })
  const te = b.risk_summary.active?.tracking_error_ann
  out.replaceChildren(
    el('p', {
      class: 'meta',
      text:
        `As of ${s.as_of}: volatility ${s.volatility_ann === null ? 'n/a' : pct(s.volatility_ann)} a year, ` +
        `diversification ratio ${num(s.diversification_ratio, 2) ?? 'n/a'}, ` +
        `${pct(s.weight_covered)} of the book covered` +
        (s.weight_proxied > 0 ? `, ${pct(s.weight_proxied)} priced by a proxy` : '') +
        (te === undefined || te === null ? '' : `, tracking error ${pct(te)}`) +
        `. This call cost ${cost.toFixed(2)} USD${cache === 'HIT' ? ' (cached: free)' : ''}.`,
    }),
    ...s.unresolved.map((u) => message(`${u.ticker}: ${u.detail}`, 'error')),
    ...[...s.warnings, ...b.risk_summary.concentration.flags].map((w) => message(w)),
    withId(
      'exposure-table',
      table(['Measure', 'Share of the gross'], exposureRows(s.exposure), exposureCaption),
    ),
    split,
    withId(
      'positions-table',
      table(
        ['Ticker', 'Name', 'Weight', 'Residual ER', 'Vol 23d', 'Share of risk', 'Covered'],
        s.positions.map((p) => [
          p.ticker,
          p.name,
          pct(p.weight),
          p.l3_res_er === null ? null : pct(p.l3_res_er),
          p.vol_23d === null ? null : pct(p.vol_23d),
          p.risk_contribution.percent === null ? null : pct(p.risk_contribution.percent),
          coveredCell(p),
        ]),
        'Positions',
      ),
    ),
    table(
      ['ETF', 'L1', 'L2', 'L3', 'Recommended'],
      [
        ...new Set(
          (['L1', 'L2', 'L3', 'recommended'] as const).flatMap((k) => s.hedges[k].map((h) => h.etf)),
        ),
      ].map((etf) => [
        etf,
        ...(['L1', 'L2', 'L3', 'recommended'] as const).map((k) =>
          // An ETF a level names twice holds once, the weights added.
          num(
            s.hedges[k].some((h) => h.etf === etf)
              ? s.hedges[k].filter((h) => h.etf === etf).reduce((a, h) => a + h.hr, 0)
              : null,
          ),
        ),
      ]),
      'Portfolio hedge: ETF exposure per $1 of book (sell that much to neutralise)',
    ),
    cum,
    dd,
  )
  const v = s.variance_decomposition
  bars(
    split,
    'Variance by layer',
    [
      { label: 'Market', value: v.market },
      { label: 'Sector', value: v.sector },
      { label: 'Subsector', value: v.subsector },
      { label: 'Residual', value: v.residual },
    ],
    'h2',
  )
  const tb = b.time_behavior
  lineChart(cum, 'Cumulative return (frozen weights)', tb.dates, [
    { label: 'Portfolio', values: tb.cumulative_return },
    ...(tb.benchmark_cumulative_return
      ? [{ label: 'Benchmark', values: tb.benchmark_cumulative_return }]
      : []),
  ])
  lineChart(dd, 'Drawdown', tb.dates, [{ label: 'Drawdown', values: tb.drawdown }])
}
