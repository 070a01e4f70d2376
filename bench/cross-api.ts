/**
 * The cross-sectional endpoints' server time (issue 13 budgets) on the default-size store: 3,000
 * synthetic stocks, 2006-01-03 → 2026-10-30, against `erm3 serve` as deployed (a child process,
 * embedded backends). Every measured request is `Cache-Control: no-cache` (authenticated, rate
 * limited, reserved, computed, encoded, durably debited); "server" is the `Server-Timing: app;dur=`
 * the server reports. Budgets (medians): screen at data_as_of ≤ 5 ms; screen a year back ≤ 150 ms
 * on the first call of a day and ≤ 5 ms repeated; /rankings/{ticker} ≤ 2 ms; industry panel ≤ 3 ms;
 * universe members (3,000) ≤ 5 ms; basket of 500 ≤ 10 ms. Baseline row: GET /metrics/{ticker} of
 * one ticker on the same server (the same auth, limits and metering around a warm one-row read).
 * Run: node --import tsx bench/cross-api.ts [samples]   (BENCH_STORE=<built store> skips the build)
 */
import { spawn } from 'node:child_process'
import { cpSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import {
  BIN,
  freePort,
  loadAverage,
  median,
  provision,
  quantile,
  serverEnv,
  stopChild,
  waitReady,
} from './lib/serve.ts'

const SAMPLES = Math.max(5, Number(process.argv[2] ?? 40))
const STOCKS = Number(process.env.BENCH_STOCKS ?? 3000)

interface Row {
  name: string
  server: number[]
  budget: number | null
}

async function call(base: string, key: string, path: string, body?: unknown, cache = false): Promise<number> {
  const res = await fetch(base + path, {
    method: body === undefined ? 'GET' : 'POST',
    headers: {
      authorization: `Bearer ${key}`,
      ...(cache ? {} : { 'cache-control': 'no-cache' }),
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  })
  const text = await res.text()
  if (res.status !== 200) throw new Error(`${path}: HTTP ${res.status} ${text.slice(0, 300)}`)
  const dur = /app;dur=([\d.]+)/.exec(res.headers.get('server-timing') ?? '')
  if (!dur) throw new Error(`${path}: no Server-Timing`)
  return Number(dur[1])
}

async function main(): Promise<void> {
  const root = mkdtempSync(join(tmpdir(), 'erm3-bench-cross-'))
  try {
    console.log(`load average before: ${loadAverage()}`)
    const t0 = performance.now()
    // BENCH_STORE=<a built store> skips the synthesis and build.
    let store = process.env.BENCH_STORE ?? ''
    if (!store) {
      const { synthesizeDataset } = await import('../src/data/synthesize.ts')
      const { buildStore } = await import('../src/services/build/index.ts')
      const dataset = join(root, 'dataset')
      store = join(root, 'store')
      await synthesizeDataset(dataset, { stocks: STOCKS, fundamentals: false })
      await buildStore({ dataset, store })
    }
    const built = (performance.now() - t0) / 1000
    const { ModelStore } = await import('../src/store/model-store/reader.ts')
    const s = await ModelStore.open(store)
    const T = s.calendar.length
    const tickers = s.symbols
      .filter((m) => m.asset_type === 'stock')
      .flatMap((m) => m.tickers.filter((w) => !w.to).map((w) => w.ticker))
    const yearBack = Array.from({ length: SAMPLES }, (_, k) => s.date(T - 253 - k))
    await s.close()
    const home = join(root, 'home')
    cpSync(store, join(home, 'sandbox', 'store'), { recursive: true })
    const env = { ERM3_HOME: home }
    const { keys } = await provision(env, 8)
    const port = await freePort()
    const child = spawn(process.execPath, [BIN, 'serve', '--store', store], {
      env: { ...serverEnv(), ...env, PORT: String(port), LOG_LEVEL: 'warn' },
      stdio: ['ignore', 'ignore', 'inherit'],
    })
    try {
      await waitReady(port, child)
      const base = `http://127.0.0.1:${port}`
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
          () => call(base, key(), `/metrics/${tickers[0]}`),
          null,
        ],
        ['GET /industry-panel (sector)', () => call(base, key(), '/industry-panel?level=sector'), 3],
        ['GET /industry-panel (all levels)', () => call(base, key(), '/industry-panel'), null],
        ['GET /universe/uni_mc_3000/members', () => call(base, key(), '/universe/uni_mc_3000/members'), 5],
        ['GET /etf/factor-returns (12 ETFs)', () => call(base, key(), '/etf/factor-returns'), null],
        [
          'POST /signals/residual-reversion/basket (500)',
          () => call(base, key(), '/signals/residual-reversion/basket', basket),
          10,
        ],
        ['POST /rankings/screen at data_as_of', () => call(base, key(), '/rankings/screen', screen()), 5],
        ['GET /rankings/{ticker}', () => call(base, key(), `/rankings/${tickers[k % 200]}`), 2],
      ]
      // JIT warm-up.
      for (let i = 0; i < 10; i++) for (const [, run] of cases) await run()
      const rows: Row[] = []
      for (const [name, run, budget] of cases) {
        const server: number[] = []
        for (let i = 0; i < SAMPLES; i++) server.push(await run())
        rows.push({ name, server, budget })
      }
      // A year back: the first call of each day computes its rankings; the repeat reads the cache.
      const first: number[] = []
      const repeat: number[] = []
      for (const teo of yearBack) {
        first.push(await call(base, key(), '/rankings/screen', screen(teo)))
        repeat.push(await call(base, key(), '/rankings/screen', screen(teo)))
      }
      rows.push({ name: 'POST /rankings/screen a year back (first call)', server: first, budget: 150 })
      rows.push({ name: 'POST /rankings/screen a year back (repeated)', server: repeat, budget: 5 })
      console.log(
        `store: ${STOCKS} synthetic stocks, 2006-01-03 → 2026-10-30 (synthesised and built in ${built.toFixed(0)} s); ` +
          `${SAMPLES} calls per row, every call no-cache and debited`,
      )
      console.log(`${'request'.padEnd(50)} ${'server p50'.padStart(10)} ${'p90'.padStart(7)}  budget`)
      for (const r of rows) {
        const p50 = median(r.server)
        const verdict = r.budget === null ? '—' : `≤ ${r.budget} ms ${p50 <= r.budget ? 'met' : 'MISSED'}`
        console.log(
          `${r.name.padEnd(50)} ${p50.toFixed(2).padStart(10)} ${quantile(r.server, 0.9).toFixed(2).padStart(7)}  ${verdict}`,
        )
      }
    } finally {
      await stopChild(child)
    }
    console.log(`load average after: ${loadAverage()}`)
  } finally {
    rmSync(root, { recursive: true, force: true })
  }
}

await main()
