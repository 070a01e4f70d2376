import type { Capability } from '../../contract/pricing.ts'
import {
  type BasketRequest,
  basketMembers,
  residualReversionBasket,
} from '../../services/analytics/cross/basket.ts'
import { getEtfFactorReturns } from '../../services/analytics/cross/factor-returns.ts'
import { getIndustryPanel } from '../../services/analytics/cross/industry-panel.ts'
import { getUniverseMembers, type UniverseName } from '../../services/analytics/cross/universe.ts'
import {
  type ScreenRequest,
  screenQuery,
  screenRankings,
  tickerRankings,
} from '../../services/analytics/rankings.ts'
import type { ServiceContext } from '../../services/context.ts'
import { runMetered } from '../metered.ts'
import { requirePrincipal } from '../request-state.ts'
import type { RouteTable } from './types.ts'

/** The cross-sectional routes: industry panel, rankings, universes, ETF factor returns, reversion basket. */
export function crossRoutes(ctx: ServiceContext, priced: (opId: string) => Capability): RouteTable {
  const tabular = { tabular: true }
  const env = (req: Parameters<RouteTable[string]>[0]) => requirePrincipal(req.principal).environment
  return {
    getIndustryPanel: async (req, reply) => {
      const q = req.query as { level?: 'market' | 'sector' | 'subsector'; teo?: string; min_peers?: number }
      return runMetered(
        ctx,
        req,
        reply,
        priced('getIndustryPanel'),
        () => getIndustryPanel(ctx.models, env(req), q),
        tabular,
      )
    },
    rankingsScreen: async (req, reply) => {
      const b = req.body as ScreenRequest
      // Before metering: a bad filter is a free 400.
      screenQuery(b)
      return runMetered(
        ctx,
        req,
        reply,
        priced('rankingsScreen'),
        () => screenRankings(ctx.models, env(req), b),
        tabular,
      )
    },
    getRankings: async (req, reply) => {
      const { ticker } = req.params as { ticker: string }
      const { teo } = req.query as { teo?: string }
      return runMetered(
        ctx,
        req,
        reply,
        priced('getRankings'),
        () => tickerRankings(ctx.models, env(req), ticker, teo),
        tabular,
      )
    },
    getUniverseMembers: async (req, reply) => {
      const { universe } = req.params as { universe: UniverseName }
      const { teo } = req.query as { teo?: string }
      return runMetered(
        ctx,
        req,
        reply,
        priced('getUniverseMembers'),
        () => getUniverseMembers(ctx.models, env(req), universe, teo),
        tabular,
      )
    },
    getEtfFactorReturns: async (req, reply) => {
      const q = req.query as { tickers?: string; teo?: string }
      return runMetered(
        ctx,
        req,
        reply,
        priced('getEtfFactorReturns'),
        () => getEtfFactorReturns(ctx.models, env(req), q),
        tabular,
      )
    },
    residualReversionBasket: async (req, reply) => {
      const b = req.body as BasketRequest
      // Before metering: a malformed basket is a free 400.
      basketMembers(b)
      return runMetered(
        ctx,
        req,
        reply,
        priced('residualReversionBasket'),
        () => residualReversionBasket(ctx.models, env(req), b),
        tabular,
      )
    },
  }
}
