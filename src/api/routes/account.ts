import type { FastifyRequest } from 'fastify'
import { balanceView, type InvoicePeriod, invoicesView, pricingView } from '../../services/billing/views.ts'
import type { ServiceContext } from '../../services/context.ts'
import { estimateCost } from '../../services/discovery/estimate.ts'
import { healthView } from '../../services/health.ts'
import { requirePrincipal } from '../request-state.ts'
import type { RouteTable } from './types.ts'

export function accountRoutes(ctx: ServiceContext): RouteTable {
  return {
    getBalance: async (req) => balanceView(ctx, requirePrincipal(req.principal)),
    getInvoices: async (req: FastifyRequest) => {
      const q = req.query as { period?: InvoicePeriod; limit?: number }
      return invoicesView(ctx, requirePrincipal(req.principal), q.period ?? 'month', q.limit ?? 100)
    },
    getPricing: async () => pricingView(),
    estimate: async (req) => {
      const b = req.body as { operation: string; params?: Record<string, unknown> }
      return estimateCost(b.operation, b.params)
    },
    getHealth: async () => healthView(ctx),
  }
}
