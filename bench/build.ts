/**
 * Engine and store benchmark (docs/performance.md §"Build speed and footprint": full build of the
 * default synthetic dataset ≤ 30 s, incremental one-day build ≤ 2 s, peak ≤ 1.5 GB, store ≤ 3 GB;
 * one ticker's 15-year history of 10 fields ≤ 5 ms and one day's cross-section of one field
 * ≤ 20 ms from a warm store). It prints the full build's stages (median seconds of each) and
 * compares its figures with bench/baselines/build.json (bench/lib/baseline.ts): a figure more than
 * 15 % worse is called out. BENCH_RECORD=1 records this run as the new baseline.
 * Each build runs in its own process so its peak RSS is its own. The baseline, side by side, is
 * reading the dataset and writing the store's number of bytes with plain fs.writeFile: the I/O
 * floor of any build. The style split's cost (budget: ≤ +15 % of the full build) is
 * measured in the same run: every full build is paired with one without the split
 * (`style: false`), run alternately so drift of a shared machine hits both alike.
 */
import { spawnSync } from 'node:child_process'
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { availableParallelism, loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { type BenchRecord, compareFigures, comparisonLines, machineLabel } from './lib/baseline.ts'

const root = fileURLToPath(new URL('..', import.meta.url))
const stocks = Number(process.env.BENCH_STOCKS ?? 3000)
const runs = Number(process.env.BENCH_RUNS ?? 2)
/** Incremental builds are short and noisy on a shared machine: take more of them. */
const incRuns = Number(process.env.BENCH_INC_RUNS ?? 5)
const work = mkdtempSync(join(tmpdir(), 'erm3-bench-build-'))
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]

function child(code: string, ...args: string[]): Record<string, number | string> {
  const r = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', code, ...args], {
    cwd: root,
    encoding: 'utf8',
    maxBuffer: 1 << 26,
  })
  if (r.status !== 0) throw new Error(r.stderr)
  return JSON.parse(r.stdout.trim().split('\n').pop() ?? '{}')
}

const src = (p: string) => JSON.stringify(join(root, p))
const SYNTH = `import { synthesizeDataset } from ${src('src/engine/data/synthesize.ts')}
import { readDataset } from ${src('src/engine/data/dataset-reader.ts')}
import { writeDataset } from ${src('src/engine/data/dataset-writer.ts')}
await synthesizeDataset(process.argv[1], { stocks: ${stocks}, fundamentals: false })
const { dataset: ds } = await readDataset(process.argv[1])
const T = ds.calendar.length - 1
const cut = (p) => p?.map((s) => s.slice(0, T)) ?? null
await writeDataset({ ...ds, calendar: ds.calendar.slice(0, T), prices: { adj_close: cut(ds.prices.adj_close), close: cut(ds.prices.close), volume: cut(ds.prices.volume), shares_out: cut(ds.prices.shares_out) }, series: ds.series ? { ...ds.series, values: ds.series.values.map((v) => v.slice(0, T)) } : null, truth: null }, process.argv[2])
console.log('{}')`
const BUILD = `import { buildStore } from ${src('src/engine/build/index.ts')}
const m = await buildStore({ dataset: process.argv[1], store: process.argv[2], incremental: process.argv[3] === 'inc', style: process.argv[3] !== 'nostyle' })
const u = process.resourceUsage()
console.log(JSON.stringify({ seconds: m.timings_s.total, rssMB: u.maxRSS / 1024, cpuS: (u.userCPUTime + u.systemCPUTime) / 1e6, note: m.notes.join(';'), ...Object.fromEntries(Object.entries(m.timings_s).map(([k, v]) => ['t_' + k, v])) }))`
const READS = `import { ModelStore } from ${src('src/engine/model-store/reader.ts')}
const s = await ModelStore.open(process.argv[1])
const T = s.calendar.length
const fields = ['returns_gross', 'price_close', 'l3_mkt_hr', 'l3_sec_hr', 'l3_sub_hr', 'l3_mkt_er', 'l3_sec_er', 'l3_sub_er', 'l3_res_er', 'lstar_level']
const stocks = s.symbols.flatMap((m, i) => (m.asset_type === 'stock' ? [i] : []))
const from = Math.max(0, T - 15 * 252)
let seed = 7
const rnd = (n) => { seed = (seed * 1103515245 + 12345) % 2147483648; return seed % n }
for (let k = 0; k < 20; k++) await s.history(stocks[rnd(stocks.length)], fields, from, T)
const hist = []
for (let k = 0; k < 200; k++) { const t0 = performance.now(); await s.history(stocks[rnd(stocks.length)], fields, from, T); hist.push(performance.now() - t0) }
const RESIDUALS = ['l1_rr', 'l2_rr', 'l3_rr', 'lstar_rr']
for (let k = 0; k < 20; k++) await s.history(stocks[rnd(stocks.length)], RESIDUALS, from, T)
const histRr = []
for (let k = 0; k < 200; k++) { const t0 = performance.now(); await s.history(stocks[rnd(stocks.length)], RESIDUALS, from, T); histRr.push(performance.now() - t0) }
const { STORE_FIELDS } = await import(${src('src/engine/model-store/reader.ts')})
const latest = []
for (let k = 0; k < 200; k++) { const t0 = performance.now(); await s.history(stocks[rnd(stocks.length)], STORE_FIELDS, T - 1, T); latest.push(performance.now() - t0) }
for (let k = 0; k < 20; k++) await s.crossSection('l3_res_er', rnd(T))
const row = []
for (let k = 0; k < 200; k++) { const t0 = performance.now(); await s.crossSection('l3_res_er', rnd(T)); row.push(performance.now() - t0) }
const med = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1]
const p90 = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length * 0.9)]
await s.close()
console.log(JSON.stringify({ historyMs: med(hist), historyP90: p90(hist), historyRrMs: med(histRr), latestMs: med(latest), rowMs: med(row), rowP90: p90(row) }))`

