import { join } from 'node:path'
import { buildStore } from '../engine/build/index.ts'
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
  if (!(await exists(join(paths.sandboxDataset, 'manifest.json')))) {
    await synthesizeDataset(paths.sandboxDataset, { ...SANDBOX_SYNTH, fundamentals: true }, progress)
  }
  await buildStore({ dataset: paths.sandboxDataset, store: paths.sandboxStore }, progress)
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
