import type { ResponseOf } from '../../contract/client.ts'
import { call } from '../api.ts'
import { lineChart, pct } from '../charts.ts'
import { el, table } from '../dom.ts'

/** Requests and spend per day and capability (charts), cache-hit share, top endpoints. */

type Usage = ResponseOf<'getAccountUsage'>
type UsageRow = Usage['days'][number]

export async function usagePage(root: HTMLElement): Promise<void> {
  const r = await call<Usage>('/account/usage')
  const u = r.data
  const dates: string[] = []
  for (let d = Date.parse(`${u.from}T00:00:00Z`); d <= Date.parse(`${u.to}T00:00:00Z`); d += 86_400_000)
    dates.push(new Date(d).toISOString().slice(0, 10))
  const byCap = new Map<string, { requests: number; hits: number; cost: number }>()
  const perDay = (pick: (x: UsageRow) => number) =>
    dates.map((d) => u.days.filter((x) => x.date === d).reduce((a, x) => a + pick(x), 0))
  for (const x of u.days) {
    const c = byCap.get(x.capability) ?? { requests: 0, hits: 0, cost: 0 }
    c.requests += x.requests
    c.hits += x.cache_hits
    c.cost += x.cost_usd
    byCap.set(x.capability, c)
  }
  const requests = el('div', { class: 'chart', id: 'chart-requests' })
  const spend = el('div', { class: 'chart', id: 'chart-spend' })
  root.append(
    el('p', {
      class: 'meta',
      id: 'usage-totals',
      text: `${u.from} to ${u.to}: ${u.totals.requests} calls, ${u.totals.cache_hits} from cache (${u.totals.requests ? pct(u.totals.cache_hits / u.totals.requests) : '0%'}, free), ${u.totals.cost_usd.toFixed(4)} USD`,
    }),
    requests,
    spend,
    table(
      ['Capability', 'Calls', 'Cache hits', 'Spend (USD)'],
      [...byCap.entries()]
        .sort((a, b) => b[1].requests - a[1].requests)
        .map(([cap, c]) => [cap, c.requests, c.hits, c.cost.toFixed(4)]),
      'Top endpoints',
    ),
  )
  lineChart(requests, 'Calls per day', dates, [
    { label: 'Calls', values: perDay((x) => x.requests) },
    { label: 'From cache', values: perDay((x) => x.cache_hits) },
  ])
  lineChart(spend, 'Spend per day (USD)', dates, [{ label: 'Spend', values: perDay((x) => x.cost_usd) }])
}
