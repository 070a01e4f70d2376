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
 * Authenticated keys are remembered for a moment so the hot path neither hits the database nor
 * computes the HMAC on every request: entries are keyed by the presented key itself and serve
 * for KEY_CACHE_TTL_MS. So the plaintext of a recently used key stays in this process's memory
 * until its entry is swept (expired entries go on the next cache miss; at most KEY_CACHE_MAX
 * entries) — the same process that receives it in every request header. A revocation made by
 * this process applies at once (`forgetKey`, which also keeps a lookup in flight from caching
 * what it read before); one made elsewhere (another node, the operator CLI) applies within
 * KEY_CACHE_TTL_MS. Expiry is checked on every request against the cached record. A hit skips the
 * format and checksum checks too: only a key that passed them (and the lookup) is ever cached.
 *
 * A hit older than KEY_REFRESH_AFTER_MS looks the key up again in the background while its request
 * goes on: a key in steady use is re-read about once a TTL without any request waiting for the
 * database, and an entry is still never served past KEY_CACHE_TTL_MS without a lookup.
 */
export const KEY_CACHE_TTL_MS = 2000
const KEY_REFRESH_AFTER_MS = KEY_CACHE_TTL_MS / 2
const KEY_CACHE_MAX = 10_000
interface CachedKey {
  key: ApiKeyRecord
  /** The principal of a live key, shared by its requests (never mutated). */
  principal: Principal
  at: number
}
interface KeyCache {
  entries: Map<string, CachedKey>
  /** Presented keys being looked up again in the background. */
  refreshing: Set<string>
  /** Bumped by `forgetKey`: a lookup that started before caches nothing. */
  generation: number
}
const keyCaches = new WeakMap<object, KeyCache>()

function keyCacheOf(ctx: Pick<ServiceContext, 'accounts'>): KeyCache {
  let c = keyCaches.get(ctx.accounts)
  if (!c) {
    c = { entries: new Map(), refreshing: new Set(), generation: 0 }
    keyCaches.set(ctx.accounts, c)
  }
  return c
}

/** Drops expired entries (oldest first: insertion order is time order). */
function sweep(cache: Map<string, CachedKey>, now: number): void {
  for (const [k, v] of cache) {
    if (now - v.at < KEY_CACHE_TTL_MS && cache.size < KEY_CACHE_MAX) break
    cache.delete(k)
  }
}

function principalOf(key: ApiKeyRecord): Principal {
  return {
    keyId: key.id,
    accountId: key.accountId,
    environment: key.environment,
    kind: key.kind,
    tier: key.tier,
  }
}

/** The cached entry of a presented key, if fresh (an ageing one is looked up again meanwhile). */
function cachedKey(ctx: ServiceContext, bearer: string, now: number): CachedKey | null {
  const hit = keyCacheOf(ctx).entries.get(bearer)
  if (!hit || now - hit.at >= KEY_CACHE_TTL_MS) return null
  if (now - hit.at >= KEY_REFRESH_AFTER_MS) refreshAhead(ctx, bearer, now)
  return hit
}

function refreshAhead(ctx: ServiceContext, bearer: string, now: number): void {
  const { refreshing } = keyCacheOf(ctx)
  if (refreshing.has(bearer)) return
  refreshing.add(bearer)
  // A key found revoked or gone leaves the cache; a failed read leaves the entry to its TTL.
  lookupKey(ctx, bearer, now)
    .catch(() => undefined)
    .finally(() => refreshing.delete(bearer))
}

/** Format, checksum, then the database (by HMAC); remembers a live key. */
async function lookupKey(ctx: ServiceContext, bearer: string, now: number): Promise<ApiKeyRecord> {
  if (!parseApiKey(bearer))
    throw new AppError('INVALID_KEY', 'The API key is malformed or its checksum does not match')
  const state = keyCacheOf(ctx)
  const generation = state.generation
  const key = await ctx.accounts.findKeyByHash(hashKey(ctx.secrets.pepper, bearer))
  const cache = state.entries
  cache.delete(bearer)
  sweep(cache, now)
  if (!key) throw new AppError('INVALID_KEY', 'Unknown API key')
  // Only live keys are remembered: unknown or revoked answers are cheap errors anyway; nor is
  // what was read before a revocation made here meanwhile.
  if (key.revokedAt === null && state.generation === generation)
    cache.set(bearer, { key, principal: principalOf(key), at: now })
  return key
}

/** Drops a key from this process's cache (after a revocation through this process). */
export function forgetKey(ctx: Pick<ServiceContext, 'accounts'>, keyId: string): void {
  const state = keyCaches.get(ctx.accounts)
  if (!state) return
  state.generation++
  for (const [k, v] of state.entries) if (v.key.id === keyId) state.entries.delete(k)
}

/**
 * Resolves `Authorization: Bearer <key>` to a principal. Format and checksum are checked before
 * any lookup, so garbage never reaches the database; each failure has its own code.
 */
export async function authenticateKey(ctx: ServiceContext, bearer: string | null): Promise<Principal> {
  if (bearer === null) throw new AppError('MISSING_CREDENTIALS', 'Send Authorization: Bearer <API_KEY>')
  const now = Date.now()
  const hit = cachedKey(ctx, bearer, now)
  const key = hit ? hit.key : await lookupKey(ctx, bearer, now)
  if (key.revokedAt !== null) throw new AppError('REVOKED_KEY', 'This API key has been revoked')
  if (key.expiresAt !== null && key.expiresAt <= ctx.now())
    throw new AppError('EXPIRED_KEY', 'This API key has expired')
  return hit ? hit.principal : principalOf(key)
}

/** This process's KeyUsage batchers, by account store (see flushKeyUsage). */
const keyUsages = new WeakMap<object, Set<KeyUsage>>()

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
  ) {
    let all = keyUsages.get(ctx.accounts)
    if (!all) {
      all = new Set()
      keyUsages.set(ctx.accounts, all)
    }
    all.add(this)
  }

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

/**
 * Writes this process's pending last-used times now, so a view that shows them (the grant list)
 * includes the calls its caller just made; other nodes' follow within their flush interval.
 */
export async function flushKeyUsage(ctx: Pick<ServiceContext, 'accounts'>): Promise<void> {
  await Promise.all([...(keyUsages.get(ctx.accounts) ?? [])].map((u) => u.flush()))
}
