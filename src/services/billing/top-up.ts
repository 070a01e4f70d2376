import { createCheckout } from '../../contract/ops/billing.ts'
import { getBillingDocs } from '../../contract/ops/docs.ts'
import type { ServiceContext } from '../context.ts'

/**
 * Where a 402 sends a client to add funds. With Stripe configured: the checkout endpoint (POST
 * `{amount_usd}` with the same key; the answer's `checkout_url` is the page to pay at). Without it,
 * as before: the operator's page (TOP_UP_URL), else GET /docs/billing.
 */
export function topUpHint(ctx: ServiceContext): { top_up_url: string; top_up_method?: 'POST' } {
  if (ctx.config.stripe)
    return { top_up_url: `${ctx.config.publicUrl}${createCheckout.path}`, top_up_method: 'POST' }
  return { top_up_url: ctx.config.topUpUrl ?? `${ctx.config.publicUrl}${getBillingDocs.path}` }
}
