/**
 * New builds without restarts: a serving node polls the live store's CURRENT (local or remote)
 * and, when it names another build, opens that build in the background, checks it, and swaps it
 * in (ModelRegistry.replace: requests already running finish on the build they started with). A
 * build that fails to open or to read is refused — the node keeps serving the one it has, and
 * /health shows the refusal — and is not retried until CURRENT changes again. After a swap,
 * model.updated is enqueued once per new data_as_of across every node (announceServedModel).
 */

import type { ModelStore } from '../engine/model-store/reader.ts'
import { STORE_FIELDS } from '../engine/model-store/reader.ts'
import type { Logger } from '../platform/logger.ts'
import type { ServiceContext } from './context.ts'
import { announceServedModel } from './webhooks/dispatcher.ts'

/** What reload needs of the store's location (engine/model-store/source.ts). */
export interface ReloadSource {
  readonly url: string
  current(): Promise<string | null>
  open(build: string): Promise<ModelStore>
}

type ReloadOutcome = 'unchanged' | 'loaded' | 'refused' | 'unreachable'

export interface ModelReloader {
  /** One poll now (the timer calls it too); concurrent calls share one. */
  check(): Promise<ReloadOutcome>
  stop(): Promise<void>
}

/**
 * Reads a little of every kind the API reads (a symbol's column, a day's row, its latest state,
 * the 1-D arrays) so a build with missing or truncated chunks is refused before it serves.
 */
async function validate(store: ModelStore): Promise<void> {
  const n = store.symbols.length
  if (n === 0 || store.calendar.length === 0) throw new Error('the build has no symbols or no days')
  const last = store.calendar.length - 1
  for (const symbol of [0, Math.floor(n / 2), n - 1]) {
    await store.history(symbol, ['price_close', 'returns_gross'], Math.max(0, last - 300))
    await store.latest(symbol, STORE_FIELDS)
  }
  await store.crossSection('price_close', last)
  await store.crossSection('l3_res_er', last)
}

export function startModelReload(
  ctx: ServiceContext,
  source: ReloadSource,
  opts: { intervalMs: number; log: Logger; afterPoll?: () => Promise<void> },
): ModelReloader {
  const { log } = opts
  let refused: string | null = null
  let running: Promise<ReloadOutcome> | null = null
  let stopped = false
  let timer: NodeJS.Timeout | null = null

  const once = async (): Promise<ReloadOutcome> => {
    let id: string | null
    try {
      id = await source.current()
    } catch (e) {
      log.warn({ store: source.url, err: (e as Error).message }, 'model store: CURRENT could not be read')
      return 'unreachable'
    }
    const served = ctx.models.peek('live')
    if (id === null || id === served?.buildId || id === refused) return 'unchanged'
    let next: ModelStore | null = null
    try {
      next = await source.open(id)
      await validate(next)
    } catch (e) {
      const error = (e as Error).message
      await next?.close().catch(() => undefined)
      // An unreachable store is not the build's fault: try it again at the next poll.
      if ((e as { code?: string }).code !== 'UNAVAILABLE') refused = id
      ctx.models.recordReloadFailure({ build: id, error, at: ctx.now() })
      log.error(
        { store: source.url, build: id, err: error },
        'model store: new build refused; serving the previous one',
      )
      return 'refused'
    }
    if (stopped) {
      await next.close()
      return 'unchanged'
    }
    ctx.models.replace('live', next)
    log.info(
      { store: source.url, build: id, data_as_of: next.dataAsOf, previous: served?.buildId ?? null },
      'model store: new build serving',
    )
    try {
      if (await announceServedModel(ctx)) log.info({ data_as_of: next.dataAsOf }, 'model.updated enqueued')
    } catch (e) {
      log.error({ err: (e as Error).message }, 'model.updated could not be recorded')
    }
    return 'loaded'
  }

  const check = (): Promise<ReloadOutcome> => {
    // The poll also reads what rides along with CURRENT (the update status) for /health.
    running ??= once()
      .then(async (outcome) => {
        await opts
          .afterPoll?.()
          .catch((e: Error) => log.warn({ err: e.message }, 'model store: poll follow-up failed'))
        return outcome
      })
      .finally(() => {
        running = null
      })
    return running
  }

  const arm = () => {
    if (stopped || opts.intervalMs <= 0) return
    timer = setTimeout(() => {
      void check().finally(arm)
    }, opts.intervalMs)
    timer.unref()
  }
  arm()

  return {
    check,
    async stop() {
      stopped = true
      if (timer) clearTimeout(timer)
      await running?.catch(() => undefined)
    },
  }
}
