import type { Capability } from '../../contract/pricing.ts'
import { decompose, decomposeV4 } from '../../services/analytics/decompose.ts'
import { grossReturns, tickerReturns } from '../../services/analytics/returns.ts'
import { listTickers, type TickersQuery } from '../../services/analytics/ticker-search.ts'
import type { ServiceContext } from '../../services/context.ts'
import { runMetered } from '../metered.ts'
import { requirePrincipal } from '../request-state.ts'
import type { RouteTable } from './types.ts'

interface HistoryQuery {
  ticker: string
  years?: number
}

export function historyRoutes(ctx: ServiceContext, priced: (opId: string) => Capability): RouteTable {
  const env = (req: Parameters<RouteTable[string]>[0]) => requirePrincipal(req.principal).environment
  return {
    decompose: async (req, reply) => {
      const { ticker } = req.body as { ticker: string }
      return runMetered(ctx, req, reply, priced('decompose'), () =>
        decompose(ctx.models, env(req), ticker, ctx.log),
      )
    },
    decomposeV4: async (req, reply) => {
      const { ticker } = req.body as { ticker: string }
      return runMetered(ctx, req, reply, priced('decomposeV4'), () =>
        decomposeV4(ctx.models, env(req), ticker, ctx.log),
      )
    },
    getTickerReturns: async (req, reply) => {
      const q = req.query as HistoryQuery
      return runMetered(
        ctx,
        req,
        reply,
        priced('getTickerReturns'),
        () => tickerReturns(ctx.models, env(req), q.ticker, q.years ?? 1),
        { tabular: true },
      )
    },
    getReturns: async (req, reply) => {
      const q = req.query as HistoryQuery
      return runMetered(
        ctx,
        req,
        reply,
        priced('getReturns'),
        () => grossReturns(ctx.models, env(req), q.ticker, q.years ?? 1, 'stock'),
        { tabular: true },
      )
    },
    getEtfReturns: async (req, reply) => {
      const q = req.query as HistoryQuery
      return runMetered(
        ctx,
        req,
        reply,
        priced('getEtfReturns'),
        () => grossReturns(ctx.models, env(req), q.ticker, q.years ?? 1, 'etf'),
        { tabular: true },
      )
    },
    // Free: no capability, never metered; the auth hook still requires a key.
    getTickers: async (req) => listTickers(ctx.models, env(req), req.query as TickersQuery),
  }
}
