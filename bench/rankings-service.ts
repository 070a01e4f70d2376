/**
 * The rankings service (src/services/analytics/rankings.ts) called directly on the default-size store:
 * 3,000 synthetic stocks, 2006-01-03 → 2026-10-30. Budgets (medians, server time):
 * screen at data_as_of ≤ 5 ms; screen a year back ≤ 150 ms on the first call of a day and ≤ 5 ms
 * repeated; /rankings/{ticker} ≤ 2 ms. A direct call has no HTTP, auth or metering around it
 * (bench/cross-api.ts measures the served endpoints); the first-call row splits into the panel
 * load (readInto of 7 fields + 6 rows) and the kernel (rankAllMetrics), measured on other days.
 * Run: node --import tsx bench/rankings-service.ts [samples]   (BENCH_STORE=<built store> skips the build)
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

const SAMPLES = Math.max(5, Number(process.argv[2] ?? 40))
const STOCKS = Number(process.env.BENCH_STOCKS ?? 3000)

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
const p90 = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length * 0.9)]

async function time(fn: () => Promise<unknown>): Promise<number> {
  const t0 = performance.now()
  await fn()
  return performance.now() - t0
}

async function main(): Promise<void> {
  const root = process.env.BENCH_STORE ? null : mkdtempSync(join(tmpdir(), 'erm3-bench-rankings-'))
  try {
    let storeDir = process.env.BENCH_STORE ?? ''
    if (root) {
      const t0 = performance.now()
      const { synthesizeDataset } = await import('../src/engine/data/synthesize.ts')
      const { buildStore } = await import('../src/engine/build/index.ts')
      storeDir = join(root, 'store')
      await synthesizeDataset(join(root, 'dataset'), { stocks: STOCKS, fundamentals: false })
      await buildStore({ dataset: join(root, 'dataset'), store: storeDir })
      console.log(`store of ${STOCKS} stocks built in ${((performance.now() - t0) / 1000).toFixed(0)} s`)
    }
    const { ModelStore } = await import('../src/engine/model-store/reader.ts')
    const { ModelRegistry } = await import('../src/services/models.ts')
    const { screenRankings, tickerRankings } = await import('../src/services/analytics/rankings.ts')
    const { rankingInputAt } = await import('../src/services/analytics/rankings-day.ts')
    const { rankAllMetrics } = await import('../src/engine/model/cross/index.ts')
    const store = await ModelStore.open(storeDir)
    const models = new ModelRegistry(store, null, 'http://bench')
    const T = store.calendar.length
    const tickers = store.symbols
      .filter((m) => m.asset_type === 'stock')
      .flatMap((m) => m.tickers.filter((w) => !w.to).map((w) => w.ticker))
    const screen = (teo?: string) => () =>
      screenRankings(models, 'live', {
        metric: 'gross_return',
        cohort: 'sector',
        window: '63d',
        limit: 100,
        teo,
      })
    const ticker = (k: number, teo?: string) => () =>
      tickerRankings(models, 'live', tickers[k % tickers.length], teo)

    // JIT warm-up, on days the measured rows do not use.
    for (let k = 0; k < 5; k++) {
      await screen()()
      await screen(store.date(T - 600 - k))()
      await ticker(k)()
    }
    const rows: [string, number[], number | null][] = []
    const run = async (name: string, fn: (k: number) => () => Promise<unknown>, budget: number | null) => {
      const xs: number[] = []
      for (let k = 0; k < SAMPLES; k++) xs.push(await time(fn(k)))
      rows.push([name, xs, budget])
    }
    await run('screen at data_as_of', () => screen(), 5)
    // A year back: distinct days, so each first call computes its rankings; then each repeated.
    const days = Array.from({ length: SAMPLES }, (_, k) => store.date(T - 253 - k))
    await run('screen a year back, first call of the day', (k) => screen(days[k]), 150)
    const repeat: number[] = []
    for (let k = 0; k < SAMPLES; k++) {
      await screen(days[k])()
      repeat.push(await time(screen(days[k])))
    }
    rows.push(['screen a year back, repeated', repeat, 5])
    await run('/rankings/{ticker} at data_as_of', (k) => ticker(k), 2)
    await run('/rankings/{ticker} a year back (cached day)', (k) => ticker(k, days[0]), 2)
    await screen(days[0])()
    const load: number[] = []
    const kernel: number[] = []
    for (let k = 0; k < Math.min(SAMPLES, 15); k++) {
      const t = T - 700 - k
      let loaded: Awaited<ReturnType<typeof rankingInputAt>> | null = null
      load.push(
        await time(async () => {
          loaded = await rankingInputAt(store, t)
        }),
      )
      const l = loaded as unknown as Awaited<ReturnType<typeof rankingInputAt>>
      kernel.push(await time(async () => rankAllMetrics(l.input, l.at)))
    }
    rows.push(
      ['  of a first call: panel load', load, null],
      ['  of a first call: kernel (28 rankings)', kernel, null],
    )

    console.log(`${'call (direct, ms)'.padEnd(46)} ${'p50'.padStart(8)} ${'p90'.padStart(8)}  budget`)
    let over = 0
    for (const [name, xs, budget] of rows) {
      const m = median(xs)
      const ok = budget === null ? '' : m <= budget ? `≤ ${budget}  ok` : `≤ ${budget}  OVER`
      if (budget !== null && m > budget) over++
      console.log(`${name.padEnd(46)} ${m.toFixed(2).padStart(8)} ${p90(xs).toFixed(2).padStart(8)}  ${ok}`)
    }
    await store.close()
    if (over > 0) process.exitCode = 1
  } finally {
    if (root) rmSync(root, { recursive: true, force: true })
  }
}

await main()
