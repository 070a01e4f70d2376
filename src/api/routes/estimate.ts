import { estimateCost } from '../../services/discovery/estimate.ts'
import { type RouteDeps, type RouteFile, routeFile } from './types.ts'

/** POST /estimate (history operations sized by the live build's calendar when there is one). */
export function estimateRoutes({ ctx }: RouteDeps): RouteFile {
  return routeFile(import.meta.url, {
    estimate: async (req) => estimateCost(req.body.operation, req.body.params, ctx.models.peek('live')),
  })
}
