import { Command } from 'commander'
import { registerAdmin } from './commands/admin.ts'
import { registerBuild } from './commands/build.ts'
import { registerDataCommands } from './commands/data.ts'
import { registerEvaluate } from './commands/evaluate.ts'
import { registerExport } from './commands/export.ts'
import { registerMcp } from './commands/mcp.ts'
import { registerPlaid } from './commands/plaid.ts'
import { registerPublish } from './commands/publish.ts'
import { registerServe } from './commands/serve.ts'
import { registerStart } from './commands/start.ts'
import { registerUpdate } from './commands/update.ts'
import { runCli } from './run.ts'

const program = new Command('erm3')
  .description('erm3 — equity risk decomposition: market, sector, subsector and residual')
  .showHelpAfterError()

registerDataCommands(program)
registerBuild(program)
registerPublish(program)
registerUpdate(program)
registerExport(program)
registerEvaluate(program)
registerStart(program)
registerServe(program)
registerAdmin(program)
registerMcp(program)
registerPlaid(program)

await runCli(program, process.argv)
