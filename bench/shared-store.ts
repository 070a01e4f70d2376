/**
 * Reading the model store from shared storage: one synthetic build published to an
 * S3-compatible server (s3rver) and to a directory under a static HTTP server, both on loopback,
 * and read as erm3 reads it — a symbol's latest state (10 fields, one day), its last 252 days of
 * 10 fields, and one day's row of a field — cold (fresh caches every call) and warm (the remote
 * range cache filled), against the same reads of the local directory. Medians (p90) in ms.
 * Loopback hides network latency: on a real network add about one round trip per cold call
 * (the ranges of a call are fetched in parallel).
 * Run: BENCH_STOCKS=600 node --import tsx bench/shared-store.ts [calls]
 */
import { mkdtemp } from 'node:fs/promises'
import { join } from 'node:path'
import { FLOAT_FIELDS } from '../src/engine/model-store/layout.ts'
import { publishStore } from '../src/engine/model-store/publish.ts'
import { ModelStore } from '../src/engine/model-store/reader.ts'
import { type BuildSource, openBuildSource } from '../src/engine/model-store/source.ts'
import { LocalBlobs, S3Blobs } from '../src/engine/object-store/index.ts'
import { s3Server, staticServer } from '../test/helpers/store-servers.ts'
import { benchStore, inBenchRoot } from './lib/serve.ts'

const CALLS = Number(process.argv[2] ?? 100)
const STOCKS = Number(process.env.BENCH_STOCKS ?? 600)
const FIELDS = FLOAT_FIELDS.slice(0, 10)
const S3 = {
  region: 'us-east-1',
  forcePathStyle: true,
  credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' },
}

function stats(xs: number[]): string {
  const s = [...xs].sort((a, b) => a - b)
  const q = (p: number) => s[Math.min(s.length - 1, Math.floor(p * s.length))]
  return `${q(0.5).toFixed(2)} ms (p90 ${q(0.9).toFixed(2)})`
}

type Open = () => Promise<{ store: ModelStore; done(): void }>

async function measure(name: string, open: Open): Promise<void> {
  const cases: [string, (s: ModelStore, i: number) => Promise<unknown>][] = [
    ['latest state, 10 fields', (s, i) => s.history(i, FIELDS, s.calendar.length - 1)],
    ['252 days × 10 fields', (s, i) => s.history(i, FIELDS, s.calendar.length - 252)],
    [
      'one day, one field, every symbol',
      (s, i) => s.crossSection('price_close', s.calendar.length - 1 - (i % 200)),
    ],
  ]
  const warm = await open()
  for (const [what, call] of cases) {
    const cold: number[] = []
    const hot: number[] = []
    for (let c = 0; c < CALLS; c++) {
      const i = (c * 7919) % warm.store.symbols.length
      // Cold: a freshly opened store (no decoded pieces, no remote ranges cached).
      const fresh = await open()
      let t0 = performance.now()
      await call(fresh.store, i)
      cold.push(performance.now() - t0)
      await fresh.store.close()
      fresh.done()
      // Warm: the remote cache holds the ranges; the decoded-piece cache is dropped by close().
      await call(warm.store, i)
      await warm.store.close()
      t0 = performance.now()
      await call(warm.store, i)
      hot.push(performance.now() - t0)
    }
    console.log(`${name.padEnd(6)} ${what.padEnd(34)} cold ${stats(cold)}   warm ${stats(hot)}`)
  }
  warm.done()
}

await inBenchRoot('erm3-bench-shared-store-', async (root) => {
  const { store: local, seconds } = await benchStore(root, STOCKS)
  console.log(`store: ${STOCKS} stocks, built in ${seconds.toFixed(1)} s; ${CALLS} calls per case`)
  const s3 = await s3Server('erm3-bench')
  const pub = await mkdtemp(join(root, 'published-'))
  const t0 = performance.now()
  const r = await publishStore(local, new S3Blobs('erm3-bench', 'm', { ...S3, endpoint: s3.endpoint }))
  console.log(
    `publish to s3rver: ${r.files} files, ${(r.bytes / 1e6).toFixed(0)} MB in ${((performance.now() - t0) / 1000).toFixed(1)} s`,
  )
  await publishStore(local, new LocalBlobs(pub))
  const http = await staticServer(pub)
  const remote = (spec: string) => async () => {
    const src: BuildSource = openBuildSource(spec, {
      s3: { ...S3, endpoint: s3.endpoint },
      timeoutMs: 10_000,
      cacheBytes: 512 * 2 ** 20,
    })
    return { store: await src.open(), done: () => src.close() }
  }
  try {
    await measure('local', async () => ({ store: await ModelStore.open(local), done() {} }))
    await measure('http', remote(http.url))
    await measure('s3', remote('s3://erm3-bench/m'))
  } finally {
    await http.close()
    await s3.close()
  }
})
