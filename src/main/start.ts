import { join } from 'node:path'
import { readManifest } from '../data/dataset-reader.ts'
import { synthesizeDataset } from '../data/synthesize.ts'
import { exists } from '../platform/atomic-dir.ts'
import { loadConfig } from '../platform/config.ts'
import type { Progress } from '../platform/progress.ts'

/**
 * `npm start` / `erm3 start`: the embedded pipeline with no servers. Stage 1 (this version):
 * make sure a dataset exists under ERM3_HOME, generating the default synthetic market when it
 * does not. Later stages (model build, API) are added by the engine and the API.
 */
export async function startLocal(
  env: Record<string, string | undefined>,
  progress: Progress,
  say: (line: string) => void,
): Promise<void> {
  const config = loadConfig(env)
  const datasetDir = join(config.home, 'dataset')
  if (await exists(join(datasetDir, 'manifest.json'))) {
    const m = await readManifest(datasetDir)
    say(
      `dataset: using ${datasetDir} (${m.counts.stocks} stocks, ${m.calendar.first} … ${m.calendar.last}, digest ${m.digest.slice(0, 12)})`,
    )
  } else {
    say(`dataset: none under ${config.home}; generating the default synthetic market …`)
    const opts = Object.fromEntries(Object.entries(config.synth).filter(([, v]) => v !== undefined))
    const { manifest, seconds } = await synthesizeDataset(datasetDir, opts, progress)
    say(
      `dataset: wrote ${datasetDir} in ${seconds.toFixed(1)} s — ${manifest.counts.stocks} stocks, ${manifest.counts.etfs} ETFs, ` +
        `${manifest.calendar.days} trading days (${manifest.calendar.first} … ${manifest.calendar.last}), digest ${manifest.digest.slice(0, 12)}`,
    )
  }
  say('model build and API: not part of this version yet (the data stage is complete)')
}
