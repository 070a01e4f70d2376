/**
 * GET /fundamentals/{ticker} served (budget: ≤ 3 ms server time, median, for
 * `periods=8&grid=true`), every call no-cache: authenticated, limited, computed, encoded and
 * durably debited. The baseline is GET /metrics/{ticker} of one warm ticker on the same server.
 *
 * The store needs fundamentals, so this synthesises its own (benchStore does not):
 * BENCH_STOCKS synthetic stocks (default 3000, the other served benches' size) with
 * companyfacts-like filings for every company: synthesis and build take minutes and several GB
 * of disk (docs/performance.md).
 * BENCH_STORE skips that: a built store with fundamentals.
 */
import { join } from 'node:path'
import { inBenchRoot, withServer } from './lib/serve.ts'
import { measureCases, printServerTimes, serverTime } from './lib/server-time.ts'

const SAMPLES = Math.max(5, Number(process.argv[2] ?? 100))
const STOCKS = Number(process.env.BENCH_STOCKS ?? 3000)
const ROTATION = 200

/** BENCH_STORE, else a synthetic dataset with fundamentals built under `root`; the seconds it took. */
async function fundamentalsStore(root: string): Promise<{ store: string; seconds: number }> {
  const t0 = performance.now()
  const given = process.env.BENCH_STORE
  if (given) return { store: given, seconds: 0 }
  const { synthesizeDataset } = await import('../src/engine/data/synthesize.ts')
  const { buildStore } = await import('../src/engine/build/index.ts')
  const dataset = join(root, 'dataset')
  const store = join(root, 'store')
  await synthesizeDataset(dataset, { stocks: STOCKS, fundamentals: true })
  await buildStore({ dataset, store })
  return { store, seconds: (performance.now() - t0) / 1000 }
}

/** Listed stocks whose CIK has a fundamentals digest in the store, up to `n`. */
async function stocksWithFilings(store: string, n: number): Promise<string[]> {
  const { ModelStore } = await import('../src/engine/model-store/reader.ts')
  const { STORE_FILES } = await import('../src/engine/model-store/layout.ts')
  const s = await ModelStore.open(store)
  try {
    const out: string[] = []
    for (const m of s.symbols) {
      if (out.length >= n) break
      const ticker = m.tickers.find((w) => !w.to)?.ticker
      if (m.asset_type !== 'stock' || ticker === undefined || m.cik === null) continue
      if ((await s.document(STORE_FILES.fundamentals(m.cik))) !== null) out.push(ticker)
    }
    return out
  } finally {
    await s.close()
  }
}

async function main(): Promise<void> {
  await inBenchRoot('erm3-bench-fundamentals-', async (root) => {
    const { store, seconds: built } = await fundamentalsStore(root)
    const tickers = await stocksWithFilings(store, ROTATION)
    if (tickers.length < ROTATION) throw new Error(`only ${tickers.length} stocks with filings`)
    await withServer({ store, keys: 8 }, async ({ base, keys }) => {
      let k = 0
      const key = () => keys[k++ % keys.length] as string
      let n = 0
      const next = () => tickers[n++ % ROTATION] as string
      const get = (query: string) => () => serverTime(base, key(), `/fundamentals/${next()}?${query}`)
      const cases: [string, () => Promise<number>, number | null][] = [
        [
          'GET /metrics/{ticker} (baseline: one warm ticker)',
          () => serverTime(base, key(), `/metrics/${tickers[0]}`),
          null,
        ],
        ['GET /fundamentals periods=8', get('periods=8'), null],
        ['GET /fundamentals periods=8&grid=true', get('periods=8&grid=true'), 3],
        ['GET /fundamentals periods=40&grid=true', get('periods=40&grid=true'), null],
      ]
      // Every rotated ticker's digest read once; then 100 warm-up rounds (the rows' fact cells
      // and their encoding take a few hundred calls to optimise).
      for (let i = 0; i < ROTATION; i++) await get('periods=8&grid=true')()
      const rows = await measureCases(cases, SAMPLES, 100)
      console.log(
        `store: ${process.env.BENCH_STORE ? `BENCH_STORE ${store}` : `${STOCKS} synthetic stocks with fundamentals, 2006-01-03 → 2026-10-30 (synthesised and built in ${built.toFixed(0)} s)`}; ` +
          `${ROTATION} tickers with filings rotated; ${SAMPLES} calls per row, every call no-cache and debited`,
      )
      printServerTimes(rows)
    })
  })
}

await main()
