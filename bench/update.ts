/**
 * Real-data pipeline benchmark (docs/data-sources.md §"Daily update"; budgets: the daily update
 * of 3,000 stocks — fetch, gate, append, assemble, incremental build, publish — ≤ 60 s on 2
 * cores, its build ≤ 5 s; a backfill is bound by the vendor's quota, so erm3's own CPU time per
 * 1,000 security-years is reported, not budgeted).
 *
 * The market is the synthetic generator's (BENCH_STOCKS stocks, default history, no
 * fundamentals) in vendor form (bench/lib/update-market.ts). Every vendor is a loopback fake from
 * test/fakes in a child process of its own, so its CPU is not erm3's; every measured run is a
 * child process of its own too, as `erm3 data fetch` and `erm3 update` are.
 *
 * - Backfill: BENCH_BACKFILL_STOCKS stocks and the registry ETFs, whole history, from the Tiingo
 *   fake (one history call each, rate ceiling off) through `fetchData` into an empty data
 *   directory, BENCH_FETCH_RUNS times: CPU seconds (user + system) and wall time, per 1,000
 *   security-years (a year = 252 bars), split into the fetch tasks and the final assemble.
 * - Daily update: a data directory of every security through the second-to-last session (bars
 *   written directly, see update-market.ts), assembled, fully built and published to a local
 *   target (timed and reported, not budgeted); then the last session from the Polygon fake's
 *   grouped daily through `runUpdate` with that target, BENCH_UPDATE_RUNS times, each from a
 *   hard-linked copy of the prepared state (every other writer of the pipeline renames into
 *   place, so the prepared files are never changed) whose bar files, appended to in place, are
 *   real copies. Stage timings are `UpdateOutcome.timings_s`.
 *
 * Run as `node --import tsx bench/update.ts` (BENCH_ONLY=backfill or daily for one part); with a role as first argument it is one of the
 * children (synth, fake-tiingo, fetch, prepare, fake-polygon, update).
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { availableParallelism, loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import { ROLES } from './lib/update-roles.ts'

const self = fileURLToPath(import.meta.url)
const root = fileURLToPath(new URL('..', import.meta.url))
const env = (k: string, d: number) => Number(process.env[k] ?? d)
const stocks = env('BENCH_STOCKS', 3000)
const backfillStocks = env('BENCH_BACKFILL_STOCKS', 200)
const fetchRuns = env('BENCH_FETCH_RUNS', 3)
const updateRuns = env('BENCH_UPDATE_RUNS', 3)
/** `backfill` or `daily`: run only that part. */
const only = process.env.BENCH_ONLY
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
type Json = Record<string, unknown>

/** A child run to its end: its last stdout line, as JSON. */
function child(role: string, ...args: string[]): Json {
  const r = spawnSync(process.execPath, ['--import', 'tsx', self, role, ...args], {
    cwd: root,
    encoding: 'utf8',
    maxBuffer: 1 << 26,
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  if (r.status !== 0) throw new Error(`${role} failed:\n${r.stderr}`)
  return JSON.parse(r.stdout.trim().split('\n').pop() ?? '{}')
}

/** A fake vendor in a child process: its first stdout line; it exits when its stdin closes. */
async function server(role: string, ...args: string[]): Promise<{ info: Json; proc: ChildProcess }> {
  const proc = spawn(process.execPath, ['--import', 'tsx', self, role, ...args], {
    cwd: root,
    stdio: ['pipe', 'pipe', 'inherit'],
  })
  const lines = createInterface({ input: proc.stdout as NodeJS.ReadableStream })
  const first = await new Promise<string>((resolve, reject) => {
    lines.once('line', resolve)
    proc.once('exit', (code) => reject(new Error(`${role} exited with ${code}`)))
  })
  return { info: JSON.parse(first) as Json, proc }
}

function stop(proc: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    proc.once('exit', () => resolve())
    proc.stdin?.end()
  })
}

const fmt = (xs: number[], digits = 1) => xs.map((x) => x.toFixed(digits)).join(', ')
const load = () => `load average ${loadavg()[0].toFixed(1)} on ${availableParallelism()} cores`

