import { nothingToAnswer } from '../../services/analytics/nothing-to-answer.ts'
import { getReturnsDecomposition } from '../../services/analytics/returns-decomposition.ts'
import { runMetered } from '../metered.ts'
import { requirePrincipal } from '../request-state.ts'
import { type RouteDeps, type RouteFile, routeFile, spanOf } from './types.ts'

/** GET /returns-decomposition. */
export function returnsDecompositionRoutes({ ctx, priced }: RouteDeps): RouteFile {
  return routeFile(import.meta.url, {
    getReturnsDecomposition: async (req, reply) => {
      const q = req.query
      const env = requirePrincipal(req.principal).environment
      const includeLstar = q.include_lstar === true || q.dispatch === 'lstar'
      return runMetered(
        ctx,
        req,
        reply,
        priced('getReturnsDecomposition'),
        () =>
          getReturnsDecomposition(ctx.models, env, q.ticker, {
            ...spanOf(q),
            fields: q.fields,
            includeLstar,
          }),
        { tabular: true, nothing: () => nothingToAnswer(ctx.models, env, q.ticker, 'model') },
      )
    },
  })
}
