import { join } from 'node:path'
import type { App } from '../api/app.ts'
import { type Config, loadConfig } from '../platform/config.ts'
import { AppError } from '../platform/errors.ts'
import { createLogger, type Logger } from '../platform/logger.ts'
import { type Progress, silentProgress } from '../platform/progress.ts'
import { parseUpdateAt, type UpdateAt } from '../platform/update-at.ts'
import { purgeExpiredSecrets } from '../services/identity/retention.ts'
import { startModelReload } from '../services/model-reload.ts'
import { createOperatorAlerts, type OperatorAlerts } from '../services/updates/alert.ts'
import { createDataWatch, readUpdateStatus } from '../services/updates/data-status.ts'
import { createFileLease, createPostgresLease } from '../services/updates/lease.ts'
import {
  startUpdateScheduler,
  type UpdateRunner,
  type UpdateScheduler,
} from '../services/updates/scheduler.ts'
import { announceServedModel, createDispatcher, purgeDeliveryLog } from '../services/webhooks/dispatcher.ts'
import { createServerApp } from './app.ts'
import { type BuiltContext, buildContext, homePaths, liveStoreSource, openModel } from './context.ts'
import { ensureSandbox } from './sandbox.ts'

/** A reservation older than this belongs to a request that died (requests take milliseconds). */
const STALE_RESERVATION_MS = 10 * 60_000
const RECONCILE_EVERY_MS = 5 * 60_000

export interface RunningServer {
  app: App
  url: string
  /** The daily update's scheduler when --update-at or ERM3_UPDATE_AT is set. */
  updates: UpdateScheduler | null
  close(): Promise<void>
}

export interface ServeOptions {
  store?: string
  progress?: Progress
  say?: (line: string) => void
  log?: Logger
  /** `--update-at` (wins over ERM3_UPDATE_AT). */
  updateAt?: string
  /** What a scheduled update runs; required when a schedule is set (src/main/update-runner.ts). */
  updateRunner?: UpdateRunner
  /** Makes the runner for the live store, called only when a schedule is set (the CLI passes createUpdateRunner). */
  makeUpdateRunner?: (store: string) => UpdateRunner
}

/** The schedule from the flag or the variable, checked before any slow start-up work. */
function scheduleOf(config: Config, opts: ServeOptions, store: string): UpdateAt | null {
  const raw = opts.updateAt ?? config.server.updates.at
  if (raw === null || raw === undefined) return null
  const at = parseUpdateAt(raw, opts.updateAt !== undefined ? '--update-at' : 'ERM3_UPDATE_AT')
  opts.updateRunner ??= opts.makeUpdateRunner?.(store)
  if (!opts.updateRunner)
    throw new AppError('CONFIG_INVALID', 'a scheduled update needs the update pipeline, and none was given')
  return at
}

/**
 * Keeping the data current: /health's data component read on every reload poll (with the stale
 * alert), and the daily update under the lease when a schedule is set.
 */
function startDataUpkeep(
  config: Config,
  built: BuiltContext,
  at: UpdateAt | null,
  opts: ServeOptions,
  log: Logger,
) {
  const { ctx } = built
  const u = config.server.updates
  const alerts: OperatorAlerts = createOperatorAlerts({
    webhookUrl: u.operatorWebhookUrl,
    email: u.operatorEmail,
    mailer: ctx.mailer,
    log,
  })
  const status = { lastUpdate: null, readError: null, scheduled: at !== null }
  ctx.dataStatus = status
  const watch = createDataWatch({
    status,
    read: () => readUpdateStatus(built.liveSource),
    dataAsOf: () => ctx.models.peek('live')?.dataAsOf ?? null,
    staleAfterSessions: u.staleAfterSessions,
    alert: (a) => alerts.send(a),
    log,
    now: ctx.now,
  })
  const db = config.server.databaseUrl
  const scheduler =
    at && opts.updateRunner
      ? startUpdateScheduler({
          at,
          run: opts.updateRunner,
          lease: db ? createPostgresLease(db) : createFileLease(join(config.home, 'update.lease')),
          log,
          alert: (a) => alerts.send(a),
          now: ctx.now,
        })
      : null
  return { watch, scheduler }
}

/**
 * `erm3 serve`: the model store from --store, else ERM3_STORE, else ERM3_HOME/store; the
 * sandbox under ERM3_HOME (built on first start); backends from the environment.
 */
