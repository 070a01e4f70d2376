import { getBenchmark } from '../../services/analytics/snapshot/index.ts'
import { requirePrincipal } from '../request-state.ts'
import { type RouteDeps, type RouteFile, routeFile } from './types.ts'

/** GET /data/benchmark/{id} (free). */
export function dataRoutes({ ctx }: RouteDeps): RouteFile {
  return routeFile(import.meta.url, {
    getBenchmark: async (req) =>
      getBenchmark(ctx.models, requirePrincipal(req.principal).environment, req.params.id),
  })
}
