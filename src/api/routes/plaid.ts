import { recordAudit } from '../../services/identity/audit.ts'
import { holdingsService, requireHoldingsAccount } from '../../services/plaid/holdings.ts'
import * as plaid from '../../services/plaid/items.ts'
import { runMetered } from '../metered.ts'
import { requirePrincipal, requireSession, sessionActor } from '../request-state.ts'
import { type RouteDeps, type RouteFile, routeFile } from './types.ts'

/** Plaid linking (session) and GET /plaid/holdings (key, 0.02 per call, never cached). */
export function plaidRoutes({ ctx, priced }: RouteDeps): RouteFile {
  return routeFile(import.meta.url, {
    createPlaidLinkToken: async (req, reply) => {
      const out = await plaid.createLinkToken(ctx, requireSession(req.session), req.body.item_id ?? null)
      reply.code(201).header('Cache-Control', 'no-store')
      return out
    },
    exchangePlaidPublicToken: async (req, reply) => {
      const item = await plaid.exchangePublicToken(ctx, requireSession(req.session), req.body)
      await recordAudit(ctx, sessionActor(req), 'plaid.linked', item.id, {
        plaid_item_id: item.plaid_item_id,
        institution_name: item.institution_name,
      })
      reply.code(201)
      return item
    },
    listPlaidItems: async (req) => plaid.listItems(ctx, requireSession(req.session)),
    deletePlaidItem: async (req) => {
      const id = req.params.id
      const out = await plaid.removeItem(ctx, requireSession(req.session), id)
      await recordAudit(ctx, sessionActor(req), 'plaid.unlinked', id, null)
      return out
    },
    getPlaidHoldings: async (req, reply) => {
      const p = requirePrincipal(req.principal)
      await requireHoldingsAccount(ctx, p) // before metering: a free refusal
      // A user's brokerage positions: no shared or browser cache keeps them either.
      reply.header('Cache-Control', 'private, no-store')
      // Every failure inside (no linked item, re-link, Plaid down) releases the reservation: free.
      return runMetered(ctx, req, reply, priced('getPlaidHoldings'), () => holdingsService(ctx, p), {
        live: true,
      })
    },
  })
}
