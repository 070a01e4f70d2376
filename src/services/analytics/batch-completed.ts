import { AppError } from '../../platform/errors.ts'
import type { CacheStatus } from '../agent-meta.ts'
import type { ServiceContext } from '../context.ts'
import type { ModelEnvironment } from '../models.ts'
import { resolveTicker } from './tickers.ts'

/**
 * `batch.completed`: batch calls answer synchronously, so the event follows the answer: once the
 * call is settled (its cost known), before the body is sent, one event goes into the account's
 * webhook outbox for the subscriptions that ask for it (signed, retried, logged like every event:
 * services/webhooks). It is written after the debit's commit, not inside it: a process that dies
 * between the two loses the event, never the charge's record.
 */

type FailureCode = 'INVALID_TICKER' | 'TICKER_NOT_FOUND'
interface BatchFailure {
  ticker: string
  code: FailureCode
}
type BatchOperation = 'batchLstar' | 'batchAnalyze'

/** The per-ticker results a batch body carries (`results`, keyed by ticker as asked). */
interface BatchResults {
  body: { results: Record<string, { status: string; code?: string }> }
}

const isFailureCode = (c: unknown): c is FailureCode => c === 'INVALID_TICKER' || c === 'TICKER_NOT_FOUND'

/** Failures in the order asked, from a computed answer's results. */
function failuresOf(tickers: readonly string[], results: BatchResults['body']['results']): BatchFailure[] {
  return tickers.flatMap((ticker) => {
    const code = results[ticker]?.code
    return results[ticker]?.status === 'error' && isFailureCode(code) ? [{ ticker, code }] : []
  })
}

/**
 * A cached answer runs no computation: its failures are the tickers that do not resolve on the
 * build the answer was made from (the cache key names the build, so it is the one served now).
 */
function unresolved(ctx: ServiceContext, env: ModelEnvironment, tickers: readonly string[]): BatchFailure[] {
  const store = ctx.models.store(env)
  return tickers.flatMap((ticker) => {
    try {
      resolveTicker(store, ticker)
      return []
    } catch (err) {
      if (err instanceof AppError && isFailureCode(err.code)) return [{ ticker, code: err.code }]
      throw err
    }
  })
}

/**
 * The `batch.completed` of one batch call: `track` wraps its computation (to keep its per-ticker
 * failures), `onServed` enqueues the event once the answer is settled. Enqueueing never fails the
 * call: the answer is paid for; a failed write is logged.
 */
export function batchCompletion(
  ctx: ServiceContext,
  call: {
    accountId: string
    environment: ModelEnvironment
    operation: BatchOperation
    requestId: string
    tickers: readonly string[]
  },
) {
  let failures: BatchFailure[] | null = null
  return {
    track<R extends BatchResults>(run: () => Promise<R>): () => Promise<R> {
      return async () => {
        const r = await run()
        failures = failuresOf(call.tickers, r.body.results)
        return r
      }
    },
    async onServed(served: { costMicros: number; cacheStatus: CacheStatus; dataAsOf: string }) {
      try {
        const failed = failures ?? unresolved(ctx, call.environment, call.tickers)
        await ctx.accounts.webhooks().enqueueEvent(
          call.accountId,
          'batch.completed',
          {
            operation: call.operation,
            request_id: call.requestId,
            data_as_of: served.dataAsOf,
            cache_status: served.cacheStatus,
            positions: call.tickers.length,
            positions_ok: call.tickers.length - failed.length,
            positions_failed: failed.length,
            // Rendered as cost_usd on the wire (services/webhooks/events.ts).
            cost_micros: served.costMicros,
            failures: failed,
          },
          ctx.now(),
        )
      } catch (err) {
        ctx.log.error(
          { err: (err as Error).message, request_id: call.requestId },
          'batch.completed not enqueued',
        )
      }
    },
  }
}
