import type { Command } from 'commander'
import { createCliProgress } from '../progress.ts'

export function registerServe(program: Command): void {
  program
    .command('serve')
    .description('run the API (REST) on HOST:PORT over a built model store')
    .option('--store <dir>', 'model store root (default: ERM3_STORE, else ERM3_HOME/store)')
    .action(async (o: { store?: string }) => {
      const { serveUntilSignal } = await import('../../main/server.ts')
      await serveUntilSignal(process.env, {
        store: o.store,
        progress: createCliProgress(),
        say: (line) => process.stdout.write(`${line}\n`),
      })
    })
}