function duBytes(dir: string): number {
  let n = 0
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name)
    n += e.isDirectory() ? duBytes(p) : statSync(p).size
  }
  return n
}

const full = join(work, 'full')
const prefix = join(work, 'prefix')
console.log(`building the benchmark datasets (${stocks} stocks, default history) …`)
child(SYNTH, full, prefix)
const builds: Record<string, number | string>[] = []
const noStyle: Record<string, number | string>[] = []
/**
 * Every build starts from the same disk state: no store on disk and the previous build's writes
 * flushed (`sync`), so neither side of a pair pays for the other's deletions or writeback.
 */
function cleanSlate(): void {
  rmSync(join(work, 'store-nostyle'), { recursive: true, force: true })
  rmSync(join(work, 'store'), { recursive: true, force: true })
  spawnSync('sync')
}
for (let r = 0; r < runs; r++) {
  cleanSlate()
  noStyle.push(child(BUILD, full, join(work, 'store-nostyle'), 'nostyle'))
  cleanSlate()
  builds.push(child(BUILD, full, join(work, 'store')))
}
const storeBytes = duBytes(join(work, 'store'))
const reads = child(READS, join(work, 'store'))
rmSync(join(work, 'store-inc'), { recursive: true, force: true })
child(BUILD, prefix, join(work, 'store-inc'))
const incs: Record<string, number | string>[] = []
for (let r = 0; r < incRuns; r++) {
  // Each run appends the same day to the prefix build.
  rmSync(join(work, 'store-inc2'), { recursive: true, force: true })
  spawnSync('cp', ['-al', join(work, 'store-inc'), join(work, 'store-inc2')])
  incs.push(child(BUILD, full, join(work, 'store-inc2'), 'inc'))
}
// Baseline: plain write of the store's byte count.
const chunk = Buffer.alloc(64 << 20, 1)
const t0 = performance.now()
for (let w = 0, k = 0; w < storeBytes; w += chunk.length, k++)
  writeFileSync(join(work, `raw${k}`), chunk.subarray(0, Math.min(chunk.length, storeBytes - w)))
