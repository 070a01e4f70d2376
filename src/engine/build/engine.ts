import { type Progress, silentProgress } from '../../platform/progress.ts'
import { columnsOf } from '../model/columns.ts'
import type { ModelParams } from '../model/params.ts'
import { windowWeights } from '../model/params.ts'
import {
  kernelStateSize,
  type MarketContext,
  runStock,
  STOCK_FIELDS,
  type StockField,
  type StockOutput,
} from '../model/stock-kernel.ts'
import { StyleBasis } from '../model/style-basis.ts'
import { BlockBuffers } from './block-buffers.ts'
import { type BuildInputs, etfObservationCounts } from './inputs.ts'
import { KernelPool } from './kernel-pool.ts'

/** Outputs of a block of consecutive symbols [first, first + count). */
export interface EngineBlock {
  first: number
  count: number
  /** fields[name][k] = symbol first+k's series (NaN for ETFs and days without a model). */
  fields: Record<StockField, Float64Array[]>
  subEff: Int16Array[]
  /**
   * Each symbol's kernel state (kernel-state.ts): the previous build's when the run resumes, and
   * after the run the state after its last day.
   */
  state: Float64Array[]
  /** Pooled buffers behind `fields`, returned to the pool once the block is written. */
  recyclable: Float64Array[]
}

export interface EngineRun {
  /** Days to compute: [from, T). from > 0 is an incremental run: `prior` supplies earlier days. */
  from: number
  /** Earlier outputs of the block (an incremental build reads them from the previous store). */
  prior?: (first: number, count: number, buffers: BlockBuffers) => Promise<EngineBlock>
  /**
   * The blocks' `state` (from `prior`) holds each stock's kernel state after day from − 1: the
   * kernel continues from it instead of replaying from the rebase day.
   */
  resume?: boolean
  blockSize: number
  /**
   * First day of the block columns anything reads or writes (an incremental build's earliest
   * loaded day; default 0): earlier days are shared with other columns (BlockBuffers).
   */
  firstDay?: number
  /** Fields whose arrays outlive their block (the cross-sectional stage reads them); default all. */
  kept?: ReadonlySet<StockField>
  /** Style ETF returns for the style split (none: the split is null). */
  style?: readonly Float64Array[]
  /** Kernel threads (KernelPool); 1 or unset: the calling thread. */
  threads?: number
  /**
   * Awaited before the second block's buffers are taken: the caller's memory that the engine's
   * blocks should not sit beside is freed by then (the build's input-field writes).
   */
  gate?: Promise<void>
}

/** The shared inputs of the kernel: ETF returns (index 0 the market), their window counts, the style basis. */
export function marketContext(
  etf: Float64Array[],
  params: ModelParams,
  style: readonly Float64Array[] = [],
  /** First day the stocks compute (the style basis starts at its rebase day). */
  from = 0,
): MarketContext {
  const weights = windowWeights(params)
  return {
    m: etf[0],
    etf,
    etfObs: etfObservationCounts(etf, params.window),
    weights,
    params,
    styleBasis: style.length > 0 ? new StyleBasis(etf[0], etf, style, weights, params, from) : undefined,
  }
}

/** Below this many days to compute (an incremental build), the kernel runs on the calling thread. */
const POOL_MIN_DAYS = 512

/** Seconds the engine spent computing blocks and waiting for the previous block's writes. */
export interface EngineTimes {
  kernel: number
  write_wait: number
}

/**
 * Runs the per-stock kernel for every stock, one block of symbols at a time, handing each
 * finished block to `sink` (which writes it and keeps what the cross-sectional stage needs), so
 * the full output panel never has to sit in memory at once.
 */
