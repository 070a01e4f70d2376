import { invoicesView } from '../../services/billing/views.ts'
import { requirePrincipal } from '../request-state.ts'
import { type RouteDeps, type RouteFile, routeFile } from './types.ts'

/** GET /invoices. */
export function invoicesRoutes({ ctx }: RouteDeps): RouteFile {
  return routeFile(import.meta.url, {
    getInvoices: async (req) =>
      invoicesView(ctx, requirePrincipal(req.principal), req.query.period ?? 'month', req.query.limit ?? 100),
  })
}
