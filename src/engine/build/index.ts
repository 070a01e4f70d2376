import { availableParallelism } from 'node:os'
import { isoFromDay } from '../../platform/dates.ts'
import { AppError } from '../../platform/errors.ts'
import { type Progress, silentProgress } from '../../platform/progress.ts'
import { readDataset, readManifest } from '../data/dataset-reader.ts'
import type { Dataset, DatasetManifest } from '../data/format.ts'
import type { DefaultUniverseBasis } from '../model/cross/index.ts'
import { DEFAULT_PARAMS, type ModelParams, paramProblems } from '../model/params.ts'
import type { StockField } from '../model/stock-kernel.ts'
import { STORED_FLOAT_FIELDS } from '../model-store/derived.ts'
import {
  CODE_FIELDS,
  type CodeDType,
  type CodeField,
  chunkSymbolsFor,
  STORE_FILES,
  type StoreManifest,
} from '../model-store/layout.ts'
import { StoreBuildWriter } from '../model-store/writer.ts'
import { collectGarbage } from './collect.ts'
import { type EngineBlock, type EngineRun, type EngineTimes, runEngine } from './engine.ts'
import { factorSeries, writeFactorSeries } from './factors.ts'
import { codeDTypes, REVERSION_Z, writeBlockFields, writeInputFields } from './fields.ts'
import {
  type FundamentalsMode,
  fundamentalsDigest,
  fundamentalsMode,
  startFundamentals,
} from './fundamentals.ts'
import { confirmIncremental, type IncrementalPlan, planIncremental } from './incremental.ts'
import { inputDigests } from './input-digests.ts'
import { type BuildInputs, buildInputs, inputsBasis, releasePrices } from './inputs.ts'
import { buildInWorker, callerHeapIsLarge } from './isolated.ts'
import { canResume, createKernelState } from './kernel-state.ts'
import { classificationDigest, storeManifest, symbolMeta } from './manifest.ts'
import { priorLoader } from './prior.ts'
import { type Membership, writeProducts, writeUniverses } from './products.ts'

/** Below this many securities a full build's kernel runs on the calling thread (by default). */
const POOL_MIN_SYMBOLS = 1000

export interface BuildOptions {
  dataset: string
  store: string
  params?: Partial<ModelParams>
  /**
   * Symbols per engine block: a multiple of the store's symbol chunk (chunkSymbolsFor, at most
   * 256), which is the default, so that a block is whole chunk columns.
   */
  blockSize?: number
  /** Append the dataset's new days to the current build instead of rebuilding everything. */
  incremental?: boolean
  /**
   * false: leave out the style split (l3_style_er null, style_factors 0) — only for measuring
   * what the split costs (bench/build.ts); every served build has it.
   */
  style?: boolean
  /**
   * Run the build in a worker thread (isolated.ts), true or false; unset: when the calling
   * process holds a large heap (a daily update, a serving node), whose every full collection the
   * build would otherwise pay for.
   */
  isolate?: boolean
  /**
   * Check the dataset's files against their manifest digests (default true). false only for a
   * dataset the same process has just written (the first start's synthetic market).
   */
  verify?: boolean
  /**
   * Parse the SEC filings on a worker thread beside the per-stock model (true or false); unset:
   * from 1,000 companies (a thread costs seconds to start).
   */
  fundamentalsThread?: boolean
  /**
   * Threads for the per-stock kernel of a full build (worker threads over the symbols of each
   * block), and above 1 the industry panel on a thread of its own beside the other products;
   * the numbers do not depend on it. Default: the available parallelism from 1,000 securities
   * up, else 1 (a thread costs seconds to start).
   */
  threads?: number
}

/**
 * `erm3 build`: dataset → model store. Builds into a new directory and switches the store's
 * CURRENT pointer only at the end, so a failed or interrupted build is never served.
 */