const rawSeconds = (performance.now() - t0) / 1000
const fullS = median(builds.map((b) => Number(b.seconds)))
const incS = median(incs.map((b) => Number(b.seconds)))
const peak = Math.max(...builds.map((b) => Number(b.rssMB)), ...incs.map((b) => Number(b.rssMB)))
console.log(`full build: median ${fullS.toFixed(1)} s over ${runs} runs (${JSON.stringify(builds[0])})`)
const noStyleS = median(noStyle.map((b) => Number(b.seconds)))
const engine = (bs: typeof builds) => median(bs.map((b) => Number(b.t_engine_and_fields)))
const styleRatio = fullS / noStyleS
console.log(
  `style split: full build ${fullS.toFixed(1)} s with it vs ${noStyleS.toFixed(1)} s without (medians of ${runs} alternating runs: ` +
    `with ${builds.map((b) => Number(b.seconds).toFixed(1)).join(', ')}; without ${noStyle.map((b) => Number(b.seconds).toFixed(1)).join(', ')}) → ` +
    `×${styleRatio.toFixed(3)}; engine stage ${engine(builds).toFixed(1)} s vs ${engine(noStyle).toFixed(1)} s`,
)
const stages = Object.keys(incs[0] ?? {}).filter((k) => k.startsWith('t_'))
const stageMedians = stages.map((k) => `${k.slice(2)} ${median(incs.map((b) => Number(b[k]))).toFixed(2)}`)
console.log(
  `incremental one-day build: median ${incS.toFixed(2)} s over ${incRuns} runs (all: ${incs.map((b) => Number(b.seconds).toFixed(2)).join(', ')}; stage medians: ${stageMedians.join(', ')}; load average ${loadavg()[0].toFixed(1)} on ${availableParallelism()} cores)`,
)
console.log(`peak RSS ${peak.toFixed(0)} MB; store on disk ${(storeBytes / 1e9).toFixed(2)} GB`)
console.log(
  `baseline: writing ${(storeBytes / 1e9).toFixed(2)} GB with fs.writeFile took ${rawSeconds.toFixed(1)} s → build/baseline ${(fullS / rawSeconds).toFixed(1)}×`,
)
console.log(
  `reads (warm): 15-year history of 10 fields median ${Number(reads.historyMs).toFixed(2)} ms (p90 ${Number(reads.historyP90).toFixed(2)}), one day's cross-section median ${Number(reads.rowMs).toFixed(2)} ms (p90 ${Number(reads.rowP90).toFixed(2)}); 15-year history of the four residual returns median ${Number(reads.historyRrMs).toFixed(2)} ms; every field of a symbol's last day (the cold path of /metrics) median ${Number(reads.latestMs).toFixed(2)} ms`,
)
const fullStages = Object.keys(builds[0] ?? {}).filter((k) => k.startsWith('t_') && k !== 't_total')
console.log(
  `full build stages (medians, s): ${fullStages.map((k) => `${k.slice(2)} ${median(builds.map((b) => Number(b[k]))).toFixed(2)}`).join(', ')}; CPU ${median(builds.map((b) => Number(b.cpuS))).toFixed(1)} s (all threads)`,
)
const history = Number(reads.historyMs)
const row = Number(reads.rowMs)
const storeGB = storeBytes / 1e9
console.log(
  `budgets: full ≤ 30 s ${fullS <= 30 ? 'ok' : 'OVER'}; style split ≤ +15 % ${styleRatio <= 1.15 ? 'ok' : 'OVER'}; incremental ≤ 2 s ${incS <= 2 ? 'ok' : 'OVER'}; peak ≤ 1536 MB ${peak <= 1536 ? 'ok' : 'OVER'}; store ≤ 3 GB ${storeGB <= 3 ? 'ok' : 'OVER'}; history ≤ 5 ms ${history <= 5 ? 'ok' : 'OVER'}; row ≤ 20 ms ${row <= 20 ? 'ok' : 'OVER'}`,
)
const figures: Record<string, number> = {
  full_build_s: fullS,
  incremental_build_s: incS,
  peak_rss_mb: peak,
  store_gb: storeGB,
  history_ms: history,
  history_residuals_ms: Number(reads.historyRrMs),
  latest_all_fields_ms: Number(reads.latestMs),
  row_ms: row,
}
for (const k of fullStages) figures[`stage_${k.slice(2)}_s`] = median(builds.map((b) => Number(b[k])))
guard(figures)
rmSync(work, { recursive: true, force: true })

/** Compares with the recorded baseline (or records this run with BENCH_RECORD=1). */
function guard(figures: Record<string, number>): void {
  const file = join(root, 'bench', 'baselines', 'build.json')
  if (process.env.BENCH_RECORD === '1') {
    const commit = spawnSync('git', ['rev-parse', '--short', 'HEAD'], {
      cwd: root,
      encoding: 'utf8',
    }).stdout.trim()
    const record: BenchRecord = {
      machine: machineLabel(),
      recorded_at: new Date().toISOString().slice(0, 10),
      commit,
      stocks,
      figures: Object.fromEntries(Object.entries(figures).map(([k, v]) => [k, Math.round(v * 1000) / 1000])),
    }
    writeFileSync(file, `${JSON.stringify(record, null, 2)}\n`)
    console.log(`recorded these figures as the baseline in ${file}`)
    return
  }
  if (!existsSync(file)) {
    console.log(`no recorded baseline (${file}); BENCH_RECORD=1 records one`)
    return
  }
  const recorded = JSON.parse(readFileSync(file, 'utf8')) as BenchRecord
  if (recorded.stocks !== stocks) {
    console.log(`the recorded baseline is of ${recorded.stocks} stocks, this run of ${stocks}: not compared`)
    return
  }
  for (const line of comparisonLines(compareFigures(figures, recorded.figures), recorded)) console.log(line)
}
