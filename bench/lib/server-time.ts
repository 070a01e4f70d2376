/** Shared by the endpoint benches: one call's `Server-Timing: app;dur=`, and the table of medians. */
import { median, quantile } from './serve.ts'

/**
 * One authenticated call (GET, or POST with a JSON body), `Cache-Control: no-cache` unless
 * `cache`; the server time it reports. Anything but a 200 throws.
 */
export async function serverTime(
  base: string,
  key: string,
  path: string,
  body?: unknown,
  cache = false,
): Promise<number> {
  const res = await fetch(base + path, {
    method: body === undefined ? 'GET' : 'POST',
    headers: {
      authorization: `Bearer ${key}`,
      ...(cache ? {} : { 'cache-control': 'no-cache' }),
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  })
  const text = await res.text()
  if (res.status !== 200) throw new Error(`${path}: HTTP ${res.status} ${text.slice(0, 300)}`)
  const dur = /app;dur=([\d.]+)/.exec(res.headers.get('server-timing') ?? '')
  if (!dur) throw new Error(`${path}: no Server-Timing`)
  return Number(dur[1])
}

export interface TimedRow {
  name: string
  /** Server times (ms), one per call. */
  server: number[]
  /** Budget on the median (ms), or null for a row that is only reported. */
  budget: number | null
}

/** p50, p90 and the budget verdict per row. */
export function printServerTimes(rows: readonly TimedRow[]): void {
  console.log(`${'request'.padEnd(50)} ${'server p50'.padStart(10)} ${'p90'.padStart(7)}  budget`)
  for (const r of rows) {
    const p50 = median(r.server)
    const verdict = r.budget === null ? '—' : `≤ ${r.budget} ms ${p50 <= r.budget ? 'met' : 'MISSED'}`
    console.log(
      `${r.name.padEnd(50)} ${p50.toFixed(2).padStart(10)} ${quantile(r.server, 0.9).toFixed(2).padStart(7)}  ${verdict}`,
    )
  }
}

/**
 * `warmups` rounds of every case (JIT warm-up), then `samples` timed calls per case in turn:
 * the rows printServerTimes prints.
 */
export async function measureCases(
  cases: readonly (readonly [string, () => Promise<number>, number | null])[],
  samples: number,
  warmups: number,
): Promise<TimedRow[]> {
  for (let i = 0; i < warmups; i++) for (const [, run] of cases) await run()
  const rows: TimedRow[] = []
  for (const [name, run, budget] of cases) {
    const server: number[] = []
    for (let i = 0; i < samples; i++) server.push(await run())
    rows.push({ name, server, budget })
  }
  return rows
}
