import { join } from 'node:path'
import { buildStore } from '../engine/build/index.ts'
import { tsWorker } from '../engine/build/isolated.ts'
import { synthesizeDataset } from '../engine/data/synthesize.ts'
import { ModelStore } from '../engine/model-store/reader.ts'
import { exists } from '../platform/atomic-dir.ts'
import { type Progress, silentProgress } from '../platform/progress.ts'

/**
 * The sandbox that test keys read: a small synthetic market with a fixed seed, so every
 * installation's sandbox answers the same numbers. Built once, on first start.
 */
export const SANDBOX_SYNTH = { seed: 20260101, stocks: 200, start: '2016-01-04', end: '2026-10-30' } as const

export async function ensureSandbox(
  paths: { sandboxDataset: string; sandboxStore: string },
  progress: Progress = silentProgress,
  say: (line: string) => void = () => undefined,
): Promise<void> {
  if (await exists(join(paths.sandboxStore, 'CURRENT'))) {
    if (await readable(paths.sandboxStore)) return
    say('sandbox: the sandbox store was built by another erm3 version; rebuilding it …')
  } else say('sandbox: building the fixed-seed sandbox market that test keys read (about 10 s, once) …')
  const written = !(await exists(join(paths.sandboxDataset, 'manifest.json')))
  if (written) {
    await synthesizeDataset(paths.sandboxDataset, { ...SANDBOX_SYNTH, fundamentals: true }, progress)
  }
  // A dataset generated just now is not hashed again by the build that reads it.
  const build = { dataset: paths.sandboxDataset, store: paths.sandboxStore, verify: !written }
  await buildStore(build, progress)
}

/**
 * `ensureSandbox` on a worker thread of its own, started at once: on first start it runs beside
 * the main market's synthesis (one thread), so its ~10 s of work leave the critical path. Its
 * progress is not shown (it would interleave with the main stages); one line says when it is done.
 * `signal` stops it (the caller failed: the process should not wait for the sandbox to exit).
 */
export async function sandboxInBackground(
  paths: { sandboxDataset: string; sandboxStore: string },
  say: (line: string) => void,
  signal?: AbortSignal,
): Promise<void> {
  if ((await exists(join(paths.sandboxStore, 'CURRENT'))) && (await readable(paths.sandboxStore))) return
  say('sandbox: building the fixed-seed sandbox market that test keys read, in the background …')
  const started = performance.now()
  const worker = tsWorker(new URL('./sandbox-worker.ts', import.meta.url), paths)
  const stop = () => void worker.terminate()
  signal?.addEventListener('abort', stop, { once: true })
  try {
    const outcome = await new Promise<{ ok: boolean; message?: string }>((resolve, reject) => {
      worker.once('message', resolve)
      worker.once('error', reject)
      worker.once('exit', (code) => reject(new Error(`the sandbox worker exited (code ${code})`)))
    })
    if (!outcome.ok) throw new Error(`sandbox build failed: ${outcome.message}`)
  } finally {
    signal?.removeEventListener('abort', stop)
    await worker.terminate()
  }
  say(`sandbox: built in ${((performance.now() - started) / 1000).toFixed(1)} s (in the background)`)
}

/** Whether this erm3 reads the store (format, store and methodology versions match). */
async function readable(storeDir: string): Promise<boolean> {
  try {
    await (await ModelStore.open(storeDir)).close()
    return true
  } catch {
    return false
  }
}
