import { batchLstar, batchTickers } from '../../services/analytics/batch.ts'
import { batchAnalyze } from '../../services/analytics/batch-analyze.ts'
import { runMetered } from '../metered.ts'
import { requirePrincipal } from '../request-state.ts'
import { type RouteDeps, type RouteFile, routeFile, spanOf } from './types.ts'

/** POST /batch/lstar and POST /batch/analyze: priced per distinct ticker. */
export function batchRoutes({ ctx, priced }: RouteDeps): RouteFile {
  return routeFile(import.meta.url, {
    batchLstar: async (req, reply) => {
      const b = req.body
      const env = requirePrincipal(req.principal).environment
      // Before metering: > 100 is TOO_MANY_TICKERS, and the reservation covers the distinct tickers.
      const tickers = batchTickers(b.tickers)
      return runMetered(
        ctx,
        req,
        reply,
        priced('batchLstar'),
        () =>
          batchLstar(ctx.models, env, tickers, {
            ...spanOf(b),
            threshold: b.threshold,
            fields: b.fields,
          }),
        { positions: tickers.length, tabular: true },
      )
    },
    batchAnalyze: async (req, reply) => {
      const b = req.body
      const env = requirePrincipal(req.principal).environment
      const tickers = batchTickers(b.tickers)
      return runMetered(
        ctx,
        req,
        reply,
        priced('batchAnalyze'),
        () => batchAnalyze(ctx.models, env, tickers, { ...spanOf(b), metrics: b.metrics }),
        { positions: tickers.length, tabular: true },
      )
    },
  })
}
