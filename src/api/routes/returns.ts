import { grossReturns } from '../../services/analytics/returns.ts'
import { runMetered } from '../metered.ts'
import { requirePrincipal } from '../request-state.ts'
import { type RouteDeps, type RouteFile, routeFile, spanOf } from './types.ts'

/** GET /returns (a stock's gross returns; an ETF's are GET /etf-returns, in etf-returns.ts). */
export function returnsRoutes({ ctx, priced }: RouteDeps): RouteFile {
  return routeFile(import.meta.url, {
    getReturns: async (req, reply) => {
      const q = req.query
      const env = requirePrincipal(req.principal).environment
      return runMetered(
        ctx,
        req,
        reply,
        priced('getReturns'),
        () => grossReturns(ctx.models, env, q.ticker, spanOf(q), 'stock'),
        { tabular: true },
      )
    },
  })
}
