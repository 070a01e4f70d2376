import { createCheckout, handleStripeWebhook } from '../../services/billing/stripe.ts'
import { type RouteDeps, type RouteFile, routeFile } from './types.ts'

/** POST /billing/checkout and the Stripe webhook: thin adapters over services/billing/stripe.ts. */
export function billingRoutes({ ctx }: RouteDeps): RouteFile {
  return routeFile(import.meta.url, {
    createCheckout: async (req, reply) => {
      // key_or_session: the auth hook set exactly one of them.
      const payer =
        req.principal ??
        (req.session ? { accountId: req.session.accountId, environment: 'live' as const } : null)
      if (!payer) throw new Error('createCheckout: neither a principal nor a session was set')
      const out = await createCheckout(ctx, payer, req.body.amount_usd)
      reply.code(201).header('Cache-Control', 'no-store')
      return out
    },
    stripeWebhook: async (req) => {
      const sig = req.headers['stripe-signature']
      return handleStripeWebhook(ctx, req.rawBody, Array.isArray(sig) ? sig[0] : sig)
    },
  })
}
