import { benchStore, inBenchRoot, withServer } from './lib/serve.ts'
import { printServerTimes, serverTime, type TimedRow } from './lib/server-time.ts'

const SAMPLES = Math.max(5, Number(process.argv[2] ?? 40))
const STOCKS = Number(process.env.BENCH_STOCKS ?? 3000)

async function main(): Promise<void> {
  await inBenchRoot('erm3-bench-cross-', async (root) => {
    const { store, seconds: built } = await benchStore(root, STOCKS)
    const { ModelStore } = await import('../src/engine/model-store/reader.ts')
    const s = await ModelStore.open(store)
    const T = s.calendar.length
    const tickers = s.symbols
      .filter((m) => m.asset_type === 'stock')
      .flatMap((m) => m.tickers.filter((w) => !w.to).map((w) => w.ticker))
    const yearBack = Array.from({ length: SAMPLES }, (_, k) => s.date(T - 253 - k))
    await s.close()
    await withServer({ store, keys: 8 }, async ({ base, keys }) => {
      let k = 0
      const key = () => keys[k++ % keys.length] as string
      const basket = { tickers: tickers.slice(0, 500) }
      const screen = (teo?: string) => ({
        metric: 'gross_return',
        cohort: 'sector',
        window: '63d',
        limit: 100,
        teo,
      })
      const cases: [string, () => Promise<number>, number | null][] = [
        [
          'GET /metrics/{ticker} (baseline: one warm ticker)',
          () => serverTime(base, key(), `/metrics/${tickers[0]}`),
          null,
        ],
        ['GET /industry-panel (sector)', () => serverTime(base, key(), '/industry-panel?level=sector'), 3],
        ['GET /industry-panel (all levels)', () => serverTime(base, key(), '/industry-panel'), null],
        [
          'GET /universe/uni_mc_3000/members',
          () => serverTime(base, key(), '/universe/uni_mc_3000/members'),
          5,
        ],
        ['GET /etf/factor-returns (12 ETFs)', () => serverTime(base, key(), '/etf/factor-returns'), null],
        [
          'POST /signals/residual-reversion/basket (500)',
          () => serverTime(base, key(), '/signals/residual-reversion/basket', basket),
          10,
        ],
        [
          'POST /rankings/screen at data_as_of',
          () => serverTime(base, key(), '/rankings/screen', screen()),
          5,
        ],
        ['GET /rankings/{ticker}', () => serverTime(base, key(), `/rankings/${tickers[k % 200]}`), 2],
      ]
      // JIT warm-up.
      for (let i = 0; i < 10; i++) for (const [, run] of cases) await run()
      const rows: TimedRow[] = []
      for (const [name, run, budget] of cases) {
        const server: number[] = []
        for (let i = 0; i < SAMPLES; i++) server.push(await run())
        rows.push({ name, server, budget })
      }
      // A year back: the first call of each day computes its rankings; the repeat reads the cache.
      const first: number[] = []
      const repeat: number[] = []
      for (const teo of yearBack) {
        first.push(await serverTime(base, key(), '/rankings/screen', screen(teo)))
        repeat.push(await serverTime(base, key(), '/rankings/screen', screen(teo)))
      }
      rows.push({ name: 'POST /rankings/screen a year back (first call)', server: first, budget: 150 })
      rows.push({ name: 'POST /rankings/screen a year back (repeated)', server: repeat, budget: 5 })
      console.log(
        `store: ${STOCKS} synthetic stocks, 2006-01-03 → 2026-10-30 (synthesised and built in ${built.toFixed(0)} s); ` +
          `${SAMPLES} calls per row, every call no-cache and debited`,
      )
      printServerTimes(rows)
    })
  })
}

await main()
