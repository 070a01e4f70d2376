/** The worker thread of the fundamentals stage (fundamentals.ts, `thread` mode): parses every document, posts the notes. */
import { parentPort, workerData } from 'node:worker_threads'
import { silentProgress } from '../../platform/progress.ts'
import type { DatasetManifest } from '../data/format.ts'
import {
  documentWriter,
  type FundamentalsReply,
  fundamentalsOnDisk,
  writeFundamentals,
} from './fundamentals.ts'

const port = parentPort
if (port) {
  const input = (
    workerData as {
      data: { datasetDir: string; manifest: DatasetManifest; buildDir: string; verify: boolean }
    }
  ).data
  const notes: string[] = []
  const sources = fundamentalsOnDisk(input.datasetDir, input.manifest, input.verify)
  writeFundamentals(documentWriter(input.buildDir), sources, notes, silentProgress).then(
    () => port.postMessage({ ok: true, notes } satisfies FundamentalsReply),
    (err: unknown) =>
      port.postMessage({
        ok: false,
        message: err instanceof Error ? err.message : String(err),
      } satisfies FundamentalsReply),
  )
}
