/**
 * The per-stock kernel on several cores. The kernel is pure (each stock's outputs depend only on
 * its own series and the shared ETF returns), so a block of symbols splits into contiguous ranges,
 * one per worker thread, and the numbers are the ones a single thread computes. Inputs and
 * outputs live in SharedArrayBuffers (columnsOf's `shared`, BlockBuffers): a job message carries
 * views, never copies.
 */
import type { Worker } from 'node:worker_threads'
import { sharedArray } from '../model/columns.ts'
import { type ModelParams, windowWeights } from '../model/params.ts'
import { STOCK_FIELDS, type StockField } from '../model/stock-kernel.ts'
import { type PairBasis, StyleBasis } from '../model/style-basis.ts'
import type { EngineBlock } from './engine.ts'
import type { BuildInputs } from './inputs.ts'
import { tsWorker } from './isolated.ts'

/** What every kernel worker receives once (kernel-worker.ts). */
export interface KernelInit {
  params: ModelParams
  returns: Float64Array[]
  sec: Int16Array[]
  sub: Int16Array[]
  isStock: Uint8Array
  etfSymbols: Int32Array
  style: readonly Float64Array[]
}

/** One range of a block: symbols [first, first + count) and their output views. */
export interface KernelJob {
  id: number
  first: number
  from: number
  to: number
  fields: Record<StockField, Float64Array[]>
  subEff: Int16Array[]
  state: Float64Array[]
  resume: boolean
}

export type KernelReply = { id: number; error?: string }

/** Sent to every worker once, before its first job: the style basis's pair factorisations. */
export interface KernelPairs {
  pairs: ReadonlyMap<number, PairBasis>
}

export class KernelPool {
  private nextId = 0
  /** Set once a worker failed or exited: later jobs fail at once instead of waiting for it. */
  private broken: Error | null = null
  private readonly waiting = new Map<number, { resolve: () => void; reject: (e: Error) => void }>()

  private constructor(private readonly workers: Worker[]) {
    for (const w of workers) {
      w.on('message', (m: KernelReply) => this.settle(m.id, m.error))
      w.on('error', (err) => this.failAll(err))
      w.on('exit', (code) => this.failAll(new Error(`a kernel worker thread exited (code ${code})`)))
    }
  }

  /** `threads` workers over the inputs `x` (whose returns, sec and sub must be shared columns). */
  static start(
    threads: number,
    x: BuildInputs,
    params: ModelParams,
    style: readonly Float64Array[],
  ): KernelPool {
    const init: KernelInit = {
      params,
      returns: x.returns,
      sec: x.sec,
      sub: x.sub,
      isStock: x.isStock,
      etfSymbols: x.etfSymbols,
      style,
    }
    const entry = new URL('./kernel-worker.ts', import.meta.url)
    const pool = new KernelPool(Array.from({ length: threads }, () => tsWorker(entry, init)))
    pool.shareStyleBasis(x, params, style)
    return pool
  }

  /**
   * Computes the style split's pair factorisations once, on SharedArrayBuffers, while the workers
   * start, and hands them to every worker: one copy (about 170 MB for the default market) instead
   * of one per thread, and no thread computes them again. Pairs are every (sector ETF, subsector
   * ETF) and (sector ETF, fallback) of the stocks' days; any other a worker computes itself.
   */
  private shareStyleBasis(x: BuildInputs, params: ModelParams, style: readonly Float64Array[]): void {
    if (style.length === 0) return
    const etf = Array.from(x.etfSymbols, (s) => x.returns[s])
    const basis = new StyleBasis(etf[0], etf, style, windowWeights(params), params, 0, sharedArray)
    for (const key of stylePairs(x)) basis.pair(Math.floor(key / 65536), (key % 65536) - 1)
    const message: KernelPairs = { pairs: basis.computed }
    for (const w of this.workers) w.postMessage(message)
  }

  /** Runs the kernel over days [from, to) of every stock of `block`, split across the workers. */
  async run(block: EngineBlock, from: number, to: number, resume: boolean): Promise<void> {
    if (this.broken) throw this.broken
    const W = this.workers.length
    const jobs: Promise<void>[] = []
    for (let w = 0; w < W; w++) {
      const a = Math.floor((block.count * w) / W)
      const b = Math.floor((block.count * (w + 1)) / W)
      if (b <= a) continue
      const fields = {} as Record<StockField, Float64Array[]>
      for (const f of STOCK_FIELDS) fields[f] = block.fields[f].slice(a, b)
      const id = this.nextId++
      const job: KernelJob = {
        id,
        first: block.first + a,
        from,
        to,
        fields,
        subEff: block.subEff.slice(a, b),
        state: block.state.slice(a, b),
        resume,
      }
      jobs.push(
        new Promise<void>((resolve, reject) => {
          this.waiting.set(id, { resolve, reject })
          this.workers[w].postMessage(job)
        }),
      )
    }
    await Promise.all(jobs)
  }

  async close(): Promise<void> {
    this.failAll(new Error('the kernel pool was closed'))
    await Promise.all(this.workers.map((w) => w.terminate()))
  }

  private settle(id: number, error: string | undefined): void {
    const p = this.waiting.get(id)
    if (!p) return
    this.waiting.delete(id)
    if (error === undefined) p.resolve()
    else p.reject(new Error(error))
  }

  private failAll(err: Error): void {
    this.broken ??= err
    for (const p of this.waiting.values()) p.reject(err)
    this.waiting.clear()
  }
}

/** Keys (sec × 65536 + u + 1) of the style pairs the stocks' days can ask for, ascending. */
function stylePairs(x: BuildInputs): number[] {
  const keys = new Set<number>()
  for (let i = 0; i < x.symbols.length; i++) {
    if (!x.isStock[i]) continue
    const sec = x.sec[i]
    const sub = x.sub[i]
    for (let t = 0; t < sec.length; t++) {
      if (sec[t] < 0) continue
      keys.add(sec[t] * 65536)
      if (sub[t] >= 0) keys.add(sec[t] * 65536 + sub[t] + 1)
    }
  }
  return [...keys].sort((a, b) => a - b)
}
