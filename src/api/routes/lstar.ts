import { getLstar } from '../../services/analytics/lstar.ts'
import { nothingToAnswer } from '../../services/analytics/nothing-to-answer.ts'
import { runMetered } from '../metered.ts'
import { requirePrincipal } from '../request-state.ts'
import { type RouteDeps, type RouteFile, routeFile, spanOf } from './types.ts'

/** GET /lstar. */
export function lstarRoutes({ ctx, priced }: RouteDeps): RouteFile {
  return routeFile(import.meta.url, {
    getLstar: async (req, reply) => {
      const q = req.query
      const env = requirePrincipal(req.principal).environment
      return runMetered(
        ctx,
        req,
        reply,
        priced('getLstar'),
        () => getLstar(ctx.models, env, q.ticker, spanOf(q), q.threshold, q.fields),
        { tabular: true, nothing: () => nothingToAnswer(ctx.models, env, q.ticker, 'model') },
      )
    },
  })
}
