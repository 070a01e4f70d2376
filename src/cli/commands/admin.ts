import type { Command } from 'commander'
import type { openOperator } from '../../main/context.ts'
import { AppError } from '../../platform/errors.ts'

type Operator = Awaited<ReturnType<typeof openOperator>>['ctx']

type Admin = typeof import('../../services/account/admin.ts')

/** The operator's context and the admin services, loaded when a command runs (`--help` stays quick). */
async function withOperator<T>(fn: (ctx: Operator, admin: Admin) => Promise<T>): Promise<T> {
  const [{ openOperator }, admin] = await Promise.all([
    import('../../main/context.ts'),
    import('../../services/account/admin.ts'),
  ])
  const op = await openOperator(process.env)
  try {
    return await fn(op.ctx, admin)
  } finally {
    await op.close()
  }
}

function usd(raw: string, flag: string): number {
  const n = Number(raw)
  if (raw.trim() === '' || !Number.isFinite(n))
    throw new AppError('INVALID_INPUT', `${flag} must be a number of USD, got ${JSON.stringify(raw)}`)
  return n
}

const out = (line: string) => process.stdout.write(`${line}\n`)

/** `acct_… <tab> e-mail <tab> kind <tab> created <tab> balance USD <tab> active keys`: one line, tab-separated. */
function accountLine(r: Awaited<ReturnType<Admin['findAccount']>>): string {
  const a = r.account
  return [
    a.id,
    a.email ?? '(anonymous)',
    a.kind,
    new Date(a.createdAt).toISOString(),
    `${r.balanceUsd.toFixed(6)} USD`,
    `${r.activeKeys} active key${r.activeKeys === 1 ? '' : 's'}`,
  ].join('\t')
}

/** Operator commands: accounts, keys and top-ups against the configured database (ERM3_HOME or DATABASE_URL). */
export function registerAdmin(program: Command): void {
  const accounts = program.command('accounts').description('manage accounts')
  accounts
    .command('create')
    .requiredOption('--email <address>', 'e-mail address of the account')
    .option('--balance <usd>', 'opening balance in USD (an operator credit)', '0')
    .action(async (o: { email: string; balance: string }) => {
      const r = await withOperator((ctx, a) =>
        a.createAccountWithBalance(ctx, { email: o.email, balanceUsd: usd(o.balance, '--balance') }),
      )
      out(`account ${r.account.id} (${r.account.email}) balance ${r.balanceUsd.toFixed(6)} USD`)
    })

  accounts
    .command('list')
    .description('accounts oldest first: id, e-mail, kind, created, balance, active keys')
    .option('--limit <n>', 'at most this many (1..1000)', '100')
    .option('--after <id>', 'start after this account id (the last id of the previous page)')
    .action(async (o: { limit: string; after?: string }) => {
      const rows = await withOperator((ctx, a) =>
        a.listAccounts(ctx, { limit: Number(o.limit), after: o.after }),
      )
      for (const r of rows) out(accountLine(r))
      if (rows.length === 0) process.stderr.write('no accounts\n')
    })
  accounts
    .command('show')
    .description('one account, by its id or its e-mail address')
    .argument('[account-id]', 'account id (acct_…)')
    .option('--email <address>', 'the account with this e-mail address')
    .action(async (id: string | undefined, o: { email?: string }) => {
      const r = await withOperator((ctx, a) => a.findAccount(ctx, { id, email: o.email }))
      out(accountLine(r))
    })

  const keys = program.command('keys').description('manage API keys')
  keys
    .command('create')
    .requiredOption('--account <id>', 'account id (acct_…)')
    .option('--env <environment>', 'live or test', 'live')
    .option('--tier <tier>', 'default or premium (300/min)', 'default')
    .option('--name <name>', 'a label for the key')
    .action(async (o: { account: string; env: string; tier: string; name?: string }) => {
      if (o.env !== 'live' && o.env !== 'test')
        throw new AppError('INVALID_INPUT', '--env must be live or test')
      if (o.tier !== 'default' && o.tier !== 'premium')
        throw new AppError('INVALID_INPUT', '--tier must be default or premium')
      const env = o.env
      const tier = o.tier
      const k = await withOperator((ctx, a) =>
        a.createKeyFor(ctx, { accountId: o.account, environment: env, tier, name: o.name }),
      )
      out(k.apiKey)
      process.stderr.write(
        `key ${k.record.id} (${k.record.environment}, ${k.record.tier}) — shown once, store it now\n`,
      )
    })
  keys
    .command('revoke')
    .argument('<key-id>', 'key id (key_…)')
    .action(async (id: string) => {
      const k = await withOperator((ctx, a) => a.revokeKeyById(ctx, id))
      out(`key ${k.id} revoked at ${new Date(k.revokedAt ?? 0).toISOString()}`)
    })
  keys
    .command('rotate')
    .argument('<key-id>', 'key id (key_…) to replace; it is revoked')
    .action(async (id: string) => {
      const k = await withOperator((ctx, a) => a.rotateKey(ctx, id))
      out(k.apiKey)
      process.stderr.write(`key ${k.record.id} replaces ${id} (revoked) — shown once, store it now\n`)
    })

  program
    .command('topup')
    .description('add prepaid balance (minimum 10.00 USD; idempotent per --reference)')
    .requiredOption('--account <id>', 'account id (acct_…)')
    .requiredOption('--usd <amount>', 'amount in USD')
    .option('--reference <ref>', 'idempotency reference (e.g. an invoice number); default: a new one')
    .action(async (o: { account: string; usd: string; reference?: string }) => {
      const reference = o.reference ?? `cli-${Date.now()}`
      const r = await withOperator((ctx, a) =>
        a.topUp(ctx, { accountId: o.account, usd: usd(o.usd, '--usd'), reference }),
      )
      out(
        `${r.duplicate ? 'already recorded' : 'recorded'}: ${r.entry.id} +${(r.entry.amountMicros / 1e6).toFixed(2)} USD (reference ${reference}); balance ${r.balanceUsd.toFixed(6)} USD`,
      )
    })
}
