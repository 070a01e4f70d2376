import type { Command } from 'commander'
import { createCliProgress } from '../progress.ts'

export function registerStart(program: Command): void {
  program
    .command('start')
    .description(
      'run the embedded service: create the default dataset and model store under ERM3_HOME when absent or stale, then serve the API',
    )
    .option('--no-serve', 'prepare dataset, model and sandbox stores, then exit without serving')
    .action(async (o: { serve: boolean }) => {
      const { startLocal } = await import('../../main/start.ts')
      await startLocal(process.env, createCliProgress(), (line) => process.stdout.write(`${line}\n`), {
        serve: o.serve,
      })
    })
}
