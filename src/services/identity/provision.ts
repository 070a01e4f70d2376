import type { KeyEnvironment } from '../../contract/api-key.ts'
import { AppError } from '../../platform/errors.ts'
import { newId } from '../../platform/ids.ts'
import type { ApiKeyRecord } from '../../store/accounts/types.ts'
import type { ServiceContext } from '../context.ts'
import { recordAudit } from './audit.ts'
import { issueKey } from './keys.ts'
import type { Session } from './session.ts'

/**
 * Free credit of an anonymous account from /auth/provision-free
 * (docs/decisions/keys-and-accounts.md): 0.50 USD.
 */
export const FREE_CREDIT_MICROS = 500_000

export interface ProvisionedKey {
  apiKey: string
  record: ApiKeyRecord
}

/** A key for the signed-in account (POST /auth/provision). */
export async function provisionKey(
  ctx: ServiceContext,
  session: Session,
  input: { name?: string; environment: KeyEnvironment; expires_in_seconds?: number },
  ip: string | null = null,
): Promise<ProvisionedKey> {
  const account = await ctx.accounts.getAccount(session.accountId)
  if (!account) throw new AppError('INVALID_KEY', 'The session refers to an account that no longer exists')
  const k = await issueKey(ctx, {
    accountId: account.id,
    kind: 'agent',
    environment: input.environment,
    name: input.name ?? null,
    expiresAt: input.expires_in_seconds === undefined ? null : ctx.now() + input.expires_in_seconds * 1000,
  })
  await recordAudit(
    ctx,
    { accountId: account.id, type: 'session', id: session.email, ip },
    'key.created',
    k.record.id,
    {
      name: k.record.name,
      environment: k.record.environment,
      prefix: k.record.prefix,
      expires_at: k.record.expiresAt,
    },
  )
  return k
}

/** A new anonymous account with a live key and its free credit (POST /auth/provision-free). */
export async function provisionFree(
  ctx: ServiceContext,
  input: { name?: string },
): Promise<ProvisionedKey & { balanceMicros: number }> {
  const now = ctx.now()
  const account = await ctx.accounts.createAccount({
    id: newId('acct'),
    email: null,
    kind: 'anonymous',
    createdAt: now,
  })
  await ctx.accounts.credit(
    account.id,
    { kind: 'credit', amountMicros: FREE_CREDIT_MICROS, reference: 'free-credit', note: 'provision-free' },
    now,
  )
  const key = await issueKey(ctx, {
    accountId: account.id,
    kind: 'agent',
    environment: 'live',
    name: input.name ?? null,
  })
  return { ...key, balanceMicros: FREE_CREDIT_MICROS }
}
