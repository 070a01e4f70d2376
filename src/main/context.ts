import { join } from 'node:path'
import { ModelStore } from '../engine/model-store/reader.ts'
import { type BuildSource, openBuildSource } from '../engine/model-store/source.ts'
import type { Config } from '../platform/config.ts'
import { AppError } from '../platform/errors.ts'
import { createLogger, type Logger } from '../platform/logger.ts'
import { createOutboxMailer, createSmtpMailer, type Mailer } from '../platform/mail.ts'
import { loadOrCreateSecrets, loadOrCreateWebhookKey, type Secrets } from '../platform/secrets.ts'
import type { ServiceContext } from '../services/context.ts'
import { ModelRegistry } from '../services/models.ts'
import { withBalanceSnapshots } from '../store/accounts/balance-snapshot.ts'
import { createPostgresAccountStore } from '../store/accounts/postgres.ts'
import { createSqliteAccountStore } from '../store/accounts/sqlite.ts'
import type { AccountStore } from '../store/accounts/types.ts'
import { createFallbackLimits } from '../store/limits/fallback.ts'
import { createMemoryLimits } from '../store/limits/memory.ts'
import { createRedisLimits } from '../store/limits/redis.ts'
import type { LimitsBackend } from '../store/limits/types.ts'

/** Where the embedded mode keeps its pieces under ERM3_HOME. */
export const homePaths = (home: string) => ({
  dataset: join(home, 'dataset'),
  store: join(home, 'store'),
  database: join(home, 'erm3.db'),
  sandboxDataset: join(home, 'sandbox', 'dataset'),
  sandboxStore: join(home, 'sandbox', 'store'),
})

export async function secretsFor(config: Config): Promise<Secrets> {
  const s = config.server
  // Scale-out nodes share ERM3_WEBHOOK_KEY (none: webhooks answer 503); embedded mode keeps its own.
  const webhookKey = s.webhookKey ?? (s.databaseUrl ? null : await loadOrCreateWebhookKey(config.home))
  if (s.pepper && s.sessionSecret) return { pepper: s.pepper, sessionSecret: s.sessionSecret, webhookKey }
  return { ...(await loadOrCreateSecrets(config.home)), webhookKey }
}

/** The account store the configuration asks for: PostgreSQL with DATABASE_URL, else SQLite under ERM3_HOME. */
export async function openAccounts(config: Config): Promise<AccountStore> {
  const store = config.server.databaseUrl
    ? createPostgresAccountStore(config.server.databaseUrl)
    : createSqliteAccountStore(homePaths(config.home).database)
  await store.migrate()
  return store
}

/** Redis with a local fallback (never fail open silently), or in-process limits. */
export function openLimits(config: Config, log: Logger): LimitsBackend {
  const local = createMemoryLimits()
  if (!config.server.redisUrl) return local
  return createFallbackLimits(createRedisLimits(config.server.redisUrl), local, (m) => log.warn(m))
}

export async function openModel(dir: string | BuildSource, what: string): Promise<ModelStore> {
  try {
    return await (typeof dir === 'string' ? ModelStore.open(dir) : dir.open())
  } catch (e) {
    throw new AppError('CONFIG_INVALID', `${what}: ${(e as Error).message}`)
  }
}

/** The live store's location (ERM3_STORE: a directory, s3://… or http(s)://…) with its reader options. */
export function liveStoreSource(config: Config, store: string): BuildSource {
  const a = config.server.storeAccess
  return openBuildSource(store, { s3: a.s3, timeoutMs: a.timeoutMs, cacheBytes: a.cacheMb * 2 ** 20 })
}

export interface BuiltContext {
  ctx: ServiceContext
  /** Where the live store comes from (hot reload polls it). */
  liveSource: BuildSource
  close(): Promise<void>
}

/** Builds every backend the configuration names; the only place concrete implementations meet. */
export async function buildContext(
  config: Config,
  opts: { store: string; sandboxStore: string; log?: Logger; now?: () => number },
): Promise<BuiltContext> {
  const log = opts.log ?? createLogger(config.logLevel)
  const secrets = await secretsFor(config)
  const liveSource = liveStoreSource(config, opts.store)
  const live = await openModel(liveSource, 'the model store')
  const sandbox = await openModel(opts.sandboxStore, 'the sandbox store')
  // The server's views may read balances from per-process snapshots; the operator CLI reads exact.
  const accounts = withBalanceSnapshots(await openAccounts(config))
  const limits = openLimits(config, log)
  const mailer: Mailer = config.server.smtpUrl
    ? createSmtpMailer(config.server.smtpUrl, config.server.mailFrom, log)
    : createOutboxMailer(config.home, log)
  const models = new ModelRegistry(live, sandbox, config.server.publicUrl)
  const ctx: ServiceContext = {
    config: config.server,
    secrets,
    accounts,
    limits,
    models,
    mailer,
    log,
    now: opts.now ?? Date.now,
  }
  return {
    ctx,
    liveSource,
    async close() {
      await Promise.allSettled([accounts.close(), limits.close(), models.close()])
      liveSource.close()
    },
  }
}

/** What the operator CLI needs: the same database and pepper as the server, no model store. */
export async function openOperator(
  env: Record<string, string | undefined>,
): Promise<{ ctx: Pick<ServiceContext, 'accounts' | 'secrets' | 'now'>; close(): Promise<void> }> {
  const { loadConfig } = await import('../platform/config.ts')
  const config = loadConfig(env)
  const accounts = await openAccounts(config)
  const secrets = await secretsFor(config)
  return { ctx: { accounts, secrets, now: Date.now }, close: () => accounts.close() }
}
