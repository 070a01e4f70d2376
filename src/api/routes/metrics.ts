import type { Capability } from '../../contract/pricing.ts'
import { metricsSnapshot } from '../../services/analytics/metrics.ts'
import type { ServiceContext } from '../../services/context.ts'
import { runMetered } from '../metered.ts'
import { requirePrincipal } from '../request-state.ts'
import type { RouteTable } from './types.ts'

export function metricsRoutes(ctx: ServiceContext, priced: (opId: string) => Capability): RouteTable {
  return {
    getMetrics: async (req, reply) => {
      const { ticker } = req.params as { ticker: string }
      const env = requirePrincipal(req.principal).environment
      return runMetered(ctx, req, reply, priced('getMetrics'), () => metricsSnapshot(ctx.models, env, ticker))
    },
  }
}
