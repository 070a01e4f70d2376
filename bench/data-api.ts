import { join } from 'node:path'
import { inBenchRoot, median, quantile, withServer } from './lib/serve.ts'

const SAMPLES = Math.max(5, Number(process.argv[2] ?? 40))
const STOCKS = 300
const BATCH = 100

interface Sample {
  server: number
  wall: number
  bytes: number
}

async function call(
  base: string,
  key: string,
  path: string,
  init: { body?: unknown; cache?: boolean } = {},
): Promise<Sample> {
  const t0 = performance.now()
  const res = await fetch(base + path, {
    method: init.body === undefined ? 'GET' : 'POST',
    headers: {
      authorization: `Bearer ${key}`,
      ...(init.cache ? {} : { 'cache-control': 'no-cache' }),
      ...(init.body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }),
  })
  const bytes = (await res.arrayBuffer()).byteLength
  const wall = performance.now() - t0
  if (res.status !== 200) throw new Error(`${path}: HTTP ${res.status}`)
  const status = res.headers.get('x-cache-status')
  if (status !== (init.cache ? 'HIT' : 'BYPASS')) throw new Error(`${path}: cache status ${status}`)
  const dur = /app;dur=([\d.]+)/.exec(res.headers.get('server-timing') ?? '')
  if (!dur) throw new Error(`${path}: no Server-Timing`)
  return { server: Number(dur[1]), wall, bytes }
}

interface Row {
  name: string
  samples: Sample[]
  budget: number | null
}

function print(rows: Row[]): void {
  console.log(
    `${'request'.padEnd(46)} ${'server p50'.padStart(10)} ${'p90'.padStart(7)} ${'wall p50'.padStart(9)} ${'bytes'.padStart(9)}  budget`,
  )
  for (const r of rows) {
    const server = r.samples.map((s) => s.server)
    const p50 = median(server)
    const verdict = r.budget === null ? '—' : `≤ ${r.budget} ms ${p50 <= r.budget ? 'met' : 'MISSED'}`
    console.log(
      `${r.name.padEnd(46)} ${p50.toFixed(2).padStart(10)} ${quantile(server, 0.9).toFixed(2).padStart(7)} ` +
        `${median(r.samples.map((s) => s.wall))
          .toFixed(2)
          .padStart(9)} ${String(median(r.samples.map((s) => s.bytes))).padStart(9)}  ${verdict}`,
    )
  }
}

async function buildStore(root: string): Promise<{ store: string; seconds: number }> {
  const { synthesizeDataset } = await import('../src/engine/data/synthesize.ts')
  const { buildStore: build } = await import('../src/engine/build/index.ts')
  const t0 = performance.now()
  const dataset = join(root, 'dataset')
  const store = join(root, 'store')
  await synthesizeDataset(dataset, {
    seed: 11,
    stocks: STOCKS,
    start: '2006-01-03',
    end: '2026-10-30',
    fundamentals: false,
  })
  await build({ dataset, store })
  return { store, seconds: (performance.now() - t0) / 1000 }
}

/** Listed stocks with at least 15 years of prices (first trading day of the calendar). */
async function longLivedStocks(store: string): Promise<string[]> {
  const { ModelStore } = await import('../src/engine/model-store/reader.ts')
  const s = await ModelStore.open(store)
  try {
    const first = s.date(0)
    return s.symbols
      .filter((m) => m.asset_type === 'stock')
      .flatMap((m) => m.tickers.filter((w) => !w.to && (w.from ?? first) <= first).map((w) => w.ticker))
  } finally {
    await s.close()
  }
}

async function main(): Promise<void> {
  await inBenchRoot('erm3-bench-data-', async (root) => {
    const { store, seconds } = await buildStore(root)
    const tickers = await longLivedStocks(store)
    if (tickers.length < BATCH) throw new Error(`only ${tickers.length} long-lived stocks`)
    await withServer({ store, keys: 8 }, async ({ base, keys }) => {
      let k = 0
      const key = () => keys[k++ % keys.length] as string
      const tr = (t: string, f = '') => `/ticker-returns?ticker=${t}&years=15${f}`
      // JIT warm-up on tickers not measured below.
      const spare = tickers.slice(SAMPLES * 3)
      for (let i = 0; i < 10; i++) {
        const t = spare[i % spare.length] ?? (tickers[0] as string)
        for (const f of ['', '&format=parquet', '&format=csv']) await call(base, key(), tr(t, f))
        await call(base, key(), '/batch/analyze', { body: { tickers: tickers.slice(0, BATCH) } })
      }
      const rows: Row[] = []
      const measured = tickers.slice(0, SAMPLES)
      for (const [label, f, budget] of [
        ['JSON', '', 15],
        ['Parquet', '&format=parquet', 30],
        ['CSV', '&format=csv', null],
      ] as const) {
        for (const pass of ['first touch', 'repeat']) {
          const samples: Sample[] = []
          for (const t of measured) samples.push(await call(base, key(), tr(t, f)))
          rows.push({ name: `/ticker-returns 15y ${label} (${pass})`, samples, budget })
        }
      }
      // Each HIT right after the call that filled its entry (the 64 MiB cache holds ~50 such bodies).
      const hits: Sample[] = []
      for (const t of measured) {
        await call(base, key(), tr(t))
        hits.push(await call(base, key(), tr(t), { cache: true }))
      }
      rows.push({ name: '/ticker-returns 15y JSON (response-cache HIT)', samples: hits, budget: null })

      const batch = tickers.slice(0, BATCH)
      const runs = Math.max(5, Math.round(SAMPLES / 4))
      for (const [label, body] of [
        ['default metrics, 1y', { tickers: batch }],
        [
          'all four metrics, 1y',
          { tickers: batch, metrics: ['returns', 'hedge_ratios', 'full_metrics', 'l3_decomposition'] },
        ],
        ['returns, 15y', { tickers: batch, metrics: ['returns'], years: 15 }],
      ] as const) {
        const samples: Sample[] = []
        for (let i = 0; i < runs; i++) samples.push(await call(base, key(), '/batch/analyze', { body }))
        rows.push({ name: `POST /batch/analyze ${BATCH} tickers, ${label}`, samples, budget: null })
      }
      const pq: Sample[] = []
      for (let i = 0; i < runs; i++)
        pq.push(
          await call(base, key(), '/batch/analyze?format=parquet', {
            body: { tickers: batch, metrics: ['returns'], years: 15 },
          }),
        )
      rows.push({
        name: `POST /batch/analyze ${BATCH} tickers, returns 15y Parquet`,
        samples: pq,
        budget: null,
      })

      console.log(
        `store: ${STOCKS} synthetic stocks, 2006-01-03 → 2026-10-30 (synthesised and built in ${seconds.toFixed(1)} s); ` +
          `${SAMPLES} tickers per /ticker-returns row, ${runs} calls per batch row; every call no-cache and debited`,
      )
      print(rows)
    })
  })
}

await main()
