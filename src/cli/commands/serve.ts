import type { Command } from 'commander'
import { createCliProgress } from '../progress.ts'

export function registerServe(program: Command): void {
  program
    .command('serve')
    .description('run the API (REST) on HOST:PORT over a built model store')
    .option('--store <dir>', 'model store root (default: ERM3_STORE, else ERM3_HOME/store)')
    .option(
      '--update-at <time>',
      'run the daily data update at HH:MM [IANA zone] on NYSE session days, one node at a time (default zone America/New_York; default: ERM3_UPDATE_AT)',
    )
    .action(async (o: { store?: string; updateAt?: string }) => {
      const { serveUntilSignal } = await import('../../main/server.ts')
      const { createUpdateRunner } = await import('../../main/update-runner.ts')
      await serveUntilSignal(process.env, {
        store: o.store,
        updateAt: o.updateAt,
        makeUpdateRunner: (store) => createUpdateRunner(process.env, store),
        progress: createCliProgress(),
        say: (line) => process.stdout.write(`${line}\n`),
      })
    })
}
