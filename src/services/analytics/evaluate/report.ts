import type { EvaluationResult } from './summary.ts'

/** The evaluation as plain text (the CLI's summary): one table of bias and MRAD, one of hedges. */

const f2 = (x: number | null | undefined) =>
  x === null || x === undefined || Number.isNaN(x) ? '—' : x.toFixed(2)
const f3 = (x: number | null | undefined) =>
  x === null || x === undefined || Number.isNaN(x) ? '—' : x.toFixed(3)

export const sizeLabel = (s: string) => (s === '1' ? 'single stocks' : `books of ${s}`)

/** Rows of estimator × size: bias, MRAD, MRAD against the first estimator's, the stress years. */
export function biasRows(r: EvaluationResult): string[][] {
  const base = r.estimators[0]?.name
  const rows: string[][] = []
  for (const e of r.estimators)
    for (const [size, b] of Object.entries(r.bias[e.name] ?? {})) {
      const ref = base ? r.bias[base]?.[size]?.mrad : undefined
      const rel =
        ref && b.mrad !== null && !Number.isNaN(b.mrad)
          ? `${((100 * (b.mrad - ref)) / ref).toFixed(0)} %`
          : '—'
      rows.push([
        e.name,
        sizeLabel(size),
        f3(b.bias),
        f3(b.mrad),
        rel,
        f2(b.stress['2008']),
        f2(b.stress['2020']),
        String(b.n),
      ])
    }
  return rows
}

export const BIAS_HEADER = ['estimator', 'portfolios', 'bias', 'MRAD', 'MRAD vs first', '2008', '2020', 'n']

export function hedgeRows(r: EvaluationResult): string[][] {
  const h = r.hedge
  const row = (label: string, x: EvaluationResult['hedge']['single']) => [
    label,
    f3(x.l1),
    f3(x.l2),
    f3(x.l3),
    f3(x.lstar),
    String(x.n),
  ]
  return [row('single stocks', h.single), row(`books of ${h.book.size}`, h.book)]
}

export const HEDGE_HEADER = ['hedged', 'L1', 'L2', 'L3', 'Lstar', 'n']

function table(header: string[], rows: string[][]): string {
  const widths = header.map((h, j) => Math.max(h.length, ...rows.map((r) => (r[j] ?? '').length)))
  const line = (cells: string[]) => cells.map((c, j) => c.padEnd(widths[j] ?? 0)).join('  ')
  return [line(header), line(widths.map((w) => '-'.repeat(w))), ...rows.map(line)].join('\n')
}

export function evaluationReport(r: EvaluationResult): string {
  return [
    `evaluation of build ${r.build ?? '(directory)'} (${r.dataset.kind}), ${r.dates.count} dates ${r.dates.first} … ${r.dates.last}, horizon ${r.options.horizon} days, ${r.seconds.toFixed(1)} s`,
    '',
    table(BIAS_HEADER, biasRows(r)),
    '',
    'hedged variance ÷ unhedged variance of the next-horizon return (lower is better):',
    table(HEDGE_HEADER, hedgeRows(r)),
    '',
    `recommended estimator: ${r.recommended ?? '—'}`,
  ].join('\n')
}
