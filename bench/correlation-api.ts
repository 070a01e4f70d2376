import { benchStore, inBenchRoot, withServer } from './lib/serve.ts'
import { measureCases, printServerTimes, serverTime } from './lib/server-time.ts'

const SAMPLES = Math.max(5, Number(process.argv[2] ?? 40))
const STOCKS = Number(process.env.BENCH_STOCKS ?? 3000)
const ROTATION = 200
const BATCH = 50

/** Listed stocks that have a sector ETF at their last priced day, up to `n`. */
async function stocksWithSector(store: string, n: number): Promise<string[]> {
  const { ModelStore } = await import('../src/engine/model-store/reader.ts')
  const s = await ModelStore.open(store)
  try {
    const out: string[] = []
    for (const [i, m] of s.symbols.entries()) {
      if (out.length >= n) break
      const ticker = m.tickers.find((w) => !w.to)?.ticker
      if (m.asset_type !== 'stock' || ticker === undefined) continue
      const { values } = await s.latest(i, ['sector_etf'])
      if ((values.sector_etf ?? -1) >= 0) out.push(ticker)
    }
    return out
  } finally {
    await s.close()
  }
}

async function main(): Promise<void> {
  await inBenchRoot('erm3-bench-correlation-', async (root) => {
    const { store, seconds: built } = await benchStore(root, STOCKS)
    const tickers = await stocksWithSector(store, ROTATION)
    if (tickers.length < ROTATION) throw new Error(`only ${tickers.length} stocks with a sector ETF`)
    await withServer({ store, keys: 8 }, async ({ base, keys }) => {
      let k = 0
      const key = () => keys[k++ % keys.length] as string
      let n = 0
      const next = () => tickers[n++ % ROTATION] as string
      const batch = () => {
        n += BATCH
        return [...tickers.slice(n % ROTATION), ...tickers].slice(0, BATCH)
      }
      const get = (method: string) => () =>
        serverTime(base, key(), `/metrics/${next()}/correlation?window_days=252&method=${method}`)
      const post = (method: string) => () =>
        serverTime(base, key(), '/correlation', { ticker: next(), window_days: 252, method })
      const postBatch = (method: string) => () =>
        serverTime(base, key(), '/correlation', { tickers: batch(), window_days: 252, method })
      const cases: [string, () => Promise<number>, number | null][] = [
        [
          'GET /metrics/{ticker} (baseline: one warm ticker)',
          () => serverTime(base, key(), `/metrics/${tickers[0]}`),
          null,
        ],
        ['GET /metrics/{ticker}/correlation pearson', get('pearson'), 3],
        ['GET /metrics/{ticker}/correlation spearman', get('spearman'), 3],
        ['POST /correlation one ticker, pearson', post('pearson'), 3],
        ['POST /correlation one ticker, spearman', post('spearman'), 3],
        [`POST /correlation ${BATCH} tickers, pearson`, postBatch('pearson'), 40],
        [`POST /correlation ${BATCH} tickers, spearman`, postBatch('spearman'), 40],
      ]
      // Every rotated ticker's series read once; measureCases then warms the JIT up (10 rounds).
      for (let i = 0; i < ROTATION; i++) await get('pearson')()
      const rows = await measureCases(cases, SAMPLES, 10)
      console.log(
        `store: ${STOCKS} synthetic stocks, 2006-01-03 → 2026-10-30 (synthesised and built in ${built.toFixed(0)} s); ` +
          `18 factors × 252 paired days; ${SAMPLES} calls per row, every call no-cache and debited`,
      )
      printServerTimes(rows)
    })
  })
}

await main()