export async function buildStore(
  opts: BuildOptions,
  progress: Progress = silentProgress,
): Promise<StoreManifest> {
  if (opts.isolate ?? callerHeapIsLarge()) return buildInWorker(opts, progress)
  const params = checkedParams(opts.params)
  const timings: Record<string, number> = {}
  const started = performance.now()
  const lap = (name: string, t0: number) => {
    timings[name] = Math.round(performance.now() - t0) / 1000
    return performance.now()
  }
  let t = performance.now()
  const notes: string[] = []
  const fullBuild = (reason: string) => notes.push(`incremental build not possible (${reason}): full build`)
  let plan: IncrementalPlan | null = null
  const dm0 = await readManifest(opts.dataset)
  if (opts.incremental) {
    const p = await planIncremental(opts.store, dm0, params, classificationDigest(dm0))
    if ('reason' in p) fullBuild(p.reason)
    else plan = p
    t = lap('incremental_check', t)
  }
  let fundMode = fundamentalsMode(
    dm0,
    plan?.prev.manifest.fundamentals_digest ?? null,
    opts.fundamentalsThread,
  )
  let { dataset: ds, manifest: dm } = await readForBuild(opts, plan, fundMode, progress)
  t = lap('read_dataset', t)
  let x = buildInputs(ds)
  t = lap('inputs', t)
  const classification = classificationDigest(dm)
  if (plan) {
    const reason =
      dm.digest !== plan.datasetDigest
        ? 'the dataset changed while it was read'
        : confirmIncremental(plan, ds, x, inputsBasis(x))
    if (reason) {
      fullBuild(reason)
      await plan.prev.close()
      plan = null
      fundMode = fundamentalsMode(dm, null, opts.fundamentalsThread)
      ;({ dataset: ds, manifest: dm } = await readForBuild(opts, null, fundMode, silentProgress))
      x = buildInputs(ds)
    }
    t = lap('incremental_confirm', t)
  }
  // Once per build, from the inputs the products are computed from (docs/methodology.md §11).
  const basis = inputsBasis(x)
  const digests = inputDigests(ds, dm)
  // The inputs hold what the build reads of the prices from here on (the stages below keep `ds`).
  ds = releasePrices(ds)
  const writer = await StoreBuildWriter.begin(opts.store)
  const verify = opts.verify ?? true
  const fund = startFundamentals(fundMode, writer, {
    datasetDir: opts.dataset,
    dm,
    ds,
    verify,
    prevDir: plan?.prev.dir ?? null,
  })
  try {
    await writer.writeMeta(x.calendar, symbolMeta(ds, x.symbols), x.etfTickers, x.industries)
    const link = plan ? { prevDir: plan.prev.dir, fromDay: plan.from } : undefined
    await createStoreArrays(writer, x.calendar.length, x.symbols.length, codeDTypes(x), link)
    // So that the engine's blocks never sit beside more of the prices than it reads
    // (docs/performance.md): the universes (the last reader of the volume) and the input fields
    // (of the close and the market cap, which the products read back) are written while the
    // kernel threads start and compute the first block; the second block waits for them (gate).
    const prelude = writePrelude(writer, x, basis, plan, engineBlockSize(opts, x.symbols.length))
    prelude.catch(() => {}) // awaited below; a failure must not surface as unhandled first
    // Not in an incremental build (~0.5 GB): a forced collection costs it more than it saves.
    const inputFields = prelude.then(() => (plan ? undefined : collectGarbage()))
    x = { ...x, close: [], marketCap: [], volume: null }
    if (!plan) collectGarbage()
    const factors = factorSeries(ds, x)
    const style =
      opts.style === false ? [] : factors.returns.filter((_, j) => factors.meta[j].group === 'style')
    const engine = await engineStage(writer, x, params, opts, plan, style, inputFields, progress)
    const active = await prelude
    t = lap('engine_and_fields', t)
    timings.engine_kernel = Math.round(engine.kernel * 1000) / 1000
    timings.engine_write_wait = Math.round(engine.write_wait * 1000) / 1000
    const products = await writeProducts(writer, x, active, basis, progress, plan, panelThread(opts, x, plan))
    await writeFactorSeries(writer, factors, plan)
    t = lap('products', t)
    await fund.finish(notes, progress)
    t = lap('fundamentals', t)
    timings.total = Math.round(performance.now() - started) / 1000
    const manifest = storeManifest(ds, dm.digest, classification, x, params, { ...products, basis }, timings)
    manifest.incremental_from = plan ? isoFromDay(x.calendar[plan.from]) : null
    manifest.input_digests = digests
    manifest.notes = notes
    manifest.fundamentals_digest = fundamentalsDigest(dm.files)
    await plan?.prev.close()
    await writer.commit(manifest)
    return manifest
  } catch (err) {
    await fund.cancel()
    await plan?.prev.close()
    await writer.abort()
    throw err
  }
}

/** Reads the dataset for the build (the tail of the panels an incremental plan needs), as a stage. */
async function readForBuild(
  opts: BuildOptions,
  plan: IncrementalPlan | null,
  mode: FundamentalsMode,
  progress: Progress,
): Promise<{ dataset: Dataset; manifest: DatasetManifest }> {
  progress.start('build: read dataset', 1)
  const read = await readDataset(opts.dataset, {
    fromDay: plan?.inputFrom ?? 0,
    fundamentals: mode === 'inline',
    verify: opts.verify,
  }).catch(async (err: unknown) => {
    await plan?.prev.close()
    throw err
  })
  progress.update(1)
  progress.stop()
  return read
}

/** The engine's block size: a whole number of the store's symbol chunks (BuildOptions.blockSize). */
function engineBlockSize(opts: BuildOptions, symbols: number): number {
  const chunk = chunkSymbolsFor(symbols)
  const size = opts.blockSize ?? chunk
  if (!Number.isSafeInteger(size) || size < chunk || size % chunk !== 0)
    throw new AppError(
      'INVALID_REQUEST',
      `blockSize ${size} is not a multiple of the store's ${chunk}-symbol chunks`,
    )
  return size
}

