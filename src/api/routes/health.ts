import { healthView } from '../../services/health.ts'
import { type RouteDeps, type RouteFile, routeFile } from './types.ts'

/** GET /health. */
export function healthRoutes({ ctx }: RouteDeps): RouteFile {
  return routeFile(import.meta.url, {
    getHealth: async () => healthView(ctx),
  })
}
