/**
 * A build in a worker thread of its own. A build allocates gigabytes of typed arrays over its
 * run, and every few hundred megabytes V8 answers with a full collection of the heap that
 * allocates them. In a process that holds a large heap of its own — `erm3 update` keeps every
 * stored bar in memory, a serving node its caches — each of those collections marks that whole
 * heap: an incremental build that takes 5 s alone took 25–50 s inside an update of 1,000 stocks
 * (docs/performance.md §"Real data: backfill and daily update"). A worker has its own heap, so
 * the build collects only its own garbage, and the caller's event loop stays free meanwhile.
 */
import { getHeapStatistics } from 'node:v8'
import { Worker } from 'node:worker_threads'
import { AppError, type ErrorCode } from '../../platform/errors.ts'
import type { Progress } from '../../platform/progress.ts'
import type { StoreManifest } from '../model-store/layout.ts'
import type { BuildOptions } from './index.ts'

/** Above this much live heap in the caller, a build runs in a worker (`BuildOptions.isolate`). */
const ISOLATE_ABOVE_BYTES = 256 * 2 ** 20

/** Whether a build with `isolate` left unset runs in a worker: when the caller's heap is large. */
export function callerHeapIsLarge(): boolean {
  return getHeapStatistics().used_heap_size > ISOLATE_ABOVE_BYTES
}

/** What the worker posts: progress calls, then the manifest or the error. */
export type WorkerMessage =
  | { kind: 'start'; stage: string; total: number }
  | { kind: 'update'; done: number }
  | { kind: 'stop' }
  | { kind: 'done'; manifest: StoreManifest }
  | { kind: 'failed'; code: string | null; message: string }

/**
 * The sources are TypeScript run through tsx (bin/erm3.js), whose loader a worker does not
 * inherit: the worker's first script loads tsx and imports the build's entry through it. Only
 * dynamic imports, so it runs as CommonJS or as a module (a parent started with --input-type=module).
 */
const BOOT = `import('node:worker_threads').then(({ workerData }) =>
  import(workerData.tsx).then((tsx) => tsx.tsImport(workerData.entry, workerData.entry)))`

/** A worker thread running the TypeScript module `entry` (through tsx), with `data` as its workerData.data. */
export function tsWorker(entry: URL, data: unknown): Worker {
  const workerData = { tsx: import.meta.resolve('tsx/esm/api'), entry: entry.href, data }
  return new Worker(BOOT, { eval: true, workerData })
}

export function buildInWorker(opts: BuildOptions, progress: Progress): Promise<StoreManifest> {
  const worker = tsWorker(new URL('./worker.ts', import.meta.url), { ...opts, isolate: false })
  return new Promise<StoreManifest>((resolve, reject) => {
    let settled = false
    const settle = (f: () => void) => {
      if (settled) return
      settled = true
      f()
      void worker.terminate()
    }
    worker.on('message', (m: WorkerMessage) => {
      if (m.kind === 'start') progress.start(m.stage, m.total)
      else if (m.kind === 'update') progress.update(m.done)
      else if (m.kind === 'stop') progress.stop()
      else if (m.kind === 'done') settle(() => resolve(m.manifest))
      else settle(() => reject(m.code ? new AppError(m.code as ErrorCode, m.message) : new Error(m.message)))
    })
    worker.on('error', (err) => settle(() => reject(err)))
    worker.on('exit', (code) =>
      settle(() => reject(new Error(`the build's worker thread exited (code ${code}) before it finished`))),
    )
  })
}
