import { randomBytes } from 'node:crypto'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import type { App } from '../../src/api/app.ts'
import { createClient, type Erm3Client, type Transport } from '../../src/contract/client.ts'
import { ModelStore } from '../../src/engine/model-store/reader.ts'
import { createServerApp } from '../../src/main/app.ts'
import { loadConfig } from '../../src/platform/config.ts'
import { createLogger, type Logger } from '../../src/platform/logger.ts'
import { createOutboxMailer } from '../../src/platform/mail.ts'
import { createAccountWithBalance, createKeyFor } from '../../src/services/account/admin.ts'
import type { ServiceContext } from '../../src/services/context.ts'
import { signSession } from '../../src/services/identity/session.ts'
import { ADDRESS_BUCKET } from '../../src/services/limits.ts'
import { ModelRegistry } from '../../src/services/models.ts'
import { withBalanceSnapshots } from '../../src/store/accounts/balance-snapshot.ts'
import { createPostgresAccountStore } from '../../src/store/accounts/postgres.ts'
import { createSqliteAccountStore } from '../../src/store/accounts/sqlite.ts'
import type { AccountStore, RateTier } from '../../src/store/accounts/types.ts'
import { createFallbackLimits } from '../../src/store/limits/fallback.ts'
import { createMemoryLimits } from '../../src/store/limits/memory.ts'
import { createRedisLimits } from '../../src/store/limits/redis.ts'
import type { LimitsBackend, RateLimiter } from '../../src/store/limits/types.ts'
import { fixtureStores } from './fixture-store.ts'

export type DbKind = 'sqlite' | 'postgres'
export type LimitsKind = 'memory' | 'redis' | 'dead-redis'

export interface TestApp {
  /** The node's app (REST with MCP mounted), including its count of open MCP sessions. */
  app: Awaited<ReturnType<typeof createServerApp>>
  ctx: ServiceContext
  client: Erm3Client
  transport: Transport
  home: string
  /** Moves the service clock (expiry, rate refill) without sleeping. */
  clock: { offsetMs: number }
  account(balanceUsd?: number, email?: string): Promise<string>
  key(
    accountId: string,
    opts?: { env?: 'live' | 'test'; tier?: RateTier; expiresAt?: number | null },
  ): Promise<string>
  outbox(): { to: string; subject: string; text: string }[]
  /** A second connection to the same database, as the operator CLI or another node has (caller closes). */
  anotherStore(): AccountStore
  /** Serves the app on a real 127.0.0.1 listener (for clients that need a URL); returns its origin. */
  listen(): Promise<string>
  /**
   * Another node of the same deployment (PostgreSQL + Redis only): its own app, database
   * connection and Redis connection over the same schema, key prefix and secrets; nothing else shared.
   */
  anotherNode(): Promise<{
    app: Awaited<ReturnType<typeof createServerApp>>
    listen(): Promise<string>
    close(): Promise<void>
  }>
  close(): Promise<void>
}

export const backendsAvailable = {
  postgres: process.env.DATABASE_URL ? null : 'DATABASE_URL is not set (CI exports it)',
  redis: process.env.REDIS_URL ? null : 'REDIS_URL is not set (CI exports it)',
}

/** A deployment a cross-backend suite runs on, skipped (with the reason) when its servers are absent. */
export interface BackendPair {
  name: string
  db: DbKind
  limits: LimitsKind
  skip: string | null
}

/** The embedded default and the scale-out pair: every cross-backend suite runs on both. */
export const BACKEND_PAIRS: readonly BackendPair[] = [
  { name: 'SQLite + in-process limits', db: 'sqlite', limits: 'memory', skip: null },
  {
    name: 'PostgreSQL + Redis',
    db: 'postgres',
    limits: 'redis',
    skip: backendsAvailable.postgres ?? backendsAvailable.redis,
  },
]

