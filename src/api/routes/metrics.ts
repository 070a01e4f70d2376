import { correlationOptions, getCorrelation } from '../../services/analytics/correlation.ts'
import { metricsSnapshot } from '../../services/analytics/metrics.ts'
import { nothingToAnswer } from '../../services/analytics/nothing-to-answer.ts'
import { runMetered } from '../metered.ts'
import { requirePrincipal } from '../request-state.ts'
import { type RouteDeps, type RouteFile, routeFile } from './types.ts'

/** GET /metrics/{ticker} and GET /metrics/{ticker}/correlation. */
export function metricsRoutes({ ctx, priced }: RouteDeps): RouteFile {
  return routeFile(import.meta.url, {
    getMetrics: async (req, reply) => {
      const env = requirePrincipal(req.principal).environment
      return runMetered(
        ctx,
        req,
        reply,
        priced('getMetrics'),
        () => metricsSnapshot(ctx.models, env, req.params.ticker, req.query.as_of),
        { nothing: () => nothingToAnswer(ctx.models, env, req.params.ticker, 'model', req.query.as_of) },
      )
    },
    getCorrelation: async (req, reply) => {
      const q = req.query
      correlationOptions(q) // before metering: a bad option is a free 400
      const env = requirePrincipal(req.principal).environment
      return runMetered(
        ctx,
        req,
        reply,
        priced('getCorrelation'),
        () => getCorrelation(ctx.models, env, req.params.ticker, q),
        { tabular: true },
      )
    },
  })
}
