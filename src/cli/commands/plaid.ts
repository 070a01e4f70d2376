import type { Command } from 'commander'
import { loadConfig } from '../../platform/config.ts'

/** `erm3 plaid rekey`: re-encrypts stored Plaid access tokens under the current ERM3_PLAID_TOKEN_KEYS key. */
export function registerPlaid(program: Command): void {
  const plaid = program.command('plaid').description('brokerage connections (Plaid)')
  plaid
    .command('rekey')
    .description(
      're-encrypt every stored Plaid access token under the first key of ERM3_PLAID_TOKEN_KEYS (after a rotation)',
    )
    .action(async () => {
      const config = loadConfig(process.env)
      const [{ openOperator }, { rekeyAllTokens }] = await Promise.all([
        import('../../main/context.ts'),
        import('../../services/plaid/rekey.ts'),
      ])
      const op = await openOperator(process.env)
      try {
        const r = await rekeyAllTokens({ accounts: op.ctx.accounts, config: config.server })
        process.stdout.write(
          `${r.rekeyed} token(s) re-encrypted; every stored token is under key ${r.currentKeyId}\n`,
        )
      } finally {
        await op.close()
      }
    })
}
