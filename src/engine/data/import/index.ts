import { type Progress, silentProgress } from '../../../platform/progress.ts'
import { writeDataset } from '../dataset-writer.ts'
import type { Dataset, DatasetManifest } from '../format.ts'
import { buildImportedDataset } from './build.ts'
import type { ImportOptions } from './options.ts'

export { buildImportedDataset } from './build.ts'
export type { ImportOptions } from './options.ts'

/**
 * `erm3 data import`: reads the user's files, builds the canonical Dataset and writes it. Every
 * check runs before anything is written, and the writer replaces `out` atomically, so a failed
 * import leaves no dataset behind (and a previous one untouched).
 */
export async function importDataset(
  opts: ImportOptions,
  progress: Progress = silentProgress,
): Promise<{ dataset: Dataset; manifest: DatasetManifest }> {
  const dataset = await buildImportedDataset(opts, progress)
  const manifest = await writeDataset(dataset, opts.out, progress)
  return { dataset, manifest }
}
