import type { Command } from 'commander'
import { registerDataFetch } from './data-fetch.ts'
import { registerDataImport } from './data-import.ts'
import { registerDataSynth } from './data-synth.ts'

export function registerDataCommands(program: Command): void {
  const data = program
    .command('data')
    .description('create datasets: generate a synthetic market, import your own files or fetch market data')
  registerDataSynth(data)
  registerDataImport(data)
  registerDataFetch(data)
}