async function openDb(
  kind: DbKind,
  home: string,
): Promise<{ store: AccountStore; another(): AccountStore; drop(): Promise<void> }> {
  if (kind === 'sqlite') {
    const another = () => createSqliteAccountStore(join(home, 'erm3.db'))
    return { store: another(), another, drop: async () => undefined }
  }
  const url = process.env.DATABASE_URL as string
  const schema = `t_${randomBytes(6).toString('hex')}`
  const another = () => createPostgresAccountStore(url, { schema })
  return {
    store: another(),
    another,
    async drop() {
      const c = new pg.Client({ connectionString: url })
      await c.connect()
      await c.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`)
      await c.end()
    },
  }
}

/**
 * Tests move the service clock to expire codes, tokens and sessions, and back again, while making
 * requests without a key. Each of those takes a token of its address's general limit, and a
 * bucket written at a moved clock would stay empty for as long as the jump once the clock is
 * back. So here that one limit runs on real time (test/api/rate-headers.test.ts exhausts it with
 * a small configured burst instead of moving time); keys' buckets follow the service clock.
 */
function addressLimitOnRealTime(limits: LimitsBackend): LimitsBackend {
  const rate = limits.rate
  const at = (key: string, now: number) => (key.startsWith(ADDRESS_BUCKET) ? Date.now() : now)
  ;(limits as { rate: RateLimiter }).rate = {
    take: (key, rule, now, cost) => rate.take(key, rule, at(key, now), cost),
  }
  return limits
}

function openLimits(kind: LimitsKind, prefix: string): LimitsBackend {
  if (kind === 'memory') return createMemoryLimits()
  // A Redis that is down: the node must fall back to local limits and say so in /health.
  if (kind === 'dead-redis')
    return createFallbackLimits(createRedisLimits('redis://127.0.0.1:1'), createMemoryLimits())
  return createRedisLimits(process.env.REDIS_URL as string, { prefix })
}

export function injectTransport(app: App): Transport {
  return async (req) => {
    const res = await app.fastify.inject({
      method: req.method as 'GET',
      url: req.url,
      headers: req.headers,
      ...(req.body !== undefined ? { payload: req.body } : {}),
    })
    const headers: Record<string, string> = {}
    for (const [k, v] of Object.entries(res.headers)) if (v !== undefined) headers[k] = String(v)
    return { status: res.statusCode, headers, body: res.body }
  }
}

/** The real application over real backends (SQLite or PostgreSQL, memory or Redis) and the fixture stores. */
export async function startTestApp(
  opts: {
    db?: DbKind
    limits?: LimitsKind
    env?: Record<string, string>
    /** A model store for live keys instead of the fixture's (e.g. one built from real prices). */
    liveStore?: string
    /** The app's logger (default: silent); a suite that checks its logs passes one writing to memory. */
    log?: Logger
  } = {},
): Promise<TestApp> {
  const fx = await fixtureStores()
  const home = mkdtempSync(join(tmpdir(), 'erm3-app-'))
  const config = loadConfig({ ERM3_HOME: home, PUBLIC_URL: 'http://erm3.test', ...opts.env })
  const log = opts.log ?? createLogger('silent')
  const db = await openDb(opts.db ?? 'sqlite', home)
  await db.store.migrate()
  const limitsPrefix = `erm3t:${randomBytes(6).toString('hex')}:`
  const limits = addressLimitOnRealTime(openLimits(opts.limits ?? 'memory', limitsPrefix))
  const clock = { offsetMs: 0 }
  const models = new ModelRegistry(
    await ModelStore.open(opts.liveStore ?? fx.live),
    await ModelStore.open(fx.sandbox),
    config.server.publicUrl,
  )
  const ctx: ServiceContext = {
    config: config.server,
    secrets: {
      pepper: randomBytes(32).toString('base64url'),
      sessionSecret: randomBytes(32).toString('base64url'),
      // As embedded mode has it (generated on first run): webhooks are configured.
      webhookKey: randomBytes(32).toString('base64url'),
    },
    // As the server has it (main/context.ts): the balance view may read per-process snapshots.
    accounts: withBalanceSnapshots(db.store),
    limits,
    models,
    mailer: createOutboxMailer(home, log),
    log,
    now: () => Date.now() + clock.offsetMs,
  }
  // Tests stop at once: a stream a test aborted must not hold the close for Node's minute.
  const app = await createServerApp(ctx, { drainMs: 200 })
  const transport = injectTransport(app)
  let n = 0
  return {
    app,
    ctx,
    client: createClient(transport),
    transport,
    home,
    clock,
    async account(balanceUsd = 0, email?: string) {
      const r = await createAccountWithBalance(ctx, {
        email: email ?? `user${++n}-${randomBytes(3).toString('hex')}@example.com`,
        balanceUsd,
      })
      return r.account.id
    },
    async key(accountId, o = {}) {
      const k = await createKeyFor(ctx, {
        accountId,
        environment: o.env ?? 'live',
        tier: o.tier,
        expiresAt: o.expiresAt ?? null,
      })
      return k.apiKey
    },
    outbox() {
      try {
        return readFileSync(join(home, 'outbox', 'mail.jsonl'), 'utf8')
          .trim()
          .split('\n')
          .map((l) => JSON.parse(l))
      } catch {
        return []
      }
    },
    anotherStore: () => db.another(),
    listen: () => app.fastify.listen({ port: 0, host: '127.0.0.1' }),
    async anotherNode() {
      if (opts.db !== 'postgres' || opts.limits !== 'redis')
        throw new Error('another node needs PostgreSQL + Redis')
      const accounts = db.another()
      const nodeLimits = addressLimitOnRealTime(openLimits('redis', limitsPrefix))
      const node = await createServerApp(
        { ...ctx, accounts: withBalanceSnapshots(accounts), limits: nodeLimits },
        { drainMs: 200 },
      )
      return {
        app: node,
        listen: () => node.fastify.listen({ port: 0, host: '127.0.0.1' }),
        async close() {
          await node.close()
          await Promise.allSettled([accounts.close(), nodeLimits.close()])
        },
      }
    },
    async close() {
      await app.close()
      await Promise.allSettled([db.store.close(), limits.close(), models.close()])
      await db.drop()
      rmSync(home, { recursive: true, force: true })
    },
  }
}

/** An answer of `sessionApi`: status, raw text, parsed JSON ({} when the body is empty), headers. */
export interface SessionAnswer {
  status: number
  text: string
  // biome-ignore lint/suspicious/noExplicitAny: tests read whatever fields the answer has
  json: Record<string, any>
  headers: Record<string, string | string[] | number | undefined>
}

/**
 * Requests as a signed-in user of the dashboard makes them (a session, here as a bearer), through
 * the app in-process. Each request signs a fresh session at the service clock, so a test that
 * moves the clock never sends an expired one; `who` null sends none. `app` is read per request
 * (suites start theirs in `before`).
 */
export function sessionApi(app: () => TestApp) {
  return async (
    who: { id: string; email: string } | null,
    method: string,
    url: string,
    body?: unknown,
  ): Promise<SessionAnswer> => {
    const t = app()
    const headers: Record<string, string> = {}
    if (who)
      headers.authorization = `Bearer ${await signSession(t.ctx, { accountId: who.id, email: who.email })}`
    const res = await t.app.fastify.inject({
      method: method as 'GET',
      url,
      headers,
      ...(body !== undefined ? { payload: body as Record<string, unknown> } : {}),
    })
    return {
      status: res.statusCode,
      text: res.body,
      json: res.body ? (JSON.parse(res.body) as Record<string, unknown>) : {},
      headers: res.headers,
    }
  }
}
