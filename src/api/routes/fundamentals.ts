import type { Capability } from '../../contract/pricing.ts'
import {
  type FundamentalsQuery,
  fundamentalsOptions,
  getFundamentals,
} from '../../services/analytics/fundamentals.ts'
import type { ServiceContext } from '../../services/context.ts'
import { runMetered } from '../metered.ts'
import { requirePrincipal } from '../request-state.ts'
import type { RouteTable } from './types.ts'

/** GET /fundamentals/{ticker}. */
export function fundamentalsRoutes(ctx: ServiceContext, priced: (opId: string) => Capability): RouteTable {
  return {
    getFundamentals: async (req, reply) => {
      const { ticker } = req.params as { ticker: string }
      const q = req.query as FundamentalsQuery
      fundamentalsOptions(q) // before metering: a bad option is a free 400
      const env = requirePrincipal(req.principal).environment
      return runMetered(
        ctx,
        req,
        reply,
        priced('getFundamentals'),
        () => getFundamentals(ctx.models, env, ticker, q),
        { tabular: true },
      )
    },
  }
}
