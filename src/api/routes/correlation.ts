import {
  batchCorrelation,
  correlationOptions,
  correlationTickers,
  getCorrelation,
} from '../../services/analytics/correlation.ts'
import { runMetered } from '../metered.ts'
import { requirePrincipal } from '../request-state.ts'
import { type RouteDeps, type RouteFile, routeFile } from './types.ts'

/** POST /correlation (one ticker or a batch; GET /metrics/{ticker}/correlation is in metrics.ts). */
export function correlationRoutes({ ctx, priced }: RouteDeps): RouteFile {
  return routeFile(import.meta.url, {
    postCorrelation: async (req, reply) => {
      const b = req.body
      const { tickers, batch } = correlationTickers(b)
      correlationOptions(b)
      const env = requirePrincipal(req.principal).environment
      return runMetered(
        ctx,
        req,
        reply,
        priced('postCorrelation'),
        () =>
          batch
            ? batchCorrelation(ctx.models, env, tickers, b)
            : getCorrelation(ctx.models, env, tickers[0] as string, b),
        // The batch size picks the price (0.005 per batch call, 0.002 for one ticker).
        { positions: tickers.length, tabular: true },
      )
    },
  })
}