async function backfill(work: string, synth: string): Promise<void> {
  const fake = await server('fake-tiingo', synth, String(backfillStocks), join(work, 'classes.json'))
  const { url, tickersUrl, from, to, bars, stocks: n, etfs } = fake.info as Record<string, string>
  const missing = (fake.info.missing as string[]).join(',')
  const years = Number(bars) / 252
  const runs: Json[] = []
  for (let r = 0; r < fetchRuns; r++) {
    const dir = join(work, `fetch-${r}`)
    runs.push(child('fetch', dir, url, tickersUrl, from, to, join(work, 'classes.json'), missing))
    rmSync(dir, { recursive: true, force: true })
  }
  await stop(fake.proc)
  const per = (k: string) => runs.map((x) => (Number(x[k]) / years) * 1000)
  console.log(
    `backfill: ${n} stocks + ${etfs} ETFs, ${from} → ${to}, ${bars} bars = ${years.toFixed(0)} security-years, ${fetchRuns} runs (${load()})`,
  )
  console.log(
    `  erm3 CPU per 1,000 security-years: median ${median(per('cpu')).toFixed(2)} s (runs ${fmt(per('cpu'), 2)}); ` +
      `fetch tasks ${median(per('cpuFetch')).toFixed(2)} s, assemble ${median(per('cpuAssemble')).toFixed(2)} s`,
  )
  console.log(
    `  wall per 1,000 security-years: median ${median(per('wall')).toFixed(2)} s; whole run median ${median(runs.map((x) => Number(x.wall))).toFixed(1)} s (rate ceiling off, concurrency 4)`,
  )
}

async function daily(work: string, synth: string): Promise<void> {
  const prepared = join(work, 'prepared')
  const prep = child('prepare', synth, prepared)
  console.log(
    `daily update: prepared ${prep.securities} securities, ${prep.bars} bars through ${prep.through}: ` +
      `data directory ${Number(prep.write).toFixed(1)} s, assemble ${Number(prep.assemble).toFixed(1)} s, ` +
      `full build ${Number(prep.build).toFixed(1)} s, first publish ${Number(prep.publish).toFixed(1)} s (not budgeted)`,
  )
  const fake = await server('fake-polygon', synth)
  const runs: Json[] = []
  for (let r = 0; r < updateRuns; r++) {
    const run = join(work, 'run')
    rmSync(run, { recursive: true, force: true })
    spawnSync('cp', ['-al', prepared, run])
    // An update appends to bar files in place: those must be copies, not links to the prepared ones.
    rmSync(join(run, 'data', 'bars'), { recursive: true })
    spawnSync('cp', ['-a', join(prepared, 'data', 'bars'), join(run, 'data', 'bars')])
    spawnSync('sync')
    const o = child('update', run, String(fake.info.url), String(fake.info.day))
    if (o.outcome !== 'updated' || o.build_kind !== 'incremental')
      throw new Error(`update run ${r}: ${JSON.stringify(o)}`)
    runs.push(o)
  }
  await stop(fake.proc)
  const total = runs.map((o) => Number(o.wall))
  const stage = (k: string) => runs.map((o) => Number((o.timings_s as Json)[k] ?? 0))
  const stages = Object.keys(runs[0]?.timings_s ?? {})
  console.log(
    `  runUpdate of ${fake.info.day} (${fake.info.bars} bars): median ${median(total).toFixed(1)} s over ${updateRuns} runs (${fmt(total)}; ${load()}); ` +
      `CPU ${median(runs.map((o) => Number(o.cpu))).toFixed(1)} s, peak RSS ${median(runs.map((o) => Number(o.rss_mb))).toFixed(0)} MB`,
  )
  console.log(`  dataset: ${runs[0]?.assemble_note ?? 'appended to (last row groups encoded)'}`)
  console.log(`  stage medians: ${stages.map((k) => `${k} ${median(stage(k)).toFixed(2)}`).join(', ')} s`)
  console.log(`  findings: ${JSON.stringify(runs[0]?.summary)}`)
  const build = median(stage('build'))
  console.log(
    `budgets: daily update ≤ 60 s ${median(total) <= 60 ? 'ok' : 'OVER'}; its build ≤ 5 s ${build <= 5 ? 'ok' : 'OVER'}`,
  )
}

async function main(): Promise<void> {
  const work = mkdtempSync(join(tmpdir(), 'erm3-bench-update-'))
  try {
    const synth = join(work, 'synth')
    const s = child('synth', synth, String(stocks))
    console.log(
      `market: ${stocks} stocks, ${s.securities} securities, ${s.sessions} sessions (synthesis ${Number(s.seconds).toFixed(1)} s)`,
    )
    if (only !== 'daily') await backfill(work, synth)
    if (only !== 'backfill') await daily(work, synth)
  } finally {
    rmSync(work, { recursive: true, force: true })
  }
}

const role = process.argv[2]
if (role === undefined) await main()
else {
  const run = ROLES[role]
  if (!run) throw new Error(`unknown role ${role}: one of ${Object.keys(ROLES).join(', ')}`)
  await run(process.argv.slice(3))
}
