import { balanceView } from '../../services/billing/views.ts'
import { requirePrincipal } from '../request-state.ts'
import { type RouteDeps, type RouteFile, routeFile } from './types.ts'

/** GET /balance (free): the account's balance, through the same route as every operation. */
export function balanceRoutes({ ctx }: RouteDeps): RouteFile {
  return routeFile(import.meta.url, {
    getBalance: async (req) => balanceView(ctx, requirePrincipal(req.principal)),
  })
}