function checkedParams(given: Partial<ModelParams> | undefined): ModelParams {
  const params: ModelParams = { ...DEFAULT_PARAMS, ...given }
  const problems = paramProblems(params)
  if (problems.length > 0) throw new AppError('INVALID_REQUEST', `model parameters: ${problems.join('; ')}`)
  return params
}

/**
 * Writes the universes and the stored input fields, from the next turn of the event loop on (the
 * engine starts first), then collects the panels only they read; returns the membership.
 */
async function writePrelude(
  writer: StoreBuildWriter,
  x: BuildInputs,
  basis: DefaultUniverseBasis,
  plan: IncrementalPlan | null,
  blockSize: number,
): Promise<Membership> {
  await new Promise((resolve) => setImmediate(resolve))
  const active = await writeUniverses(writer, x, basis, plan)
  await writeInputFields(writer, x, blockSize)
  return active
}

/**
 * Runs the per-stock engine over every block, writing each block's fields (and its reversion z)
 * as it finishes; the input fields' writes (`inputFields`) must end before the second block.
 */
async function engineStage(
  writer: StoreBuildWriter,
  x: BuildInputs,
  params: ModelParams,
  opts: BuildOptions,
  plan: IncrementalPlan | null,
  style: readonly Float64Array[],
  inputFields: Promise<void>,
  progress: Progress,
): Promise<EngineTimes> {
  // No panel outlives its block: every block buffer is pooled (products.ts reads fields back).
  const kept = new Set<StockField>()
  const threads = buildThreads(opts, x)
  const start = plan?.from ?? 0
  await createKernelState(writer, x.symbols.length, x.calendar.length, style.length)
  // Each stock continues from the previous build's kernel state when it stored one for these days.
  const resume = plan !== null && canResume(plan.prev, plan.from, style.length)
  const run: EngineRun = {
    from: start,
    ...(plan ? { prior: priorLoader(plan, x, { styleFactors: style.length, resume }), resume } : {}),
    blockSize: engineBlockSize(opts, x.symbols.length),
    // The prior loader's earliest day: nothing of a block is read or written before it.
    firstDay: plan?.loadFrom ?? 0,
    kept,
    style,
    threads,
    gate: inputFields,
  }
  const sink = async (b: EngineBlock) => {
    await inputFields
    await writeBlockFields(writer, x, b, start)
  }
  const engine = await runEngine(x, params, run, sink, progress)
  await inputFields
  // The engine's blocks, before the products allocate theirs (not in an incremental build: see above).
  if (!plan) collectGarbage()
  return engine
}

/**
 * Threads of the build's parallel stages (the kernel pool, the industry panel's worker). A thread
 * costs seconds to start (it loads the modules): worth it on a large market only.
 */
function buildThreads(opts: BuildOptions, x: BuildInputs): number {
  return opts.threads ?? (x.symbols.length >= POOL_MIN_SYMBOLS ? availableParallelism() : 1)
}

/** Whether the industry panel runs on a thread of its own: with threads, over 512 days or more. */
function panelThread(opts: BuildOptions, x: BuildInputs, plan: IncrementalPlan | null): boolean {
  return buildThreads(opts, x) > 1 && x.calendar.length - (plan?.from ?? 0) >= 512
}

/**
 * Creates every per-stock array of the store, T days by N symbols in chunks of 256 days ×
 * chunkSymbolsFor(N) symbols (BlockArray): the float fields, and the code fields of the types
 * `dtypes` (codeDTypes; −1 for no ETF). An incremental build links the previous build's days
 * before `fromDay`; the arrays are set up concurrently (their directory creations overlap on
 * the thread pool: linkChunks).
 */
async function createStoreArrays(
  writer: StoreBuildWriter,
  T: number,
  N: number,
  dtypes: Record<CodeField, CodeDType>,
  link: { prevDir: string; fromDay: number } | undefined,
): Promise<void> {
  const made: Promise<void>[] = []
  for (const f of STORED_FLOAT_FIELDS) {
    made.push(writer.createArray(STORE_FILES.field(f), { dtype: 'float64', days: T, symbols: N }, link))
  }
  for (const c of CODE_FIELDS) {
    const fillValue = c === 'sector_etf' || c === 'subsector_etf' ? -1 : 0
    made.push(
      writer.createArray(STORE_FILES.code(c), { dtype: dtypes[c], days: T, symbols: N, fillValue }, link),
    )
  }
  made.push(writer.createArray(REVERSION_Z, { dtype: 'float64', days: T, symbols: N }, link))
  // Every creation settles before a failure is reported, so none outlives the build's abort.
  for (const r of await Promise.allSettled(made)) if (r.status === 'rejected') throw r.reason
}
