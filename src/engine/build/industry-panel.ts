/**
 * The industry panel of a build (products/industry_panel/<level>/…, docs/model-store.md): per
 * level and day, each industry's weighted beta stats, from the per-stock fields the engine wrote,
 * read back from the build directory one range of days at a time. A full build of a large market
 * computes it on a worker thread of its own (products-worker.ts) beside the other products: it is
 * about a third of the cross-sectional stage, and the kernel's threads are idle by then. The job
 * is plain data on SharedArrayBuffers, so the thread reads the inputs without a copy.
 */
import type { Worker } from 'node:worker_threads'
import { columnsOf } from '../model/columns.ts'
import { industryPanelSeries, type PanelLevel, type WeightBasis } from '../model/cross/index.ts'
import { tsWorker } from './isolated.ts'
import { type BuildReader, dayRanges, openBuildReader, readAhead, readFieldsDays } from './read-back.ts'
import { type Append, writer2D } from './write-2d.ts'

const LEVELS: PanelLevel[] = ['market', 'sector', 'subsector']

export interface IndustryPanelJob {
  /** The build directory (being written). */
  dir: string
  append: Append | null
  days: number
  /** Per symbol: industry index per day (-1 none); the build's inputs. */
  industry: Int16Array[]
  nIndustries: number
  isStock: Uint8Array
  etfSymbols: Int32Array
  /** Default-universe membership per symbol and day (products.ts Membership's bits). */
  bits: Uint8Array[]
  weightBasis: WeightBasis
}

/**
 * Computes and writes the panel of `job`, from its first new day on. `opened` is called once the
 * build directory's arrays are listed: the caller must not create arrays in it before then.
 */
export async function industryPanel(job: IndustryPanelJob, opened: () => void = () => {}): Promise<void> {
  const reader = await openBuildReader(job.dir, job)
  opened()
  try {
    await writeIndustryPanel(reader, job)
  } finally {
    await reader.close()
  }
}

async function writeIndustryPanel(reader: BuildReader, job: IndustryPanelJob): Promise<void> {
  const T = job.days
  const N = job.industry.length
  const nInd = job.nIndustries
  const start = job.append?.from ?? 0
  const active = (i: number, t: number) => job.bits[i][t] === 1
  // Days before start come from the previous build, so only the rest is computed.
  const series = LEVELS.map(() => ({
    beta_mean: columnsOf(Float64Array, nInd, T, false, start),
    beta_variance: columnsOf(Float64Array, nInd, T, false, start),
    total_log_mcap_weight: columnsOf(Float64Array, nInd, T, false, start),
    n_companies: columnsOf(Int32Array, nInd, T, false, start),
  }))
  const fields = ['market_cap', 'l1_mkt_beta', 'l2_sec_beta', 'l3_sub_beta']
  // Every (day, industry) sums its members in symbol order on its own, so the panel computed one
  // range of days at a time is the whole-panel computation's bit for bit.
  const read = (a: number, b: number) => readFieldsDays(reader, fields, N, a, b)
  await readAhead(dayRanges(start, T), read, ([marketCap, l1MktBeta, l2SecBeta, l3SubBeta], a, b) => {
    const upTo = <C extends Float64Array | Int16Array | Int32Array>(cols: C[]) =>
      cols.map((c) => c.subarray(0, b) as C)
    const input = {
      industry: upTo(job.industry),
      nIndustries: nInd,
      marketCap,
      l1MktBeta,
      l2SecBeta,
      l3SubBeta,
      active,
      weightBasis: job.weightBasis,
    }
    const out = series.map((o) => ({
      beta_mean: upTo(o.beta_mean),
      beta_variance: upTo(o.beta_variance),
      total_log_mcap_weight: upTo(o.total_log_mcap_weight),
      n_companies: upTo(o.n_companies),
    }))
    industryPanelSeries(input, LEVELS, a, out)
  })
  const write2D = writer2D(job.dir, job.append)
  for (const [l, level] of LEVELS.entries()) {
    const p = series[l]
    const base = `products/industry_panel/${level}`
    const attrs = { attributes: { dimension: 'industry index into meta/industries.json' } }
    const dims = { days: T, symbols: nInd, chunkSymbols: Math.max(1, nInd), ...attrs }
    await write2D(`${base}/beta_mean`, p.beta_mean, { dtype: 'float64', ...dims })
    await write2D(`${base}/beta_variance`, p.beta_variance, { dtype: 'float64', ...dims })
    await write2D(`${base}/total_log_mcap_weight`, p.total_log_mcap_weight, { dtype: 'float64', ...dims })
    await write2D(`${base}/n_companies`, p.n_companies, { dtype: 'int32', ...dims })
  }
}

/** What products-worker.ts posts. */
export type PanelWorkerMessage = { kind: 'opened' } | { kind: 'done' } | { kind: 'failed'; message: string }

/** The panel of `job`, on this thread or (thread) on a worker thread of its own. */
export function startIndustryPanel(
  job: IndustryPanelJob,
  thread: boolean,
): { opened: Promise<void>; done: Promise<void>; stop: () => Promise<void> } {
  let opened!: () => void
  const open = new Promise<void>((resolve) => {
    opened = resolve
  })
  // A failure before the listing still lets the caller go on, to see it from `done`.
  const settle = (done: Promise<void>) => done.catch(() => opened())
  if (!thread) {
    const done = industryPanel(job, opened)
    settle(done)
    return { opened: open, done, stop: async () => {} }
  }
  const worker: Worker = tsWorker(new URL('./products-worker.ts', import.meta.url), job)
  const done = new Promise<void>((resolve, reject) => {
    worker.on('message', (m: PanelWorkerMessage) => {
      if (m.kind === 'opened') opened()
      else if (m.kind === 'done') resolve()
      else reject(new Error(`industry panel: ${m.message}`))
    })
    worker.on('error', reject)
    worker.on('exit', (code) => reject(new Error(`the industry panel's worker thread exited (code ${code})`)))
  })
  settle(done)
  return {
    opened: open,
    done,
    stop: async () => {
      await worker.terminate()
    },
  }
}
