/**
 * Polygon.io, also branded Massive (docs/sources/prices.md): unadjusted daily aggregates, one
 * ticker over a range or every ticker on one day (grouped daily), splits and dividends apart, and
 * the ticker reference (active and delisted, with composite FIGI and CIK). Polygon's own
 * `adjusted=true` folds in splits only, so bars are fetched unadjusted and the total-return
 * adjusted close is computed here (adjust.ts).
 */
import { canonicalTicker, isValidTicker } from '../data/aliases.ts'
import { totalReturnAdjust } from './adjust.ts'
import { HttpClient, type HttpClientOptions } from './http.ts'
import { polygonSecurities } from './polygon-reference.ts'
import { fail, field, paged, type Row, text } from './polygon-wire.ts'
import type { CallOptions, CorporateAction, DailyBar, Source } from './types.ts'

export interface PolygonOptions {
  apiKey: string
  /** e.g. https://api.polygon.io */
  baseUrl: string
  /** The free plan allows 5 a minute. */
  ratePerMinute: number
  /** For tests: retries, backoff, the sleep. */
  http?: Partial<HttpClientOptions>
}

const NY_DATE = new Intl.DateTimeFormat('en-CA', {
  timeZone: 'America/New_York',
  year: 'numeric',
  month: '2-digit',
  day: '2-digit',
})

/** An aggregate's `t` (Unix milliseconds, the start of the New York trading day) as YYYY-MM-DD. */
const nyDate = (t: number) => NY_DATE.format(new Date(t))

function barOf(r: Row, what: string): DailyBar {
  const close = field(r, 'c', what)
  const v = r.v
  return {
    date: nyDate(field(r, 't', what)),
    close,
    adjClose: close,
    volume: typeof v === 'number' && Number.isFinite(v) ? v : null,
    splitFactor: 1,
    dividend: 0,
  }
}

async function actionsBetween(
  api: HttpClient,
  base: string,
  from: string,
  to: string,
  ticker: string | null,
  signal?: AbortSignal,
): Promise<CorporateAction[]> {
  const only: Record<string, string> = ticker === null ? {} : { ticker }
  const out: CorporateAction[] = []
  const splits = { ...only, 'execution_date.gte': from, 'execution_date.lte': to, limit: 1000 }
  for await (const r of paged(api, base, 'v3/reference/splits', splits, signal)) {
    const what = `split of ${String(r.ticker)}`
    const ratio = field(r, 'split_to', what) / field(r, 'split_from', what)
    if (!(ratio > 0) || !Number.isFinite(ratio))
      fail(`${what}: split_to / split_from is not a positive ratio`)
    out.push({
      ticker: canonicalTicker(text(r, 'ticker', what)),
      date: text(r, 'execution_date', what),
      kind: 'split',
      value: ratio,
    })
  }
  const dividends = { ...only, 'ex_dividend_date.gte': from, 'ex_dividend_date.lte': to, limit: 1000 }
  for await (const r of paged(api, base, 'v3/reference/dividends', dividends, signal)) {
    const what = `dividend of ${String(r.ticker)}`
    const cash = field(r, 'cash_amount', what)
    out.push({
      ticker: canonicalTicker(text(r, 'ticker', what)),
      date: text(r, 'ex_dividend_date', what),
      kind: 'dividend',
      value: cash,
    })
  }
  return out.sort((a, b) => (a.date < b.date ? -1 : a.date > b.date ? 1 : 0))
}

const today = () => new Date().toISOString().slice(0, 10)

export function polygonSource(o: PolygonOptions): Source {
  const api = new HttpClient({
    source: 'polygon',
    baseUrl: o.baseUrl,
    query: { apiKey: o.apiKey },
    ratePerSecond: o.ratePerMinute / 60,
    ...o.http,
  })
  const base = o.baseUrl
  return {
    name: 'polygon',
    prices: {
      async history(ticker, from, to, c: CallOptions = {}) {
        const end = to ?? today()
        const path = `v2/aggs/ticker/${encodeURIComponent(ticker)}/range/1/day/${from}/${end}`
        const query = { adjusted: 'false', sort: 'asc', limit: 50000 }
        const bars: DailyBar[] = []
        for await (const r of paged(api, base, path, query, c.signal)) bars.push(barOf(r, `bar of ${ticker}`))
        const actions = await actionsBetween(api, base, from, end, ticker, c.signal)
        return totalReturnAdjust(bars, actions)
      },
      async day(date, c: CallOptions = {}) {
        const path = `v2/aggs/grouped/locale/us/market/stocks/${date}`
        const out = new Map<string, DailyBar>()
        for await (const r of paged(api, base, path, { adjusted: 'false' }, c.signal)) {
          const ticker = canonicalTicker(text(r, 'T', `grouped bar of ${date}`))
          if (isValidTicker(ticker)) out.set(ticker, { ...barOf(r, `bar of ${ticker}`), date })
        }
        for (const a of await actionsBetween(api, base, date, date, null, c.signal)) {
          const bar = out.get(a.ticker)
          if (!bar) continue
          if (a.kind === 'split') bar.splitFactor *= a.value
          else bar.dividend += a.value
        }
        return out
      },
    },
    actions: {
      between: (from, to, c: CallOptions = {}) => actionsBetween(api, base, from, to, null, c.signal),
    },
    securities: polygonSecurities(api, base),
  }
}
