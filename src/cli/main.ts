import { Command } from 'commander'
import { registerDataCommands } from './commands/data.ts'
import { registerStart } from './commands/start.ts'
import { runCli } from './run.ts'

const program = new Command('erm3')
  .description('erm3 — equity risk decomposition: market, sector, subsector and residual')
  .showHelpAfterError()

registerDataCommands(program)
registerStart(program)

await runCli(program, process.argv)
