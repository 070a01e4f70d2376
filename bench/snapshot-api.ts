/**
 * POST /snapshot served (budgets: 100 positions with a 252-day lookback and the default
 * estimator, ewma_nw, ≤ 50 ms server time, median; with `estimator: sample` ≤ 25 ms; a 2,000-day
 * lookback ≤ 80 ms), every call no-cache: authenticated, limited,
 * computed, encoded and durably debited. Each call draws a different 100-stock book from a pool
 * of listed stocks with a sector ETF (the chunk cache sees a realistic spread of symbols). The
 * baseline is GET /metrics/{ticker} of one warm ticker on the same server.
 */
import { benchStore, inBenchRoot, withServer } from './lib/serve.ts'
import { measureCases, printServerTimes, serverTime } from './lib/server-time.ts'

const SAMPLES = Math.max(5, Number(process.argv[2] ?? 30))
const STOCKS = Number(process.env.BENCH_STOCKS ?? 3000)
const POOL = 600
const BOOK = 100

/** Listed stocks that have a sector ETF at their last priced day, up to `n`, spread over the universe. */
async function pool(store: string, n: number): Promise<string[]> {
  const { ModelStore } = await import('../src/engine/model-store/reader.ts')
  const s = await ModelStore.open(store)
  try {
    const out: string[] = []
    for (const [i, m] of s.symbols.entries()) {
      const ticker = m.tickers.find((w) => !w.to)?.ticker
      if (m.asset_type !== 'stock' || ticker === undefined) continue
      const { values, t } = await s.latest(i, ['sector_etf'])
      if (t === s.calendar.length - 1 && (values.sector_etf ?? -1) >= 0) out.push(ticker)
    }
    const step = Math.max(1, Math.floor(out.length / n))
    return out.filter((_, i) => i % step === 0).slice(0, n)
  } finally {
    await s.close()
  }
}

async function main(): Promise<void> {
  await inBenchRoot('erm3-bench-snapshot-', async (root) => {
    const { store, seconds: built } = await benchStore(root, STOCKS)
    const tickers = await pool(store, POOL)
    if (tickers.length < BOOK) throw new Error(`only ${tickers.length} listed stocks with a sector ETF`)
    await withServer({ store, keys: 8 }, async ({ base, keys }) => {
      let k = 0
      const key = () => keys[k++ % keys.length] as string
      let seed = 12345
      const rand = () => {
        seed = (seed * 1103515245 + 12345) % 2147483648
        return seed / 2147483648
      }
      const book = () => {
        const start = Math.floor(rand() * tickers.length)
        return Array.from({ length: BOOK }, (_, i) => ({
          ticker: tickers[(start + i * 7) % tickers.length] as string,
          weight: 1 + Math.floor(rand() * 100),
        }))
      }
      const snap = (lookback: number, benchmark?: string, estimator?: string) => () =>
        serverTime(base, key(), '/snapshot', {
          type: 'portfolio',
          portfolio: book(),
          lookback_days: lookback,
          ...(benchmark ? { benchmark } : {}),
          ...(estimator ? { estimator } : {}),
        })
      const cases: [string, () => Promise<number>, number | null][] = [
        [
          'GET /metrics/{ticker} (baseline: one warm ticker)',
          () => serverTime(base, key(), `/metrics/${tickers[0]}`),
          null,
        ],
        ['POST /snapshot 100 positions, 252 days (default ewma_nw)', snap(252), 50],
        ['POST /snapshot 100 positions, 252 days, estimator sample', snap(252, undefined, 'sample'), 25],
        ['POST /snapshot 100 positions, 252 days, 60:SPY,40:XLK', snap(252, '60:SPY,40:XLK'), null],
        ['POST /snapshot 100 positions, 2000 days (ewma_nw reads 504)', snap(2000), 80],
        ['POST /snapshot 100 positions, 2000 days, estimator sample', snap(2000, undefined, 'sample'), 80],
        [
          'POST /snapshot type ticker, 252 days',
          () =>
            serverTime(base, key(), '/snapshot', {
              type: 'ticker',
              ticker: tickers[Math.floor(rand() * tickers.length)],
            }),
          null,
        ],
      ]
      // Every pool stock read once over the long lookback (chunk cache warm), then JIT warm-up.
      for (let i = 0; i < Math.ceil(tickers.length / BOOK) * 2; i++) await snap(2000)()
      const rows = await measureCases(cases, SAMPLES, 5)
      console.log(
        `store: ${process.env.BENCH_STORE ? `BENCH_STORE ${store}` : `${STOCKS} synthetic stocks (synthesised and built in ${built.toFixed(0)} s)`}; ` +
          `books of ${BOOK} drawn from ${tickers.length} listed stocks; ${SAMPLES} calls per row, every call no-cache and debited`,
      )
      printServerTimes(rows)
    })
  })
}

await main()
