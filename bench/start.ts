/**
 * First-start benchmark (docs/architecture.md §5 budget: a fresh clone's first `npm start`
 * serving in ≤ 60 s). Runs `erm3 start --no-serve` on an empty ERM3_HOME (synthesis of the
 * default market, its build, the sandbox) in a process of its own, BENCH_RUNS times, and prints
 * the wall time from spawn to exit (process start included), the CPU seconds of the process (all
 * threads) and each stage's "done in" line of the last run. BENCH_STOCKS sets the market
 * (ERM3_SYNTH_STOCKS; default the default market). Serving starts in about a second more.
 */
import { spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { availableParallelism, loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = fileURLToPath(new URL('..', import.meta.url))
const runs = Number(process.env.BENCH_RUNS ?? 1)
const stocks = process.env.BENCH_STOCKS
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
const src = (p: string) => JSON.stringify(join(root, p))
// The CLI's own start, with its progress lines on stderr; the usage of the whole process on stdout.
const START = `import { startLocal } from ${src('src/main/start.ts')}
import { createCliProgress } from ${src('src/cli/progress.ts')}
await startLocal(process.env, createCliProgress(process.stderr), (l) => process.stderr.write(l + '\\n'), { serve: false })
const u = process.resourceUsage()
console.log(JSON.stringify({ cpuS: (u.userCPUTime + u.systemCPUTime) / 1e6, rssMB: u.maxRSS / 1024 }))`

const results: { wall: number; cpuS: number; rssMB: number; stages: string[] }[] = []
for (let r = 0; r < runs; r++) {
  const home = mkdtempSync(join(tmpdir(), 'erm3-bench-start-'))
  const env = { ...process.env, ERM3_HOME: home, ...(stocks ? { ERM3_SYNTH_STOCKS: stocks } : {}) }
  const t0 = performance.now()
  const p = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', START], {
    cwd: root,
    env,
    encoding: 'utf8',
    maxBuffer: 1 << 26,
  })
  const wall = (performance.now() - t0) / 1000
  rmSync(home, { recursive: true, force: true })
  if (p.status !== 0) throw new Error(p.stderr)
  const usage = JSON.parse(p.stdout.trim().split('\n').pop() ?? '{}') as { cpuS: number; rssMB: number }
  const stages = p.stderr.split('\n').filter((l) => / done in |: built |^sandbox: built/.test(l))
  results.push({ wall, ...usage, stages })
}
const last = results[results.length - 1]
console.log(`stages of the last run:\n  ${last.stages.join('\n  ')}`)
console.log(
  `first start (${stocks ?? 'default'} stocks, ${runs} run(s)): wall ${median(results.map((x) => x.wall)).toFixed(1)} s ` +
    `(all: ${results.map((x) => x.wall.toFixed(1)).join(', ')}), CPU ${median(results.map((x) => x.cpuS)).toFixed(1)} s (all threads), ` +
    `peak RSS ${Math.max(...results.map((x) => x.rssMB)).toFixed(0)} MB; load average ${loadavg()[0].toFixed(1)} on ${availableParallelism()} cores`,
)
const wall = median(results.map((x) => x.wall))
// The budget is the default market's; a smaller one (BENCH_STOCKS) is for iterating.
if (!stocks) console.log(`budget: ≤ 60 s before serving → ${wall <= 60 ? 'within' : 'OVER'}`)
