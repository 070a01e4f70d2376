import { estimateCost } from '../../services/discovery/estimate.ts'
import { type RouteFile, routeFile } from './types.ts'

/** POST /estimate. */
export function estimateRoutes(): RouteFile {
  return routeFile(import.meta.url, {
    estimate: async (req) => estimateCost(req.body.operation, req.body.params),
  })
}
