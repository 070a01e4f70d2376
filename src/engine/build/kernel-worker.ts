/** A worker thread of KernelPool (kernel-pool.ts): runs the per-stock kernel over the ranges it is sent. */
import { parentPort, workerData } from 'node:worker_threads'
import { runStock, STOCK_FIELDS, type StockOutput } from '../model/stock-kernel.ts'
import { marketContext } from './engine.ts'
import type { KernelInit, KernelJob, KernelPairs, KernelReply } from './kernel-pool.ts'

const port = parentPort
if (port) {
  const init = (workerData as { data: KernelInit }).data
  const etf = Array.from(init.etfSymbols, (s) => init.returns[s])
  const ctx = marketContext(etf, init.params, init.style)
  port.on('message', (m: KernelJob | KernelPairs) => {
    if ('pairs' in m) {
      ctx.styleBasis?.adopt(m.pairs)
      return
    }
    const job = m
    const reply: KernelReply = { id: job.id }
    try {
      const count = job.subEff.length
      for (let k = 0; k < count; k++) {
        const i = job.first + k
        if (!init.isStock[i]) continue
        const out: StockOutput = {
          fields: Object.fromEntries(STOCK_FIELDS.map((f) => [f, job.fields[f][k]])) as StockOutput['fields'],
          subEff: job.subEff[k],
          state: job.state[k],
          resume: job.resume,
        }
        runStock(ctx, { r: init.returns[i], sec: init.sec[i], sub: init.sub[i] }, out, job.from, job.to)
      }
    } catch (err) {
      reply.error = err instanceof Error ? err.message : String(err)
    }
    port.postMessage(reply)
  })
}
