import type { ResponseOf } from '../../contract/client.ts'
import { type Answer, call, data, dataKey, requireSession } from '../api.ts'
import { bars, lineChart, pct, stackedChart } from '../charts.ts'
import { el, message, table } from '../dom.ts'
import { fixed, hedgeBasket, percentile } from '../format.ts'

/** One ticker: current decomposition, hedges per level, history charts, rankings; each call's cost shown. */

type Metrics = ResponseOf<'getMetrics'>
type HedgeLevels = NonNullable<Metrics['hedge_levels']>

type L3History = ResponseOf<'getL3Decomposition'>

type Decomposition = ResponseOf<'getReturnsDecomposition'>

type Panel = ResponseOf<'getIndustryPanel'>

type Rankings = ResponseOf<'getRankings'>

/** Π(1 + r) − 1 to date, a null day carrying the level forward. */
function cumulative(r: (number | null)[]): number[] {
  let level = 1
  return r.map((x) => {
    level *= 1 + (x ?? 0)
    return level - 1
  })
}

function hedgeTable(h: HedgeLevels): HTMLTableElement {
  const rows = (['L1', 'L2', 'L3'] as const).map((k) => {
    const l = h[k]
    const basket = hedgeBasket([
      { etf: l.hedge_etfs.market, ratio: l.market_hr },
      { etf: l.hedge_etfs.sector, ratio: l.sector_hr },
      { etf: l.hedge_etfs.subsector, ratio: l.subsector_hr },
    ])
    return [
      k + (h.recommended_level === k ? ' (recommended)' : ''),
      fixed(l.market_hr),
      fixed(l.sector_hr),
      fixed(l.subsector_hr),
      l.residual_er === null ? null : pct(l.residual_er),
      basket,
    ]
  })
  return table(
    ['Level', 'Market HR', 'Sector HR', 'Subsector HR', 'Residual ER', 'Hedge per $1 long'],
    rows,
    'Hedge ratios and the hedge basket per level',
  )
}

export async function explorerPage(root: HTMLElement, params: URLSearchParams): Promise<void> {
  await requireSession() // 401 → the sign-in page; the key waits for the first data call
  const { input, out } = tickerSearch(root)
  const ticker = params.get('ticker')
  if (!ticker) return
  input.value = ticker
  out.append(message(`Loading ${ticker}…`))
  const view = await loadTicker(ticker)
  if (view.empty) renderNothing(out, view.m, view.nothing.reason, view.costs)
  else renderTicker(out, view)
}

/** The ticker form, suggesting tickers as one types; submitting opens that ticker's view. */
function tickerSearch(root: HTMLElement): { input: HTMLInputElement; out: HTMLElement } {
  const input = el('input', {
    id: 'ticker',
    name: 'ticker',
    list: 'ticker-suggestions',
    autocomplete: 'off',
    required: true,
  })
  const list = el('datalist', { id: 'ticker-suggestions' })
  const form = el(
    'form',
    { role: 'search' },
    el('label', { for: 'ticker', text: 'Ticker' }),
    input,
    list,
    el('button', { type: 'submit', text: 'Show risk' }),
  )
  const out = el('div', { id: 'explorer-out', 'aria-live': 'polite' })
  root.append(form, out)
  let pending = 0
  input.addEventListener('input', async () => {
    const q = input.value.trim()
    if (q.length < 1) return
    const mine = ++pending
    const r = await call<{ tickers: { ticker: string; name: string }[] }>(
      `/tickers?search=${encodeURIComponent(q)}&include_metadata=true&limit=8`,
      { key: await dataKey() },
    )
    if (mine !== pending) return
    list.replaceChildren(
      ...r.data.tickers.map((t) => el('option', { value: t.ticker, text: `${t.ticker} — ${t.name}` })),
    )
  })
  form.addEventListener('submit', (ev) => {
    ev.preventDefault()
    location.hash = `#/explorer?ticker=${encodeURIComponent(input.value.trim().toUpperCase())}`
  })
  return { input, out }
}

type TickerView = Exclude<Awaited<ReturnType<typeof loadTicker>>, { empty: true }>

/**
 * The state first, then every other call of the view at once, each answer kept with what it
 * cost. A ticker the model has nothing for (an ETF) is answered free with the reason
 * (docs/decisions/empty-answers.md); the rest of the view would be empty charts, so it is not
 * asked for.
 */
async function loadTicker(ticker: string) {
  const costs: Answer<unknown>[] = []
  const track = <T>(a: Answer<T>) => {
    costs.push(a)
    return a.data
  }
  const t = encodeURIComponent(ticker)
  const m = await data<Metrics>(`/metrics/${t}`).then(track)
  const nothing = m._metadata.nothing_to_answer
  if (nothing) return { empty: true as const, m, nothing, costs }
  const [hist, dec, rk, panel] = await Promise.all([
    data<L3History>(`/l3-decomposition?ticker=${t}&years=15`).then(track),
    data<Decomposition>(`/returns-decomposition?ticker=${t}&years=15`).then(track),
    data<Rankings>(`/rankings/${t}`).then(track),
    data<Panel>('/industry-panel?level=sector&min_peers=2').then(track),
  ])
  return { empty: false as const, m, hist, dec, rk, panel, costs }
}

