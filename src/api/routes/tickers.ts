import { listTickers } from '../../services/analytics/ticker-search.ts'
import { requirePrincipal } from '../request-state.ts'
import { type RouteDeps, type RouteFile, routeFile } from './types.ts'

/** GET /tickers. Free: no capability, never metered; the auth hook still requires a key. */
export function tickersRoutes({ ctx }: RouteDeps): RouteFile {
  return routeFile(import.meta.url, {
    getTickers: async (req) =>
      listTickers(ctx.models, requirePrincipal(req.principal).environment, req.query),
  })
}
