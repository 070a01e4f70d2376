import { getL3Decomposition } from '../../services/analytics/l3-decomposition.ts'
import { nothingToAnswer } from '../../services/analytics/nothing-to-answer.ts'
import { runMetered } from '../metered.ts'
import { requirePrincipal } from '../request-state.ts'
import { type RouteDeps, type RouteFile, routeFile, spanOf } from './types.ts'

/** GET /l3-decomposition. */
export function l3DecompositionRoutes({ ctx, priced }: RouteDeps): RouteFile {
  return routeFile(import.meta.url, {
    getL3Decomposition: async (req, reply) => {
      const q = req.query
      const env = requirePrincipal(req.principal).environment
      return runMetered(
        ctx,
        req,
        reply,
        priced('getL3Decomposition'),
        () => getL3Decomposition(ctx.models, env, q.ticker, spanOf(q, 5), q.fields),
        { tabular: true, nothing: () => nothingToAnswer(ctx.models, env, q.ticker, 'model') },
      )
    },
  })
}
