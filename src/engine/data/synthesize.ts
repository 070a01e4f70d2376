import { type Progress, silentProgress } from '../../platform/progress.ts'
import { writeDataset } from './dataset-writer.ts'
import type { DatasetManifest } from './format.ts'
import { generateSynthetic, type SynthOptions } from './synth/index.ts'

/** Generates the synthetic market and writes it as a dataset directory (atomically). */
export async function synthesizeDataset(
  outDir: string,
  options: Partial<SynthOptions>,
  progress: Progress = silentProgress,
): Promise<{ manifest: DatasetManifest; seconds: number }> {
  const started = performance.now()
  const ds = generateSynthetic(options, progress)
  const manifest = await writeDataset(ds, outDir, progress)
  return { manifest, seconds: (performance.now() - started) / 1000 }
}
