import { getEtfFactorReturns } from '../../services/analytics/cross/factor-returns.ts'
import { runMetered } from '../metered.ts'
import { requirePrincipal } from '../request-state.ts'
import { type RouteDeps, type RouteFile, routeFile } from './types.ts'

/** GET /etf/factor-returns. */
export function etfRoutes({ ctx, priced }: RouteDeps): RouteFile {
  return routeFile(import.meta.url, {
    getEtfFactorReturns: async (req, reply) => {
      const env = requirePrincipal(req.principal).environment
      return runMetered(
        ctx,
        req,
        reply,
        priced('getEtfFactorReturns'),
        () => getEtfFactorReturns(ctx.models, env, req.query),
        { tabular: true },
      )
    },
  })
}
