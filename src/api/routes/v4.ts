import { decomposeV4 } from '../../services/analytics/decompose.ts'
import { nothingToAnswer } from '../../services/analytics/nothing-to-answer.ts'
import { runMetered } from '../metered.ts'
import { requirePrincipal } from '../request-state.ts'
import { type RouteDeps, type RouteFile, routeFile } from './types.ts'

/** POST /v4/decompose. */
export function v4Routes({ ctx, priced }: RouteDeps): RouteFile {
  return routeFile(import.meta.url, {
    decomposeV4: async (req, reply) => {
      const env = requirePrincipal(req.principal).environment
      return runMetered(
        ctx,
        req,
        reply,
        priced('decomposeV4'),
        () => decomposeV4(ctx.models, env, req.body.ticker, ctx.log, req.body.as_of),
        { nothing: () => nothingToAnswer(ctx.models, env, req.body.ticker, 'model', req.body.as_of) },
      )
    },
  })
}
