import { grossReturns } from '../../services/analytics/returns.ts'
import { runMetered } from '../metered.ts'
import { requirePrincipal } from '../request-state.ts'
import { type RouteDeps, type RouteFile, routeFile, spanOf } from './types.ts'

/** GET /etf-returns. */
export function etfReturnsRoutes({ ctx, priced }: RouteDeps): RouteFile {
  return routeFile(import.meta.url, {
    getEtfReturns: async (req, reply) => {
      const q = req.query
      const env = requirePrincipal(req.principal).environment
      return runMetered(
        ctx,
        req,
        reply,
        priced('getEtfReturns'),
        () => grossReturns(ctx.models, env, q.ticker, spanOf(q), 'etf'),
        { tabular: true },
      )
    },
  })
}
