import { nothingToAnswer } from '../../services/analytics/nothing-to-answer.ts'
import { screenQuery, screenRankings, tickerRankings } from '../../services/analytics/rankings.ts'
import { runMetered } from '../metered.ts'
import { requirePrincipal } from '../request-state.ts'
import { type RouteDeps, type RouteFile, routeFile } from './types.ts'

/** POST /rankings/screen and GET /rankings/{ticker}. */
export function rankingsRoutes({ ctx, priced }: RouteDeps): RouteFile {
  return routeFile(import.meta.url, {
    rankingsScreen: async (req, reply) => {
      const b = req.body
      // Before metering: a bad filter is a free 400.
      screenQuery(b)
      const env = requirePrincipal(req.principal).environment
      return runMetered(ctx, req, reply, priced('rankingsScreen'), () => screenRankings(ctx.models, env, b), {
        tabular: true,
      })
    },
    getRankings: async (req, reply) => {
      const env = requirePrincipal(req.principal).environment
      return runMetered(
        ctx,
        req,
        reply,
        priced('getRankings'),
        () => tickerRankings(ctx.models, env, req.params.ticker, req.query.teo),
        { tabular: true, nothing: () => nothingToAnswer(ctx.models, env, req.params.ticker, 'rankings') },
      )
    },
  })
}
