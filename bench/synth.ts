/**
 * Synthetic-market benchmark (docs/architecture.md §5 budget: default dataset ≤ 30 s, peak ≤ 6 GB).
 * Each run is a separate process so its peak RSS is its own. The baseline, measured in the same
 * session, is writing the same number of bytes to the same disk with fs.writeFile and hashing
 * them: the floor that any generator producing this dataset must pay.
 */
import { spawnSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

const runs = Number(process.env.BENCH_RUNS ?? 3)
const stocks = Number(process.env.BENCH_STOCKS ?? 3000)
const root = fileURLToPath(new URL('..', import.meta.url))
const child = `
import { synthesizeDataset } from ${JSON.stringify(join(root, 'src/engine/data/synthesize.ts'))}
const r = await synthesizeDataset(process.argv[1], { stocks: ${stocks} })
const bytes = Object.values(r.manifest.files).reduce((a, f) => a + f.bytes, 0)
console.log(JSON.stringify({ seconds: r.seconds, maxRssMB: process.resourceUsage().maxRSS / 1024, bytes, digest: r.manifest.digest }))
`

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
const results: { seconds: number; maxRssMB: number; bytes: number; digest: string }[] = []
for (let i = 0; i < runs; i++) {
  const dir = mkdtempSync(join(tmpdir(), 'erm3-bench-synth-'))
  const r = spawnSync(
    process.execPath,
    ['--import', 'tsx', '--input-type=module', '-e', child, join(dir, 'ds')],
    {
      encoding: 'utf8',
      cwd: root,
    },
  )
  rmSync(dir, { recursive: true, force: true })
  if (r.status !== 0) throw new Error(r.stderr)
  results.push(JSON.parse(r.stdout.trim().split('\n').pop() ?? '{}'))
}
const bytes = results[0].bytes
const baseline: number[] = []
for (let i = 0; i < runs; i++) {
  const dir = mkdtempSync(join(tmpdir(), 'erm3-bench-io-'))
  const chunk = Buffer.alloc(64 << 20, 7)
  const t0 = performance.now()
  for (let w = 0, k = 0; w < bytes; w += chunk.length, k++) {
    const part = chunk.subarray(0, Math.min(chunk.length, bytes - w))
    writeFileSync(join(dir, `f${k}`), part)
    createHash('sha256').update(part).digest()
  }
  baseline.push((performance.now() - t0) / 1000)
  rmSync(dir, { recursive: true, force: true })
}
const gen = median(results.map((r) => r.seconds))
const io = median(baseline)
console.log(
  `synth (${stocks} stocks, ${runs} runs): median ${gen.toFixed(2)} s, peak RSS ${Math.max(...results.map((r) => r.maxRssMB)).toFixed(0)} MB, ${(bytes / 1e6).toFixed(0)} MB written`,
)
console.log(
  `baseline write+hash of the same bytes: median ${io.toFixed(2)} s → synth/baseline ratio ${(gen / io).toFixed(1)}×`,
)
console.log(`deterministic across runs: ${new Set(results.map((r) => r.digest)).size === 1}`)
console.log(
  `budget: ≤ 30 s and ≤ 6144 MB → ${gen <= 30 && Math.max(...results.map((r) => r.maxRssMB)) <= 6144 ? 'within' : 'OVER'}`,
)
