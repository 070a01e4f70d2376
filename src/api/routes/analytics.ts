import type { Capability } from '../../contract/pricing.ts'
import { batchLstar, batchTickers } from '../../services/analytics/batch.ts'
import { type BatchMetric, batchAnalyze } from '../../services/analytics/batch-analyze.ts'
import { getL3Decomposition } from '../../services/analytics/l3-decomposition.ts'
import { getLstar } from '../../services/analytics/lstar.ts'
import { getReturnsDecomposition } from '../../services/analytics/returns-decomposition.ts'
import type { ServiceContext } from '../../services/context.ts'
import { runMetered } from '../metered.ts'
import { requirePrincipal } from '../request-state.ts'
import type { RouteTable } from './types.ts'

interface TickerQuery {
  ticker: string
  years?: number
  threshold?: number
  include_lstar?: boolean
  dispatch?: 'lstar'
}

export function analyticsRoutes(ctx: ServiceContext, priced: (opId: string) => Capability): RouteTable {
  const tabular = { tabular: true }
  return {
    getLstar: async (req, reply) => {
      const q = req.query as TickerQuery
      const env = requirePrincipal(req.principal).environment
      return runMetered(
        ctx,
        req,
        reply,
        priced('getLstar'),
        () => getLstar(ctx.models, env, q.ticker, q.years, q.threshold),
        tabular,
      )
    },
    getReturnsDecomposition: async (req, reply) => {
      const q = req.query as TickerQuery
      const env = requirePrincipal(req.principal).environment
      const includeLstar = q.include_lstar === true || q.dispatch === 'lstar'
      return runMetered(
        ctx,
        req,
        reply,
        priced('getReturnsDecomposition'),
        () => getReturnsDecomposition(ctx.models, env, q.ticker, { years: q.years, includeLstar }),
        tabular,
      )
    },
    getL3Decomposition: async (req, reply) => {
      const q = req.query as TickerQuery
      const env = requirePrincipal(req.principal).environment
      return runMetered(
        ctx,
        req,
        reply,
        priced('getL3Decomposition'),
        () => getL3Decomposition(ctx.models, env, q.ticker, q.years),
        tabular,
      )
    },
    batchLstar: async (req, reply) => {
      const b = req.body as { tickers: string[]; years?: number; threshold?: number }
      const env = requirePrincipal(req.principal).environment
      // Before metering: > 100 is TOO_MANY_TICKERS, and the reservation covers the distinct tickers.
      const tickers = batchTickers(b.tickers)
      return runMetered(
        ctx,
        req,
        reply,
        priced('batchLstar'),
        () => batchLstar(ctx.models, env, tickers, { years: b.years, threshold: b.threshold }),
        { positions: tickers.length, tabular: true },
      )
    },
    batchAnalyze: async (req, reply) => {
      const b = req.body as { tickers: string[]; years?: number; metrics?: BatchMetric[] }
      const env = requirePrincipal(req.principal).environment
      const tickers = batchTickers(b.tickers)
      return runMetered(
        ctx,
        req,
        reply,
        priced('batchAnalyze'),
        () => batchAnalyze(ctx.models, env, tickers, { years: b.years, metrics: b.metrics }),
        { positions: tickers.length, tabular: true },
      )
    },
  }
}
