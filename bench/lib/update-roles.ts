/**
 * The child processes of `bench/update.ts`, one function per role. Each prints one JSON line on
 * stdout (a fake vendor: its address, then it serves until its stdin closes).
 */
import { readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { buildStore } from '../../src/engine/build/index.ts'
import { readDataset } from '../../src/engine/data/dataset-reader.ts'
import { ETF_INFO } from '../../src/engine/data/etf-registry.ts'
import { synthesizeDataset } from '../../src/engine/data/synthesize.ts'
import { publishStore } from '../../src/engine/model-store/publish.ts'
import { LocalBlobs } from '../../src/engine/object-store/local.ts'
import { polygonSource } from '../../src/engine/sources/polygon.ts'
import { tiingoSource } from '../../src/engine/sources/tiingo.ts'
import { assembleDataset } from '../../src/engine/update/assemble.ts'
import { afterClose } from '../../src/engine/update/days.ts'
import { fetchData } from '../../src/engine/update/fetch.ts'
import { runUpdate } from '../../src/engine/update/run.ts'
import { isoFromDay } from '../../src/platform/dates.ts'
import type { Progress } from '../../src/platform/progress.ts'
import { startFakePolygon } from '../../test/fakes/polygon.ts'
import { startFakeTiingo } from '../../test/fakes/tiingo.ts'
import { backfillSymbols, latestWindows, polygonDay, tiingoMarket, writeDataDir } from './update-market.ts'

const KEY = 'bench-key'
const print = (o: unknown) => console.log(JSON.stringify(o))
const cpuSeconds = (u: NodeJS.CpuUsage) => (u.user + u.system) / 1e6
const closed = () => new Promise<void>((resolve) => process.stdin.on('end', resolve).resume())

async function synth([dir, stocks]: string[]): Promise<void> {
  const { manifest, seconds } = await synthesizeDataset(dir, { stocks: Number(stocks), fundamentals: false })
  print({ seconds, securities: manifest.counts.symbols, sessions: manifest.calendar.days })
}

/** Serves the backfill's histories; writes the stocks' sectors (ticker → classification) to `classes`. */
async function fakeTiingo([synthDir, stocks, classes]: string[]): Promise<void> {
  const { dataset: ds } = await readDataset(synthDir)
  const picked = backfillSymbols(ds, Number(stocks))
  const market = tiingoMarket(ds, [...picked.stocks, ...picked.etfs])
  const latest = latestWindows(ds)
  const sectors = Object.fromEntries(
    picked.stocks.map((s) => {
      const r = latest.get(s)
      return [r?.ticker, { sector: r?.sector ?? '', industry: r?.industry ?? null }]
    }),
  )
  await writeFile(classes, JSON.stringify(sectors))
  const t = await startFakeTiingo({ key: KEY, market })
  const served = new Set(picked.etfs.map((s) => latest.get(s)?.ticker))
  print({
    url: t.url,
    tickersUrl: t.tickersUrl,
    from: isoFromDay(ds.calendar[0]),
    to: isoFromDay(ds.calendar[ds.calendar.length - 1]),
    bars: Object.values(market.prices).reduce((n, rows) => n + rows.length, 0),
    stocks: picked.stocks.length,
    etfs: picked.etfs.length,
    missing: Object.keys(ETF_INFO).filter((e) => !served.has(e)),
  })
  await closed()
  await t.close()
}

/** One backfill: erm3's CPU and wall time over `fetchData`, and where the assemble began. */
async function fetch([dataDir, url, tickersUrl, from, to, classesFile, exclude]: string[]): Promise<void> {
  const sectors = JSON.parse(await readFile(classesFile, 'utf8')) as Record<
    string,
    { sector: string; industry: string | null }
  >
  const source = tiingoSource({ apiKey: KEY, baseUrl: url, tickersUrl, ratePerHour: 3.6e9 })
  // The assemble starts with its 'read bars' stage: the CPU used by then is the fetch tasks'.
  const split: { cpu: NodeJS.CpuUsage | null } = { cpu: null }
  const cpu0 = process.cpuUsage()
  const progress: Progress = {
    start(stage) {
      if (stage === 'read bars' && split.cpu === null) split.cpu = process.cpuUsage(cpu0)
    },
    update() {},
    stop() {},
  }
  const t0 = performance.now()
  const s = await fetchData(
    {
      dataDir,
      sources: [source],
      from,
      to,
      exclude: exclude ? exclude.split(',') : [],
      // The market's own sectors, as a user's override map gives them (ticker → sector, industry).
      overrides: new Map(
        Object.entries(sectors).map(([ticker, c]) => [ticker, { sector: c.sector, industry: c.industry }]),
      ),
    },
    progress,
  )
  const wall = (performance.now() - t0) / 1000
  const cpu = cpuSeconds(process.cpuUsage(cpu0))
  if (!s.dataset || s.failed.length > 0)
    throw new Error(`backfill failed: ${JSON.stringify(s.failed.slice(0, 3))} ${s.datasetError}`)
  const fetchCpu = split.cpu === null ? cpu : cpuSeconds(split.cpu)
  print({ wall, cpu, cpuFetch: fetchCpu, cpuAssemble: cpu - fetchCpu, tasks: s.tasks })
}

/** The data directory through the second-to-last session, its dataset, full build and first publish. */
async function prepare([synthDir, dir]: string[]): Promise<void> {
  const { dataset: ds } = await readDataset(synthDir)
  const end = ds.calendar.length - 1
  const dataDir = join(dir, 'data')
  const store = join(dir, 'store')
  const lap = (() => {
    let t = performance.now()
    return () => {
      const s = (performance.now() - t) / 1000
      t = performance.now()
      return s
    }
  })()
  const bars = await writeDataDir(ds, dataDir, end)
  const write = lap()
  await assembleDataset(dataDir)
  const assemble = lap()
  await buildStore({ dataset: join(dataDir, 'dataset'), store })
  const build = lap()
  await publishStore(store, new LocalBlobs(join(dir, 'published')))
  const publish = lap()
  print({
    securities: ds.symbols.length,
    bars,
    through: isoFromDay(ds.calendar[end - 1]),
    write,
    assemble,
    build,
    publish,
  })
}

async function fakePolygon([synthDir]: string[]): Promise<void> {
  const { dataset: ds } = await readDataset(synthDir)
  const t = ds.calendar.length - 1
  const market = polygonDay(ds, t)
  const p = await startFakePolygon({ key: KEY, market })
  print({ url: p.url, day: isoFromDay(ds.calendar[t]), bars: Object.keys(market.bars).length })
  await closed()
  await p.close()
}

/** One daily update of the prepared state in `dir`: the outcome, its wall and CPU time, peak RSS. */
async function update([dir, url, day]: string[]): Promise<void> {
  const cpu0 = process.cpuUsage()
  const t0 = performance.now()
  const o = await runUpdate({
    dataDir: join(dir, 'data'),
    store: join(dir, 'store'),
    publish: new LocalBlobs(join(dir, 'published')),
    sources: [polygonSource({ apiKey: KEY, baseUrl: url, ratePerMinute: 6e9 })],
    now: afterClose(day),
  })
  const wall = (performance.now() - t0) / 1000
  // maxRSS is in KiB: the peak resident memory of the whole update process.
  const rssMb = process.resourceUsage().maxRSS / 1024
  print({ ...o, findings: undefined, wall, cpu: cpuSeconds(process.cpuUsage(cpu0)), rss_mb: rssMb })
}

export const ROLES: Record<string, (args: string[]) => Promise<void>> = {
  synth,
  'fake-tiingo': fakeTiingo,
  fetch,
  prepare,
  'fake-polygon': fakePolygon,
  update,
}
