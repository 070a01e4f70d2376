import type { Command } from 'commander'
import { registerDataImport } from './data-import.ts'
import { registerDataSynth } from './data-synth.ts'

export function registerDataCommands(program: Command): void {
  const data = program
    .command('data')
    .description('create datasets: generate a synthetic market or import your own files')
  registerDataSynth(data)
  registerDataImport(data)
}
