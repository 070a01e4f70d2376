import type { Capability } from '../../contract/pricing.ts'
import {
  getBenchmark,
  type SnapshotRequest,
  snapshotOptions,
  snapshotService,
} from '../../services/analytics/snapshot/index.ts'
import type { ServiceContext } from '../../services/context.ts'
import { runMetered } from '../metered.ts'
import { requirePrincipal } from '../request-state.ts'
import type { RouteTable } from './types.ts'

/** POST /snapshot (0.25 per call) and GET /data/benchmark/{id} (free). */
export function snapshotRoutes(ctx: ServiceContext, priced: (opId: string) => Capability): RouteTable {
  const env = (req: Parameters<RouteTable[string]>[0]) => requirePrincipal(req.principal).environment
  return {
    snapshot: async (req, reply) => {
      const b = req.body as SnapshotRequest
      snapshotOptions(b) // before metering: a bad request is a free 400
      return runMetered(ctx, req, reply, priced('snapshot'), () => snapshotService(ctx.models, env(req), b), {
        tabular: true,
      })
    },
    getBenchmark: async (req) => {
      const { id } = req.params as { id: string }
      return getBenchmark(ctx.models, env(req), id)
    },
  }
}
