import { Type } from 'typebox'
import { defineOperation } from '../operation.ts'
import { IsoDateTime, Nullable } from '../schemas.ts'

/** Top-ups with Stripe: a Checkout Session to pay at, and Stripe's webhook. */

/** docs/decisions/money.md: the minimum top-up; the maximum bounds one card payment. */
export const CHECKOUT_MIN_USD = 10
export const CHECKOUT_MAX_USD = 10_000

export const createCheckout = defineOperation({
  id: 'createCheckout',
  method: 'POST',
  path: '/billing/checkout',
  summary: 'Top up the balance: create a Stripe Checkout Session and return the URL to pay at',
  description:
    'Authenticated with a signed-in session (the dashboard) or one of the account\u2019s own live API keys ' +
    '(an agent that got a 402 can hand the URL to its human; test keys are refused with 403: they never ' +
    'move money). The balance is credited when ' +
    'Stripe confirms the payment (its webhook), not when this call returns. Amounts in USD with at ' +
    `most two decimals, ${CHECKOUT_MIN_USD}.00 to ${CHECKOUT_MAX_USD}.00. Without Stripe configured ` +
    '(STRIPE_SECRET_KEY, STRIPE_WEBHOOK_SECRET) the answer is 503 UNAVAILABLE and top-ups go through ' +
    'the operator (GET /docs/billing).',
  tags: ['billing'],
  auth: 'key_or_session',
  body: Type.Object(
    {
      amount_usd: Type.Number({
        minimum: CHECKOUT_MIN_USD,
        maximum: CHECKOUT_MAX_USD,
        description: `USD to add, ${CHECKOUT_MIN_USD}–${CHECKOUT_MAX_USD}, at most two decimals`,
      }),
    },
    { additionalProperties: false },
  ),
  status: 201,
  response: Type.Object(
    {
      checkout_url: Type.String({ description: 'Stripe-hosted payment page; open it in a browser' }),
      session_id: Type.String({ description: 'Stripe Checkout Session id (cs_…)' }),
      amount_usd: Type.Number(),
      currency: Type.Literal('USD'),
      account_id: Type.String(),
      expires_at: Nullable(IsoDateTime),
    },
    { $id: 'CheckoutResponse' },
  ),
  errors: [400, 401, 403, 415, 429, 503],
})

const stripeWebhook = defineOperation({
  id: 'stripeWebhook',
  method: 'POST',
  path: '/billing/stripe/webhook',
  summary: 'Stripe webhook endpoint (called by Stripe; verified by its Stripe-Signature header)',
  description:
    'No erm3 credentials: the `Stripe-Signature` header (HMAC-SHA256 of the raw body with the ' +
    'endpoint\u2019s signing secret, timestamp within 5 minutes) is the authentication. A paid Checkout ' +
    'Session (`checkout.session.completed` with payment_status paid, or ' +
    '`checkout.session.async_payment_succeeded`) credits the account once per payment intent; ' +
    '`charge.refunded` debits the newly refunded part (`payment_refund`); a dispute ' +
    '(`charge.dispute.created` / `charge.dispute.funds_withdrawn`) debits its amount once ' +
    '(`chargeback`), `charge.dispute.funds_reinstated` credits back exactly that chargeback (nothing ' +
    'when none was posted for the dispute). Every event id is applied at ' +
    'most once, in the same transaction as its ledger entry; 2xx only after it committed. Other event ' +
    'types are acknowledged and ignored.',
  tags: ['billing'],
  auth: 'none',
  rawBody: true,
  body: Type.Object(
    { id: Type.String(), type: Type.String() },
    { additionalProperties: true, $id: 'StripeEvent', description: 'A Stripe Event object' },
  ),
  status: 200,
  response: Type.Object(
    {
      received: Type.Boolean(),
      event_id: Type.String(),
      outcome: Type.Union([Type.Literal('applied'), Type.Literal('duplicate'), Type.Literal('ignored')], {
        description: 'applied: processed now; duplicate: processed before; ignored: nothing to do',
      }),
    },
    { $id: 'StripeWebhookResponse' },
  ),
  errors: [400, 415, 429, 503],
})

export const BILLING_OPS = { createCheckout, stripeWebhook } as const
