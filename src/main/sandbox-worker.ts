/** The worker thread of `sandboxInBackground` (sandbox.ts): builds the sandbox, posts the outcome. */
import { parentPort, workerData } from 'node:worker_threads'
import { ensureSandbox } from './sandbox.ts'

const port = parentPort
if (port) {
  const paths = (workerData as { data: { sandboxDataset: string; sandboxStore: string } }).data
  ensureSandbox(paths).then(
    () => port.postMessage({ ok: true }),
    (err: unknown) =>
      port.postMessage({ ok: false, message: err instanceof Error ? err.message : String(err) }),
  )
}
