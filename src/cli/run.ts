import type { Command } from 'commander'
import { AppError } from '../platform/errors.ts'

/**
 * Runs the program and turns failures into one clear line on stderr and a non-zero exit code.
 * Known errors (bad input, bad configuration) print their message only; anything else is a bug
 * and prints its stack.
 */
export async function runCli(program: Command, argv: string[]): Promise<void> {
  try {
    await program.parseAsync(argv)
  } catch (err) {
    if (err instanceof AppError) {
      process.stderr.write(`erm3: error: ${err.message}\n`)
      process.exitCode = err.code === 'INVALID_INPUT' ? 2 : 1
    } else {
      process.stderr.write(
        `erm3: internal error: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`,
      )
      process.exitCode = 70
    }
  }
}
