import type { Capability } from '../../contract/pricing.ts'
import {
  batchCorrelation,
  type CorrelationOptionsQuery,
  type CorrelationRequest,
  correlationOptions,
  correlationTickers,
  getCorrelation,
} from '../../services/analytics/correlation.ts'
import type { ServiceContext } from '../../services/context.ts'
import { runMetered } from '../metered.ts'
import { requirePrincipal } from '../request-state.ts'
import type { RouteTable } from './types.ts'

/** GET /metrics/{ticker}/correlation and POST /correlation (one ticker or a batch). */
export function correlationRoutes(ctx: ServiceContext, priced: (opId: string) => Capability): RouteTable {
  const env = (req: Parameters<RouteTable[string]>[0]) => requirePrincipal(req.principal).environment
  return {
    getCorrelation: async (req, reply) => {
      const { ticker } = req.params as { ticker: string }
      const q = req.query as CorrelationOptionsQuery
      correlationOptions(q) // before metering: a bad option is a free 400
      return runMetered(
        ctx,
        req,
        reply,
        priced('getCorrelation'),
        () => getCorrelation(ctx.models, env(req), ticker, q),
        { tabular: true },
      )
    },
    postCorrelation: async (req, reply) => {
      const b = req.body as CorrelationRequest
      const { tickers, batch } = correlationTickers(b)
      correlationOptions(b)
      return runMetered(
        ctx,
        req,
        reply,
        priced('postCorrelation'),
        () =>
          batch
            ? batchCorrelation(ctx.models, env(req), tickers, b)
            : getCorrelation(ctx.models, env(req), tickers[0] as string, b),
        // The batch size picks the price (0.005 per batch call, 0.002 for one ticker).
        { positions: tickers.length, tabular: true },
      )
    },
  }
}
