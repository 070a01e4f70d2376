/** `npm run bench`: every benchmark in turn, each printing medians and ratios against its baseline. */
import { spawnSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'

const benches = (
  process.argv[2]
    ? [process.argv[2]]
    : [
        'synth',
        'build',
        'start',
        'parquet',
        'zarr',
        'cross',
        'limits',
        'ledger',
        'account-store',
        'webhooks',
        'http',
        'data-api',
        'cross-api',
        'rankings-service',
        'correlation',
        'correlation-api',
        'fundamentals-api',
        'snapshot-api',
        'update',
      ]
).map((b) => fileURLToPath(new URL(`./${b}.ts`, import.meta.url)))
let failed = 0
for (const file of benches) {
  console.log(`\n== ${file.split('/').pop()} ==`)
  const r = spawnSync(process.execPath, ['--import', 'tsx', file], { stdio: 'inherit' })
  if (r.status !== 0) failed++
}
process.exit(failed ? 1 : 0)
