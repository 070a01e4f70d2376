/** The worker thread of `buildInWorker` (isolated.ts): one build, its progress and its outcome posted back. */
import { parentPort, workerData } from 'node:worker_threads'
import { AppError } from '../../platform/errors.ts'
import type { Progress } from '../../platform/progress.ts'
import { type BuildOptions, buildStore } from './index.ts'
import type { WorkerMessage } from './isolated.ts'

const port = parentPort
if (port) {
  const post = (m: WorkerMessage) => port.postMessage(m)
  const progress: Progress = {
    start: (stage, total) => post({ kind: 'start', stage, total }),
    update: (done) => post({ kind: 'update', done }),
    stop: () => post({ kind: 'stop' }),
  }
  const opts = (workerData as { data: BuildOptions }).data
  buildStore(opts, progress).then(
    (manifest) => post({ kind: 'done', manifest }),
    (err: unknown) =>
      post({
        kind: 'failed',
        code: err instanceof AppError ? err.code : null,
        message: err instanceof Error ? err.message : String(err),
      }),
  )
}