/** What the view cost, and how many of its calls were free cache hits. */
function costLine(costs: Answer<unknown>[]): string {
  const cost = costs.reduce((a, c) => a + (c.costUsd ?? 0), 0)
  return `this view cost ${cost.toFixed(3)} USD (${costs.filter((c) => c.cache === 'HIT').length} of ${costs.length} calls from cache, free)`
}

/** A ticker the model has nothing for: its name, the reason and where its data is, at no cost. */
function renderNothing(out: HTMLElement, m: Metrics, reason: string, costs: Answer<unknown>[]): void {
  out.replaceChildren(
    el('h2', { text: `${m.ticker} — ${m.display.name}` }),
    el('p', { class: 'meta', text: `${m.meta.asset_type ?? 'security'} · ${costLine(costs)}` }),
    message(reason),
  )
}

/** The view: the state today (explained risk, hedges, industry context), the history, the rankings. */
function renderTicker(out: HTMLElement, view: TickerView): void {
  const { m, rk, panel, costs } = view
  const peers = panel.industries.find((x) => x.industry_name === m.display.industry)
  const erBox = el('section', { class: 'card', id: 'er-bars' })
  const erHistory = el('div', { class: 'chart', id: 'chart-er' })
  const hrHistory = el('div', { class: 'chart', id: 'chart-hr' })
  const cum = el('div', { class: 'chart', id: 'chart-cumulative' })
  out.replaceChildren(
    el('h2', { text: `${m.ticker} — ${m.display.name}` }),
    el('p', {
      class: 'meta',
      text: `${m.display.sector ?? 'no sector'} · ${m.display.industry ?? ''} · state as of ${m.teo} · ${costLine(costs)}`,
    }),
    erBox,
    m.hedge_levels
      ? hedgeTable(m.hedge_levels)
      : message(
          `No hedge ratios for ${m.ticker} as of ${m.teo}: the model has no market beta for it that day.`,
        ),
    el('p', {
      id: 'industry-context',
      text: peers
        ? `Industry context: ${peers.industry_name}, ${peers.n_companies} companies; their sector beta averages ${fixed(peers.beta_mean, 2) ?? 'n/a'} (variance ${fixed(peers.beta_variance) ?? 'n/a'}), this stock's is ${fixed(m.metrics.l2_sec_beta ?? null, 2) ?? 'n/a'}.`
        : `Industry context: fewer than 2 peers in ${m.display.industry ?? 'its industry'} on ${m.teo}.`,
    }),
    el('h3', { text: 'History' }),
    erHistory,
    hrHistory,
    cum,
    table(
      ['Metric', 'Window', 'Cohort', 'Percentile', 'Cohort size'],
      rk.rankings
        .filter((r) => r.window === '252d' || r.metric === 'mkt_cap')
        .map((r) => [r.metric, r.window, r.cohort, percentile(r.rank_percentile), r.cohort_size]),
      'Rankings (252-day window, and size)',
    ),
  )
  drawCharts({ erBox, erHistory, hrHistory, cum }, view)
}

/** The charts, drawn into their boxes once these are on the page. */
function drawCharts(
  boxes: Record<'erBox' | 'erHistory' | 'hrHistory' | 'cum', HTMLElement>,
  { m, hist, dec }: TickerView,
): void {
  const { erBox, erHistory, hrHistory, cum } = boxes
  const l3 = m.hedge_levels?.L3
  if (l3)
    bars(erBox, 'Explained risk at L3 (share of variance)', [
      { label: `Market (${l3.hedge_etfs.market})`, value: l3.market_er },
      { label: `Sector (${l3.hedge_etfs.sector ?? 'none'})`, value: l3.sector_er },
      { label: `Subsector (${l3.hedge_etfs.subsector ?? 'none'})`, value: l3.subsector_er },
      { label: 'Residual', value: l3.residual_er },
    ])
  stackedChart(erHistory, 'Explained risk over time (L3, monthly)', hist.dates, [
    { label: 'Market', values: hist.l3_mkt_er ?? [] },
    { label: 'Sector', values: hist.l3_sec_er ?? [] },
    { label: 'Subsector', values: hist.l3_sub_er ?? [] },
    { label: 'Residual', values: hist.l3_res_er ?? [] },
  ])
  lineChart(hrHistory, 'L3 hedge ratios over time (monthly)', hist.dates, [
    { label: 'Market HR', values: hist.l3_mkt_hr ?? [] },
    { label: 'Sector HR', values: hist.l3_sec_hr ?? [] },
    { label: 'Subsector HR', values: hist.l3_sub_hr ?? [] },
  ])
  lineChart(cum, 'Cumulative return: gross vs factor vs residual (daily)', dec.dates, [
    { label: 'Gross', values: cumulative(dec.gross ?? []) },
    { label: 'Factor (L3)', values: cumulative(dec.l3_cfr ?? []) },
    { label: 'Residual (L3)', values: cumulative(dec.l3_rr ?? []) },
  ])
}
