import { getIndustryPanel } from '../../services/analytics/cross/industry-panel.ts'
import { runMetered } from '../metered.ts'
import { requirePrincipal } from '../request-state.ts'
import { type RouteDeps, type RouteFile, routeFile } from './types.ts'

/** GET /industry-panel. */
export function industryPanelRoutes({ ctx, priced }: RouteDeps): RouteFile {
  return routeFile(import.meta.url, {
    getIndustryPanel: async (req, reply) => {
      const env = requirePrincipal(req.principal).environment
      return runMetered(
        ctx,
        req,
        reply,
        priced('getIndustryPanel'),
        () => getIndustryPanel(ctx.models, env, req.query),
        { tabular: true },
      )
    },
  })
}
