import type { App } from '../api/app.ts'
import { type Config, loadConfig } from '../platform/config.ts'
import { createLogger, type Logger } from '../platform/logger.ts'
import { type Progress, silentProgress } from '../platform/progress.ts'
import { purgeExpiredSecrets } from '../services/identity/retention.ts'
import { startModelReload } from '../services/model-reload.ts'
import { announceServedModel, createDispatcher, purgeDeliveryLog } from '../services/webhooks/dispatcher.ts'
import { createServerApp } from './app.ts'
import { buildContext, homePaths, liveStoreSource, openModel } from './context.ts'
import { ensureSandbox } from './sandbox.ts'

/** A reservation older than this belongs to a request that died (requests take milliseconds). */
const STALE_RESERVATION_MS = 10 * 60_000
const RECONCILE_EVERY_MS = 5 * 60_000

export interface RunningServer {
  app: App
  url: string
  close(): Promise<void>
}

/**
 * `erm3 serve`: the model store from --store, else ERM3_STORE, else ERM3_HOME/store; the
 * sandbox under ERM3_HOME (built on first start); backends from the environment.
 */
export async function serve(
  env: Record<string, string | undefined>,
  opts: { store?: string; progress?: Progress; say?: (line: string) => void; log?: Logger } = {},
): Promise<RunningServer> {
  const config: Config = loadConfig(env)
  const log = opts.log ?? createLogger(config.logLevel)
  const paths = homePaths(config.home)
  const store = opts.store ?? config.server.store ?? paths.store
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
  const reloader = startModelReload(ctx, built.liveSource, {
    intervalMs: config.server.storeAccess.pollSeconds * 1000,
    log,
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
    },
    'erm3 serving',
  )
  let closing: Promise<void> | null = null
  const close = () => {
    closing ??= (async () => {
      clearInterval(timer)
      await reloader.stop()
      await dispatcher.stop()
      await app.close()
      await built.close()
    })()
    return closing
  }
  return { app, url: address, close }
}

/** Runs until SIGINT/SIGTERM, then drains in-flight requests and closes the backends. */
export async function serveUntilSignal(
  env: Record<string, string | undefined>,
  opts: { store?: string; progress?: Progress; say?: (line: string) => void } = {},
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
