import { tickerReturns } from '../../services/analytics/returns.ts'
import { runMetered } from '../metered.ts'
import { requirePrincipal } from '../request-state.ts'
import { type RouteDeps, type RouteFile, routeFile, spanOf } from './types.ts'

/** GET /ticker-returns. */
export function tickerReturnsRoutes({ ctx, priced }: RouteDeps): RouteFile {
  return routeFile(import.meta.url, {
    getTickerReturns: async (req, reply) => {
      const q = req.query
      const env = requirePrincipal(req.principal).environment
      return runMetered(
        ctx,
        req,
        reply,
        priced('getTickerReturns'),
        () => tickerReturns(ctx.models, env, q.ticker, spanOf(q), q.fields),
        { tabular: true },
      )
    },
  })
}
