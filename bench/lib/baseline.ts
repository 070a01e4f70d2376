/**
 * The guard of `npm run bench build`: its figures against the ones recorded in
 * bench/baselines/build.json (lower is better for each). A figure more than `tolerance` above
 * its recorded value is called out as a regression; the recording's machine is printed beside it,
 * since figures of another machine say little. `BENCH_RECORD=1` rewrites the file.
 */
import { cpus } from 'node:os'

export interface BenchRecord {
  /** Where and when it was measured. */
  machine: string
  recorded_at: string
  commit: string
  /** The market's size (BENCH_STOCKS): figures of another size are not compared. */
  stocks: number
  /** How the figures were obtained, when not by a plain `BENCH_RECORD=1` run. */
  note?: string
  /** Figure name → value (seconds, MB, GB, ms): lower is better. */
  figures: Record<string, number>
}

/** Allowed growth over the recorded figure before it is called a regression (0.15 = 15 %). */
const REGRESSION_TOLERANCE = 0.15

export function machineLabel(): string {
  const c = cpus()
  return `${c.length} × ${c[0]?.model ?? 'unknown CPU'}`
}

export interface Comparison {
  name: string
  now: number
  recorded: number
  ratio: number
  regression: boolean
}

/** Every figure present in both, with now/then ratios; regression when the ratio exceeds 1 + tolerance. */
export function compareFigures(
  now: Record<string, number>,
  then: Record<string, number>,
  tolerance = REGRESSION_TOLERANCE,
): Comparison[] {
  const out: Comparison[] = []
  for (const [name, value] of Object.entries(now)) {
    const before = then[name]
    if (before === undefined || !Number.isFinite(before) || !Number.isFinite(value)) continue
    const ratio = before > 0 ? value / before : value > 0 ? Number.POSITIVE_INFINITY : 1
    out.push({ name, now: value, recorded: before, ratio, regression: ratio > 1 + tolerance })
  }
  return out
}

/** Lines for the bench output: one per figure, regressions marked and summed up at the end. */
export function comparisonLines(
  cmp: Comparison[],
  recorded: BenchRecord,
  tolerance = REGRESSION_TOLERANCE,
): string[] {
  const lines = [
    `against the recorded baseline (${recorded.commit}, ${recorded.recorded_at}, ${recorded.machine}; this machine ${machineLabel()}):`,
  ]
  if (recorded.note) lines.push(`  (${recorded.note})`)
  for (const c of cmp)
    lines.push(
      `  ${c.name}: ${fmt(c.now)} vs ${fmt(c.recorded)} → ×${c.ratio.toFixed(2)}${c.regression ? `  REGRESSION (> +${Math.round(tolerance * 100)} %)` : ''}`,
    )
  const bad = cmp.filter((c) => c.regression)
  lines.push(
    bad.length > 0
      ? `REGRESSIONS over ${Math.round(tolerance * 100)} %: ${bad.map((c) => c.name).join(', ')} (re-run on a quiet machine before believing it)`
      : `no regression over ${Math.round(tolerance * 100)} %`,
  )
  return lines
}

const fmt = (v: number) =>
  Math.abs(v) >= 100 ? v.toFixed(0) : Math.abs(v) >= 10 ? v.toFixed(1) : v.toFixed(2)
