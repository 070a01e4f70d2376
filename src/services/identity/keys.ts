import { createHmac } from 'node:crypto'
import {
  generateApiKey,
  type KeyEnvironment,
  type KeyKind,
  keyDisplayPrefix,
  parseApiKey,
} from '../../contract/api-key.ts'
import { AppError } from '../../platform/errors.ts'
import { newId } from '../../platform/ids.ts'
import type { ApiKeyRecord, RateTier } from '../../store/accounts/types.ts'
import type { ServiceContext } from '../context.ts'

/** Who is calling: the result of authenticating a bearer key. */
export interface Principal {
  keyId: string
  accountId: string
  environment: KeyEnvironment
  kind: KeyKind
  tier: RateTier
}

export function hashKey(pepper: string, apiKey: string): string {
  return createHmac('sha256', pepper).update(apiKey).digest('hex')
}

export interface IssueKeyInput {
  accountId: string
  kind: KeyKind
  environment: KeyEnvironment
  tier?: RateTier
  name?: string | null
  expiresAt?: number | null
  clientId?: string | null
}

/** Creates a key; the plaintext is returned once and never stored. */
export async function issueKey(
  ctx: Pick<ServiceContext, 'accounts' | 'secrets' | 'now'>,
  input: IssueKeyInput,
): Promise<{ apiKey: string; record: ApiKeyRecord }> {
  const apiKey = generateApiKey(input.kind, input.environment)
  const record = await ctx.accounts.insertKey({
    id: newId('key'),
    accountId: input.accountId,
    kind: input.kind,
    environment: input.environment,
    prefix: keyDisplayPrefix(apiKey),
    name: input.name ?? null,
    tier: input.tier ?? 'default',
    hash: hashKey(ctx.secrets.pepper, apiKey),
    createdAt: ctx.now(),
    expiresAt: input.expiresAt ?? null,
    clientId: input.clientId ?? null,
  })
  return { apiKey, record }
}

/**
 * Resolves `Authorization: Bearer <key>` to a principal. Format and checksum are checked before
 * any lookup, so garbage never reaches the database; each failure has its own code.
 */
export async function authenticateKey(ctx: ServiceContext, bearer: string | null): Promise<Principal> {
  if (bearer === null) throw new AppError('MISSING_CREDENTIALS', 'Send Authorization: Bearer <API_KEY>')
  const parsed = parseApiKey(bearer)
  if (!parsed) throw new AppError('INVALID_KEY', 'The API key is malformed or its checksum does not match')
  const key = await ctx.accounts.findKeyByHash(hashKey(ctx.secrets.pepper, bearer))
  if (!key) throw new AppError('INVALID_KEY', 'Unknown API key')
  if (key.revokedAt !== null) throw new AppError('REVOKED_KEY', 'This API key has been revoked')
  if (key.expiresAt !== null && key.expiresAt <= ctx.now())
    throw new AppError('EXPIRED_KEY', 'This API key has expired')
  return {
    keyId: key.id,
    accountId: key.accountId,
    environment: key.environment,
    kind: key.kind,
    tier: key.tier,
  }
}

/**
 * Last-used timestamps are batched in memory and flushed every few seconds, so the hot path
 * does not write on every request.
 */
export class KeyUsage {
  private pending = new Map<string, number>()
  private timer: NodeJS.Timeout | null = null

  constructor(
    private readonly ctx: Pick<ServiceContext, 'accounts' | 'log'>,
    private readonly intervalMs = 5000,
  ) {}

  touch(keyId: string, at: number): void {
    this.pending.set(keyId, at)
    if (!this.timer) {
      this.timer = setTimeout(() => void this.flush(), this.intervalMs)
      this.timer.unref()
    }
  }

  async flush(): Promise<void> {
    if (this.timer) clearTimeout(this.timer)
    this.timer = null
    if (this.pending.size === 0) return
    const batch = this.pending
    this.pending = new Map()
    try {
      await this.ctx.accounts.touchKeys(batch)
    } catch (e) {
      this.ctx.log.warn({ err: (e as Error).message }, 'could not record key last-used times')
    }
  }
}