export async function runEngine(
  x: BuildInputs,
  params: ModelParams,
  run: EngineRun,
  sink: (block: EngineBlock) => Promise<void>,
  progress: Progress = silentProgress,
): Promise<EngineTimes> {
  const T = x.calendar.length
  const N = x.symbols.length
  const threads = Math.min(run.threads ?? 1, Math.ceil(run.blockSize / 2))
  const resume = run.resume === true
  const pool =
    threads > 1 && T - run.from >= POOL_MIN_DAYS
      ? KernelPool.start(threads, x, params, run.style ?? [])
      : null
  const ctx = pool
    ? null
    : marketContext(
        Array.from(x.etfSymbols, (s) => x.returns[s]),
        params,
        run.style,
        run.from,
      )
  const times: EngineTimes = { kernel: 0, write_wait: 0 }
  progress.start('build: per-stock model (symbols)', N)
  // One block is written while the next is computed: the writes run in libuv's thread pool and
  // the kernel on the pool's threads (or this one).
  let pending: Promise<void> | null = null
  let previous: EngineBlock | null = null
  const buffers = new BlockBuffers(N, T, run.blockSize, run.kept ?? new Set(STOCK_FIELDS), run.firstDay)
  const load = async (first: number): Promise<EngineBlock> => {
    const count = Math.min(run.blockSize, N - first)
    if (first > 0 && run.gate) await run.gate
    return run.prior
      ? await run.prior(first, count, buffers)
      : emptyBlock(first, count, T, x.isStock, buffers, run.style?.length ?? 0)
  }
  // An incremental build's blocks load the previous build's days (reads in libuv's pool): the
  // next block loads while this one computes. Its blocks hold only their tail, so a third one
  // in memory costs a few MB; a full build's would cost a whole block of panels, so it does not.
  let next: Promise<EngineBlock> | null = null
  try {
    for (let first = 0; first < N; first += run.blockSize) {
      const count = Math.min(run.blockSize, N - first)
      let t0 = performance.now()
      const block = await (next ?? load(first))
      next = null
      if (run.prior && first + count < N) {
        next = load(first + count)
        next.catch(() => {}) // awaited on the next turn; a failure must not surface as unhandled first
      }
      if (pool) await pool.run(block, run.from, T, resume)
      else if (ctx) runBlock(ctx, x, block, run.from, T, resume)
      times.kernel += performance.now() - t0
      t0 = performance.now()
      if (pending) await pending
      times.write_wait += performance.now() - t0
      if (previous) buffers.recycle(previous.recyclable)
      previous = block
      pending = sink(block)
      progress.update(first + count)
    }
    const t0 = performance.now()
    if (pending) await pending
    times.write_wait += performance.now() - t0
  } finally {
    await pool?.close()
  }
  progress.stop()
  return { kernel: times.kernel / 1000, write_wait: times.write_wait / 1000 }
}

function runBlock(
  ctx: MarketContext,
  x: BuildInputs,
  block: EngineBlock,
  from: number,
  T: number,
  resume: boolean,
): void {
  for (let k = 0; k < block.count; k++) {
    const i = block.first + k
    if (!x.isStock[i]) continue
    const out: StockOutput = {
      fields: Object.fromEntries(STOCK_FIELDS.map((f) => [f, block.fields[f][k]])) as StockOutput['fields'],
      subEff: block.subEff[k],
      state: block.state[k],
      resume,
    }
    runStock(ctx, { r: x.returns[i], sec: x.sec[i], sub: x.sub[i] }, out, from, T)
  }
}

/**
 * A block of output arrays. The kernel writes every field of a stock for every day it runs, so
 * only the rows it never runs (ETFs) need the NaN fill.
 */
function emptyBlock(
  first: number,
  count: number,
  days: number,
  isStock: Uint8Array,
  buffers: BlockBuffers,
  styleFactors: number,
): EngineBlock {
  const fields = {} as Record<StockField, Float64Array[]>
  const recyclable: Float64Array[] = []
  for (const f of STOCK_FIELDS) {
    fields[f] = buffers.columns(f, first, count, recyclable)
    fields[f].forEach((a, k) => {
      if (!isStock[first + k]) a.fill(Number.NaN)
    })
  }
  const subEff = columnsOf(Int16Array, count, days, true)
  if (count > 0) new Int16Array(subEff[0].buffer).fill(-1)
  const state = columnsOf(Float64Array, count, kernelStateSize(styleFactors), true)
  return { first, count, fields, subEff, state, recyclable }
}
