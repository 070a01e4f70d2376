import { basketMembers, residualReversionBasket } from '../../services/analytics/cross/basket.ts'
import { runMetered } from '../metered.ts'
import { requirePrincipal } from '../request-state.ts'
import { type RouteDeps, type RouteFile, routeFile } from './types.ts'

/** POST /signals/residual-reversion/basket. */
export function signalsRoutes({ ctx, priced }: RouteDeps): RouteFile {
  return routeFile(import.meta.url, {
    residualReversionBasket: async (req, reply) => {
      const b = req.body
      // Before metering: a malformed basket is a free 400.
      basketMembers(b)
      const env = requirePrincipal(req.principal).environment
      return runMetered(
        ctx,
        req,
        reply,
        priced('residualReversionBasket'),
        () => residualReversionBasket(ctx.models, env, b),
        { tabular: true },
      )
    },
  })
}
