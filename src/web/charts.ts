import uPlot from 'uplot'
import 'uplot/dist/uPlot.min.css'
import { fixed } from './format.ts'

/**
 * uPlot wrappers for dense daily series (chosen over lightweight-charts: smaller and faster to
 * render; docs/performance.md, "Design experiments").
 * Every chart records what it drew (`data-points`, `data-render-ms`) for the browser tests.
 */

const PALETTE = ['#1f4e9c', '#c05621', '#2f855a', '#6b46c1', '#b83280', '#2c7a7b', '#975a16']

export interface Series {
  label: string
  values: (number | null)[]
}

const seconds = (iso: string) => Date.parse(`${iso}T00:00:00Z`) / 1000

function width(el: HTMLElement): number {
  return Math.max(280, Math.min(960, el.clientWidth || 720))
}

function mount(el: HTMLElement, title: string, opts: uPlot.Options, data: uPlot.AlignedData, points: number) {
  el.replaceChildren()
  el.setAttribute('role', 'img')
  el.setAttribute('aria-label', title)
  const t0 = performance.now()
  const chart = new uPlot(opts, data, el)
  el.dataset.points = String(points)
  el.dataset.renderMs = (performance.now() - t0).toFixed(1)
  return chart
}

/** Lines over dates (e.g. cumulative returns, hedge ratios). */
export function lineChart(el: HTMLElement, title: string, dates: string[], series: Series[], yLabel = '') {
  const opts: uPlot.Options = {
    title,
    width: width(el),
    height: 280,
    scales: { x: { time: true } },
    axes: [{}, { label: yLabel }],
    series: [
      {},
      ...series.map((s, i) => ({ label: s.label, stroke: PALETTE[i % PALETTE.length], width: 1.5 })),
    ],
  }
  const data = [dates.map(seconds), ...series.map((s) => s.values)] as uPlot.AlignedData
  return mount(el, title, opts, data, dates.length * series.length)
}

/** Stacked areas summing to 1 (explained-risk fractions over time); bands fill between layers. */
export function stackedChart(el: HTMLElement, title: string, dates: string[], series: Series[]) {
  const stacked: (number | null)[][] = []
  let acc = dates.map(() => 0 as number | null)
  for (const s of series) {
    acc = acc.map((a, t) => (a === null || s.values[t] === null ? null : a + s.values[t]))
    stacked.push(acc)
  }
  const opts: uPlot.Options = {
    title,
    width: width(el),
    height: 280,
    scales: { x: { time: true }, y: { range: [0, 1] } },
    series: [
      {},
      ...series.map((s, i) => ({
        label: s.label,
        stroke: PALETTE[i % PALETTE.length],
        fill: `${PALETTE[i % PALETTE.length]}55`,
      })),
    ],
    bands: series.slice(1).map((_, i) => ({ series: [i + 2, i + 1] as [number, number] })),
  }
  const data = [dates.map(seconds), ...stacked] as uPlot.AlignedData
  return mount(el, title, opts, data, dates.length * series.length)
}

/** Horizontal bars in plain HTML (a few values: readable by screen readers as a list). */
export function bars(
  el: HTMLElement,
  title: string,
  items: { label: string; value: number | null }[],
  heading: 'h2' | 'h3' = 'h3',
  format = pct,
) {
  el.replaceChildren()
  const h = document.createElement(heading)
  h.textContent = title
  const list = document.createElement('ul')
  list.className = 'bars'
  const max = Math.max(1e-12, ...items.map((i) => Math.abs(i.value ?? 0)))
  for (const [k, item] of items.entries()) {
    const li = document.createElement('li')
    const label = document.createElement('span')
    label.textContent = item.label
    const bar = document.createElement('span')
    bar.className = 'bar'
    bar.style.width = `${(100 * Math.abs(item.value ?? 0)) / max}%`
    bar.style.background = PALETTE[k % PALETTE.length] as string
    const value = document.createElement('span')
    value.textContent = item.value === null ? 'n/a' : format(item.value)
    li.append(label, bar, value)
    list.append(li)
  }
  el.append(h, list)
  el.dataset.points = String(items.filter((i) => i.value !== null).length)
}

export function pct(x: number): string {
  return `${fixed(100 * x, 2)}%`
}
