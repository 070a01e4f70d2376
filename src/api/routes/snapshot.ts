import { snapshotOptions, snapshotService } from '../../services/analytics/snapshot/index.ts'
import { runMetered } from '../metered.ts'
import { requirePrincipal } from '../request-state.ts'
import { type RouteDeps, type RouteFile, routeFile } from './types.ts'

/** POST /snapshot (0.25 per call; its benchmarks are GET /data/benchmark/{id}, in data.ts). */
export function snapshotRoutes({ ctx, priced }: RouteDeps): RouteFile {
  return routeFile(import.meta.url, {
    snapshot: async (req, reply) => {
      const b = req.body
      snapshotOptions(b) // before metering: a bad request is a free 400
      const env = requirePrincipal(req.principal).environment
      return runMetered(ctx, req, reply, priced('snapshot'), () => snapshotService(ctx.models, env, b), {
        tabular: true,
      })
    },
  })
}
