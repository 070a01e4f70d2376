/** The worker thread of the industry panel (industry-panel.ts startIndustryPanel). */
import { parentPort, workerData } from 'node:worker_threads'
import { type IndustryPanelJob, industryPanel, type PanelWorkerMessage } from './industry-panel.ts'

const port = parentPort
if (port) {
  const post = (m: PanelWorkerMessage) => port.postMessage(m)
  const job = (workerData as { data: IndustryPanelJob }).data
  industryPanel(job, () => post({ kind: 'opened' })).then(
    () => post({ kind: 'done' }),
    (err: unknown) => post({ kind: 'failed', message: err instanceof Error ? err.message : String(err) }),
  )
}
