import { pricingView } from '../../services/billing/views.ts'
import { type RouteFile, routeFile } from './types.ts'

/** GET /pricing. */
export function pricingRoutes(): RouteFile {
  return routeFile(import.meta.url, {
    getPricing: async () => pricingView(),
  })
}
