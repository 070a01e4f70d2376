import { fundamentalsOptions, getFundamentals } from '../../services/analytics/fundamentals.ts'
import { nothingToAnswer } from '../../services/analytics/nothing-to-answer.ts'
import { runMetered } from '../metered.ts'
import { requirePrincipal } from '../request-state.ts'
import { type RouteDeps, type RouteFile, routeFile } from './types.ts'

/** GET /fundamentals/{ticker}. */
export function fundamentalsRoutes({ ctx, priced }: RouteDeps): RouteFile {
  return routeFile(import.meta.url, {
    getFundamentals: async (req, reply) => {
      const q = req.query
      fundamentalsOptions(q) // before metering: a bad option is a free 400
      const env = requirePrincipal(req.principal).environment
      return runMetered(
        ctx,
        req,
        reply,
        priced('getFundamentals'),
        () => getFundamentals(ctx.models, env, req.params.ticker, q),
        { tabular: true, nothing: () => nothingToAnswer(ctx.models, env, req.params.ticker, 'filings') },
      )
    },
  })
}
