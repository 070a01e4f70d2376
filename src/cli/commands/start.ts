import type { Command } from 'commander'
import { startLocal } from '../../main/start.ts'
import { createCliProgress } from '../progress.ts'

export function registerStart(program: Command): void {
  program
    .command('start')
    .description(
      'run the embedded pipeline: create the default synthetic dataset under ERM3_HOME if absent, then the later stages',
    )
    .action(async () => {
      await startLocal(process.env, createCliProgress(), (line) => process.stdout.write(`${line}\n`))
    })
}
