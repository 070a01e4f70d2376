import { getUniverseMembers } from '../../services/analytics/cross/universe.ts'
import { runMetered } from '../metered.ts'
import { requirePrincipal } from '../request-state.ts'
import { type RouteDeps, type RouteFile, routeFile } from './types.ts'

/** GET /universe/{universe}/members. */
export function universeRoutes({ ctx, priced }: RouteDeps): RouteFile {
  return routeFile(import.meta.url, {
    getUniverseMembers: async (req, reply) => {
      const env = requirePrincipal(req.principal).environment
      return runMetered(
        ctx,
        req,
        reply,
        priced('getUniverseMembers'),
        () =>
          getUniverseMembers(ctx.models, env, req.params.universe, req.query.teo, {
            limit: req.query.limit,
            cursor: req.query.cursor,
          }),
        { tabular: true },
      )
    },
  })
}
