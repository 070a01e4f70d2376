import { join } from 'node:path'
import { buildStore } from '../engine/build/index.ts'
import { readManifest } from '../engine/data/dataset-reader.ts'
import type { DatasetManifest } from '../engine/data/format.ts'
import { synthesizeDataset } from '../engine/data/synthesize.ts'
import type { StoreManifest } from '../engine/model-store/layout.ts'
import { datasetOrigin } from '../engine/model-store/layout.ts'
import { ModelStore } from '../engine/model-store/reader.ts'
import { exists } from '../platform/atomic-dir.ts'
import { loadConfig } from '../platform/config.ts'
import type { Progress } from '../platform/progress.ts'
import { homePaths } from './context.ts'
import { sandboxInBackground } from './sandbox.ts'
import { serveUntilSignal } from './server.ts'

/**
 * `npm start` / `erm3 start`: the embedded pipeline with no servers. Makes sure a dataset exists
 * under ERM3_HOME (generating the default synthetic market when it does not), then builds the
 * model store when it is missing or was built from another dataset, makes sure the sandbox
 * store (test keys) exists (built on a worker thread meanwhile), and serves the API until
 * SIGINT/SIGTERM.
 */
export async function startLocal(
  env: Record<string, string | undefined>,
  progress: Progress,
  say: (line: string) => void,
  opts: { serve: boolean } = { serve: true },
): Promise<void> {
  const config = loadConfig(env)
  const paths = homePaths(config.home)
  // Beside the main market's stages (the synthesis uses one core); awaited before serving, and
  // stopped if they fail.
  const stopSandbox = new AbortController()
  const sandbox = sandboxInBackground(paths, say, stopSandbox.signal)
  sandbox.catch(() => undefined)
  const store = await prepareLive(config, progress, say).catch((err: unknown) => {
    stopSandbox.abort()
    throw err
  })
  await sandbox
  if (!opts.serve) {
    say('API: not started (--no-serve); run `erm3 serve` to start it')
    return
  }
  await serveUntilSignal(embeddedDemoEnv(env, store.dataset), { store: store.dir, progress, say })
}

/** The live market: its dataset (generated when there is none) and its model store, built when stale. */
async function prepareLive(
  config: ReturnType<typeof loadConfig>,
  progress: Progress,
  say: (line: string) => void,
): Promise<{ dir: string; dataset: DatasetManifest }> {
  const datasetDir = join(config.home, 'dataset')
  // A dataset generated just now is not hashed again by the build that reads it.
  let written = false
  if (await exists(join(datasetDir, 'manifest.json'))) {
    const m = await readManifest(datasetDir)
    say(
      `dataset: using ${datasetDir} (${m.counts.stocks} stocks, ${m.calendar.first} … ${m.calendar.last}, digest ${m.digest.slice(0, 12)})`,
    )
  } else {
    say(`dataset: none under ${config.home}; generating the default synthetic market …`)
    const opts = Object.fromEntries(Object.entries(config.synth).filter(([, v]) => v !== undefined))
    const { manifest, seconds } = await synthesizeDataset(datasetDir, opts, progress)
    written = true
    say(
      `dataset: wrote ${datasetDir} in ${seconds.toFixed(1)} s — ${manifest.counts.stocks} stocks, ${manifest.counts.etfs} ETFs, ` +
        `${manifest.calendar.days} trading days (${manifest.calendar.first} … ${manifest.calendar.last}), digest ${manifest.digest.slice(0, 12)}`,
    )
  }
  const storeDir = join(config.home, 'store')
  const dataset = await readManifest(datasetDir)
  const current = await storeManifestIfAny(storeDir)
  if (current && current.dataset.digest === dataset.digest) {
    say(`model: store ${storeDir} is up to date (${current.model_version}, data as of ${current.data_as_of})`)
  } else {
    say(
      current
        ? 'model: the dataset changed since the last build; rebuilding …'
        : `model: no store under ${config.home} that this erm3 reads (none, or built by another version); building …`,
    )
    const m = await buildStore({ dataset: datasetDir, store: storeDir, verify: !written }, progress)
    say(
      `model: built ${storeDir} in ${m.timings_s.total} s — ${m.model_version}, data as of ${m.data_as_of}, universe_size ${m.universe_size}`,
    )
  }
  return { dir: storeDir, dataset }
}

/** The sign-up credit of the embedded demo, in USD (ERM3_SIGNUP_CREDIT_USD's default under `erm3 start`). */
export const DEMO_SIGNUP_CREDIT_USD = '5'

/**
 * The environment `erm3 start` serves with: the embedded demo — the synthetic market and no
 * DATABASE_URL — gives a new dashboard account a sign-up credit (so a person can try the
 * explorer at once) unless the operator set ERM3_SIGNUP_CREDIT_USD; anything else keeps the
 * production default, none.
 */
export function embeddedDemoEnv(
  env: Record<string, string | undefined>,
  dataset: Pick<DatasetManifest, 'source'>,
): Record<string, string | undefined> {
  const demo = datasetOrigin(dataset.source).kind === 'synthetic' && !env.DATABASE_URL
  if (!demo || (env.ERM3_SIGNUP_CREDIT_USD ?? '') !== '') return env
  return { ...env, ERM3_SIGNUP_CREDIT_USD: DEMO_SIGNUP_CREDIT_USD }
}

async function storeManifestIfAny(storeDir: string): Promise<StoreManifest | null> {
  try {
    const store = await ModelStore.open(storeDir)
    const m = store.manifest
    await store.close()
    return m
  } catch {
    return null
  }
}
