import type { KeyEnvironment } from '../../contract/api-key.ts'
import { microsToUsd, usdToMicros } from '../../contract/pricing.ts'
import { AppError } from '../../platform/errors.ts'
import { newId } from '../../platform/ids.ts'
import type { Account, ApiKeyRecord, LedgerEntry, RateTier } from '../../store/accounts/types.ts'
import { MIN_TOP_UP_USD } from '../billing/meter.ts'
import type { ServiceContext } from '../context.ts'
import { operatorActor, recordAudit } from '../identity/audit.ts'
import { forgetKey, issueKey } from '../identity/keys.ts'
import { normaliseEmail } from '../identity/login.ts'

/** Operator use cases behind `erm3 accounts|keys|topup` (self-hosters' admin path). */
export type OperatorContext = Pick<ServiceContext, 'accounts' | 'secrets' | 'now'>

async function account(ctx: OperatorContext, id: string): Promise<Account> {
  const a = await ctx.accounts.getAccount(id)
  if (!a) throw new AppError('NOT_FOUND', `No account ${id}`)
  return a
}

export async function createAccountWithBalance(
  ctx: OperatorContext,
  input: { email: string; balanceUsd?: number },
): Promise<{ account: Account; balanceUsd: number }> {
  const email = normaliseEmail(input.email)
  if (!/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(email))
    throw new AppError('INVALID_REQUEST', `${input.email} is not an e-mail address`)
  const micros = usdToMicros(input.balanceUsd ?? 0)
  if (!Number.isFinite(micros) || micros < 0)
    throw new AppError('INVALID_REQUEST', 'The opening balance cannot be negative')
  if (await ctx.accounts.findAccountByEmail(email))
    throw new AppError('CONFLICT', `An account for ${email} exists already`)
  const a = await ctx.accounts.createAccount({ id: newId('acct'), email, kind: 'user', createdAt: ctx.now() })
  if (micros > 0) {
    await ctx.accounts.credit(
      a.id,
      { kind: 'credit', amountMicros: micros, reference: 'opening-balance', note: 'operator' },
      ctx.now(),
    )
  }
  return { account: a, balanceUsd: microsToUsd(micros) }
}

export async function createKeyFor(
  ctx: OperatorContext,
  input: {
    accountId: string
    environment: KeyEnvironment
    tier?: RateTier
    name?: string
    expiresAt?: number | null
  },
): Promise<{ apiKey: string; record: ApiKeyRecord }> {
  await account(ctx, input.accountId)
  const k = await issueKey(ctx, {
    accountId: input.accountId,
    kind: 'agent',
    environment: input.environment,
    tier: input.tier ?? 'default',
    name: input.name ?? null,
    expiresAt: input.expiresAt ?? null,
  })
  await recordAudit(ctx, operatorActor(input.accountId), 'key.created', k.record.id, {
    name: k.record.name,
    environment: k.record.environment,
    prefix: k.record.prefix,
  })
  return k
}

/** @public (erm3 keys revoke, through the module namespace knip does not follow) */
export async function revokeKeyById(ctx: OperatorContext, keyId: string): Promise<ApiKeyRecord> {
  const k = await ctx.accounts.revokeKey(keyId, ctx.now())
  if (!k) throw new AppError('NOT_FOUND', `No key ${keyId}`)
  forgetKey(ctx, keyId)
  await recordAudit(ctx, operatorActor(k.accountId), 'key.revoked', keyId, { name: k.name, prefix: k.prefix })
  return k
}

/**
 * Rotation: a new key with the same account, environment, tier and name; the old one is revoked.
 * @public (erm3 keys rotate, through the module namespace knip does not follow)
 */
export async function rotateKey(
  ctx: OperatorContext,
  keyId: string,
): Promise<{ apiKey: string; record: ApiKeyRecord }> {
  const old = await ctx.accounts.getKey(keyId)
  if (!old) throw new AppError('NOT_FOUND', `No key ${keyId}`)
  if (old.revokedAt !== null) throw new AppError('CONFLICT', `Key ${keyId} is revoked already`)
  const fresh = await issueKey(ctx, {
    accountId: old.accountId,
    kind: old.kind,
    environment: old.environment,
    tier: old.tier,
    name: old.name,
    expiresAt: old.expiresAt,
  })
  await ctx.accounts.revokeKey(keyId, ctx.now())
  forgetKey(ctx, keyId)
  await recordAudit(ctx, operatorActor(old.accountId), 'key.rotated', keyId, {
    new_key_id: fresh.record.id,
    overlap_seconds: 0,
  })
  return fresh
}

/** One account as `erm3 accounts list|show` print it. */
interface AccountSummary {
  account: Account
  balanceUsd: number
  /** Keys neither revoked nor expired. */
  activeKeys: number
}

async function summarise(ctx: OperatorContext, a: Account): Promise<AccountSummary> {
  const [b, keys] = await Promise.all([ctx.accounts.balance(a.id), ctx.accounts.listKeys(a.id)])
  const now = ctx.now()
  return {
    account: a,
    balanceUsd: microsToUsd(b.balanceMicros),
    activeKeys: keys.filter((k) => k.revokedAt === null && (k.expiresAt === null || k.expiresAt > now))
      .length,
  }
}

/**
 * Accounts oldest first, a page at a time (`after`: the last id of the previous page).
 * @public (erm3 accounts list, through the module namespace knip does not follow)
 */
export async function listAccounts(
  ctx: OperatorContext,
  page: { after?: string; limit: number },
): Promise<AccountSummary[]> {
  if (!Number.isInteger(page.limit) || page.limit < 1 || page.limit > 1000)
    throw new AppError('INVALID_REQUEST', `The limit must be an integer in 1..1000, got ${page.limit}`)
  const accounts = await ctx.accounts.listAccounts({ after: page.after ?? null, limit: page.limit })
  return Promise.all(accounts.map((a) => summarise(ctx, a)))
}

/**
 * One account by its id (`acct_…`) or its e-mail address (any case).
 * @public (erm3 accounts show, through the module namespace knip does not follow)
 */
export async function findAccount(
  ctx: OperatorContext,
  by: { id?: string; email?: string },
): Promise<AccountSummary> {
  if ((by.id === undefined) === (by.email === undefined))
    throw new AppError('INVALID_REQUEST', 'Give an account id or --email <address>, not both')
  const a =
    by.email !== undefined
      ? await ctx.accounts.findAccountByEmail(normaliseEmail(by.email))
      : await ctx.accounts.getAccount(by.id ?? '')
  if (!a) throw new AppError('NOT_FOUND', `No account ${by.id ?? `with the e-mail address ${by.email}`}`)
  return summarise(ctx, a)
}

/** Top-up of at least 10.00 USD, idempotent per reference. */
export async function topUp(
  ctx: OperatorContext,
  input: { accountId: string; usd: number; reference: string },
): Promise<{ entry: LedgerEntry; duplicate: boolean; balanceUsd: number }> {
  if (!Number.isFinite(input.usd) || input.usd < MIN_TOP_UP_USD)
    throw new AppError('INVALID_REQUEST', `The minimum top-up is ${MIN_TOP_UP_USD.toFixed(2)} USD`)
  await account(ctx, input.accountId)
  const r = await ctx.accounts.credit(
    input.accountId,
    { kind: 'topup', amountMicros: usdToMicros(input.usd), reference: input.reference, note: 'operator' },
    ctx.now(),
  )
  const b = await ctx.accounts.balance(input.accountId)
  return { ...r, balanceUsd: microsToUsd(b.balanceMicros) }
}
