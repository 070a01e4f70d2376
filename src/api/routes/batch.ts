import { batchLstar, batchPage, batchTickers } from '../../services/analytics/batch.ts'
import { batchAnalyze } from '../../services/analytics/batch-analyze.ts'
import { batchCompletion } from '../../services/analytics/batch-completed.ts'
import { runMetered } from '../metered.ts'
import { requirePrincipal } from '../request-state.ts'
import { type RouteDeps, type RouteFile, routeFile, spanOf } from './types.ts'

/** POST /batch/lstar and POST /batch/analyze: priced per distinct ticker; each answer sends batch.completed. */
export function batchRoutes({ ctx, priced }: RouteDeps): RouteFile {
  return routeFile(import.meta.url, {
    batchLstar: async (req, reply) => {
      const b = req.body
      const p = requirePrincipal(req.principal)
      // Before metering: > 100 is TOO_MANY_TICKERS, a bad cursor a 400, and the reservation covers
      // the distinct tickers of the page.
      const page = batchPage(ctx.models.store(p.environment), batchTickers(b.tickers), b)
      const tickers = page.tickers
      const done = batchCompletion(ctx, {
        accountId: p.accountId,
        environment: p.environment,
        operation: 'batchLstar',
        requestId: String(req.id),
        tickers,
      })
      return runMetered(
        ctx,
        req,
        reply,
        priced('batchLstar'),
        done.track(() =>
          batchLstar(ctx.models, p.environment, tickers, {
            ...spanOf(b),
            threshold: b.threshold,
            fields: b.fields,
            page,
          }),
        ),
        { positions: tickers.length, tabular: true, onServed: done.onServed },
      )
    },
    batchAnalyze: async (req, reply) => {
      const b = req.body
      const p = requirePrincipal(req.principal)
      const page = batchPage(ctx.models.store(p.environment), batchTickers(b.tickers), b)
      const tickers = page.tickers
      const done = batchCompletion(ctx, {
        accountId: p.accountId,
        environment: p.environment,
        operation: 'batchAnalyze',
        requestId: String(req.id),
        tickers,
      })
      return runMetered(
        ctx,
        req,
        reply,
        priced('batchAnalyze'),
        done.track(() =>
          batchAnalyze(ctx.models, p.environment, tickers, {
            ...spanOf(b),
            metrics: b.metrics,
            page,
            asOf: b.as_of,
          }),
        ),
        { positions: tickers.length, tabular: true, onServed: done.onServed },
      )
    },
  })
}