export async function serve(
  env: Record<string, string | undefined>,
  opts: ServeOptions = {},
): Promise<RunningServer> {
  const config: Config = loadConfig(env)
  const log = opts.log ?? createLogger(config.logLevel)
  const paths = homePaths(config.home)
  const store = opts.store ?? config.server.store ?? paths.store
  const at = scheduleOf(config, opts, store)
  // Refuse to boot before any slow work when the live store is missing or unreadable.
  const probe = liveStoreSource(config, store)
  try {
    await (await openModel(probe, 'the model store')).close()
  } finally {
    probe.close()
  }
  await ensureSandbox(paths, opts.progress ?? silentProgress, opts.say)
  const built = await buildContext(config, { store, sandboxStore: paths.sandboxStore, log })
  const { ctx } = built
  const reconcile = async () => {
    try {
      const r = await ctx.accounts.reconcile(ctx.now() - STALE_RESERVATION_MS)
      if (r.releasedReservations || r.correctedBalances) log.warn(r, 'ledger reconciled')
    } catch (e) {
      log.error({ err: (e as Error).message }, 'ledger reconcile failed')
    }
    try {
      const p = await purgeExpiredSecrets(ctx)
      if (p.loginTokens || p.codes || p.refreshTokens || p.sessions)
        log.info(p, 'expired one-time secrets and sessions deleted')
    } catch (e) {
      log.error({ err: (e as Error).message }, 'purge of expired secrets failed')
    }
    try {
      const n = await purgeDeliveryLog(ctx)
      if (n) log.info({ deliveries: n }, 'webhook deliveries older than 30 days deleted')
    } catch (e) {
      log.error({ err: (e as Error).message }, 'purge of the webhook delivery log failed')
    }
  }
  await reconcile()
  const timer = setInterval(() => void reconcile(), RECONCILE_EVERY_MS)
  timer.unref()
  // Webhooks: model.updated once per new data_as_of (across nodes), then the outbox dispatcher.
  try {
    if (await announceServedModel(ctx))
      log.info({ data_as_of: ctx.models.peek('live')?.dataAsOf }, 'model.updated enqueued')
  } catch (e) {
    log.error({ err: (e as Error).message }, 'model.updated could not be recorded')
  }
  if (!ctx.secrets.webhookKey)
    log.warn('ERM3_WEBHOOK_KEY is not set: webhook endpoints answer 503 (alert e-mails still go out)')
  const dispatcher = createDispatcher(ctx)
  dispatcher.start()
  // New builds without restarts: poll CURRENT (ERM3_STORE_POLL_SECONDS; 0 = off).
  const upkeep = startDataUpkeep(config, built, at, opts, log)
  await upkeep.watch.refresh()
  const reloader = startModelReload(ctx, built.liveSource, {
    intervalMs: config.server.storeAccess.pollSeconds * 1000,
    log,
    afterPoll: () => upkeep.watch.refresh(),
  })
  const app = await createServerApp(ctx)
  const address = await app.fastify.listen({ host: config.server.host, port: config.server.port })
  log.info(
    {
      address,
      public_url: config.server.publicUrl,
      store,
      data_as_of: ctx.models.peek('live')?.dataAsOf,
      database: ctx.accounts.backend,
      limits: ctx.limits.backend,
      mail: ctx.mailer.kind,
      update_at: at
        ? `${String(at.hour).padStart(2, '0')}:${String(at.minute).padStart(2, '0')} ${at.zone}`
        : null,
      next_update: upkeep.scheduler?.nextAt() ? new Date(upkeep.scheduler.nextAt() ?? 0).toISOString() : null,
    },
    'erm3 serving',
  )
  let closing: Promise<void> | null = null
  const close = () => {
    closing ??= (async () => {
      clearInterval(timer)
      await upkeep.scheduler?.stop()
      await reloader.stop()
      await dispatcher.stop()
      await app.close()
      await built.close()
    })()
    return closing
  }
  return { app, url: address, updates: upkeep.scheduler, close }
}

/** Runs until SIGINT/SIGTERM, then drains in-flight requests and closes the backends. */
export async function serveUntilSignal(
  env: Record<string, string | undefined>,
  opts: ServeOptions = {},
): Promise<void> {
  const server = await serve(env, opts)
  opts.say?.(`erm3: serving on ${server.url} (Ctrl-C to stop)`)
  await new Promise<void>((resolve) => {
    const stop = () => {
      server.close().then(resolve, resolve)
    }
    process.once('SIGINT', stop)
    process.once('SIGTERM', stop)
  })
}
