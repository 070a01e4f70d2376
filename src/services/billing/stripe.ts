/**
 * Top-ups with Stripe (docs/decisions/money.md: Stripe Checkout + verified webhook,
 * idempotent per payment).
 *
 * - `createCheckout`: a Checkout Session (mode payment, one line item of the amount in cents, USD)
 *   tagged with the account id (client_reference_id and metadata, also on the payment intent).
 * - `handleStripeWebhook`: verifies the Stripe-Signature over the raw body with the SDK, maps the
 *   event to one ledger effect (`effectOf`) and applies it through the account store's payments,
 *   which commits the processed-event row and the ledger entry in one transaction. The caller
 *   answers 2xx only after that resolved; anything thrown is a non-2xx and Stripe redelivers.
 *
 * Which events move money (everything else is acknowledged and ignored):
 *   checkout.session.completed (payment_status paid)  → topup, reference = payment intent id
 *   checkout.session.async_payment_succeeded          → topup, same reference (so at most one credit)
 *   checkout.session.completed (unpaid, async method) → recorded, nothing credited yet
 *   payment_intent.succeeded                          → recorded, nothing (the session events credit)
 *   charge.refunded                                   → payment_refund of the newly refunded part
 *   charge.dispute.created / funds_withdrawn          → chargeback of the disputed amount, once per dispute
 *   charge.dispute.funds_reinstated                   → credit of the chargeback posted for that dispute,
 *                                                       once; none posted → nothing (noted in the log)
 */
import type Stripe from 'stripe'
import { CHECKOUT_MAX_USD, CHECKOUT_MIN_USD } from '../../contract/ops/billing.ts'
import type { StripeConfig } from '../../platform/config.ts'
import { AppError } from '../../platform/errors.ts'
import type { PaymentEffect } from '../../store/accounts/payments-types.ts'
import type { ServiceContext } from '../context.ts'
import type { Principal } from '../identity/keys.ts'

/** Stripe's own default: a signed timestamp older than this is a replay. */
const WEBHOOK_TOLERANCE_S = 300
/** Micro-dollars per US cent. */
const MICROS_PER_CENT = 10_000
const ACCOUNT_METADATA = 'erm3_account_id'

const NOT_CONFIGURED =
  'Card top-ups are not configured on this instance (STRIPE_SECRET_KEY and STRIPE_WEBHOOK_SECRET are unset); ' +
  'top-ups go through the operator: see GET /docs/billing'

const clients = new WeakMap<StripeConfig, Stripe>()

function stripeConfig(ctx: ServiceContext): StripeConfig {
  const cfg = ctx.config.stripe
  if (!cfg) throw new AppError('UNAVAILABLE', NOT_CONFIGURED)
  return cfg
}

/** The SDK is loaded on first use: an instance without card top-ups never pays its start-up. */
async function clientOf(cfg: StripeConfig): Promise<Stripe> {
  let c = clients.get(cfg)
  if (!c) {
    const { default: Stripe } = await import('stripe')
    c =
      clients.get(cfg) ??
      new Stripe(cfg.secretKey, {
        maxNetworkRetries: 2,
        timeout: 20_000,
        telemetry: false,
        ...(cfg.apiBase ?? {}),
      })
    clients.set(cfg, c)
  }
  return c
}

/** Who tops up: a key's principal, or a session (always live). */
export interface Payer {
  accountId: string
  environment: Principal['environment']
}

export async function createCheckout(ctx: ServiceContext, p: Payer, amountUsd: number) {
  const cfg = stripeConfig(ctx)
  if (p.environment !== 'live')
    throw new AppError('FORBIDDEN', 'Top-ups need a live key or session: test keys never move money')
  const cents = Math.round(amountUsd * 100)
  if (
    !Number.isFinite(amountUsd) ||
    Math.abs(amountUsd * 100 - cents) > 1e-6 ||
    cents < CHECKOUT_MIN_USD * 100 ||
    cents > CHECKOUT_MAX_USD * 100
  ) {
    throw new AppError(
      'INVALID_INPUT',
      `amount_usd must be ${CHECKOUT_MIN_USD}.00 to ${CHECKOUT_MAX_USD}.00 USD with at most two decimals`,
      { fields: [{ field: 'amount_usd', message: 'at most two decimals, within the bounds' }] },
    )
  }
  const base = ctx.config.publicUrl
  let session: Stripe.Checkout.Session
  try {
    session = await (await clientOf(cfg)).checkout.sessions.create({
      mode: 'payment',
      line_items: [
        {
          quantity: 1,
          price_data: {
            currency: 'usd',
            unit_amount: cents,
            product_data: { name: 'erm3 prepaid balance top-up' },
          },
        },
      ],
      client_reference_id: p.accountId,
      metadata: { [ACCOUNT_METADATA]: p.accountId },
      payment_intent_data: { metadata: { [ACCOUNT_METADATA]: p.accountId } },
      success_url: `${base}/docs/billing?checkout=success&session_id={CHECKOUT_SESSION_ID}`,
      cancel_url: `${base}/docs/billing?checkout=cancelled`,
    })
  } catch (e) {
    // The SDK's message names what Stripe refused; never the key.
    ctx.log.error({ err: (e as Error).message, account_id: p.accountId }, 'stripe checkout failed')
    throw new AppError('UNAVAILABLE', 'The payment provider could not start a checkout; try again later', {
      cause: e,
    })
  }
  if (!session.url)
    throw new AppError('UNAVAILABLE', 'The payment provider returned a checkout session without a URL')
  ctx.log.info({ account_id: p.accountId, session_id: session.id, cents }, 'stripe checkout created')
  return {
    checkout_url: session.url,
    session_id: session.id,
    amount_usd: cents / 100,
    currency: 'USD' as const,
    account_id: p.accountId,
    expires_at:
      typeof session.expires_at === 'number' ? new Date(session.expires_at * 1000).toISOString() : null,
  }
}

type Obj = Record<string, unknown>

const idOf = (v: unknown): string | null =>
  typeof v === 'string'
    ? v
    : v && typeof v === 'object' && typeof (v as Obj).id === 'string'
      ? ((v as Obj).id as string)
      : null
const cents = (v: unknown): number | null =>
  typeof v === 'number' && Number.isSafeInteger(v) && v >= 0 ? v : null
const metaAccount = (o: Obj): string | null => {
  const m = o.metadata
  const v = m && typeof m === 'object' ? (m as Obj)[ACCOUNT_METADATA] : undefined
  return typeof v === 'string' && v !== '' ? v : null
}

/**
 * What an event means for the ledger: an effect to apply, or null for an event to acknowledge and
 * forget (a type erm3 does not use, or an object that is not an erm3 USD payment).
 */
async function effectOf(
  ctx: ServiceContext,
  type: string,
  o: Obj,
): Promise<{ effect: PaymentEffect; ours: boolean } | { ignore: string }> {
  const currencyOk = typeof o.currency !== 'string' || o.currency.toLowerCase() === 'usd'
  switch (type) {
    case 'checkout.session.completed':
    case 'checkout.session.async_payment_succeeded': {
      const accountId =
        (typeof o.client_reference_id === 'string' ? o.client_reference_id : null) ?? metaAccount(o)
      const pi = idOf(o.payment_intent)
      const amount = cents(o.amount_total)
      if (o.mode !== 'payment' || !accountId) return { ignore: 'not an erm3 top-up session' }
      if (!currencyOk) return { ignore: `currency ${String(o.currency)} is not usd` }
      if (o.payment_status !== 'paid' || !pi || !amount)
        // An asynchronous payment method: its async_payment_succeeded credits later.
        return { effect: { kind: 'none', accountId, paymentIntent: pi }, ours: true }
      if (!(await ctx.accounts.getAccount(accountId))) return { ignore: `unknown account ${accountId}` }
      return {
        effect: {
          kind: 'topup',
          accountId,
          paymentIntent: pi,
          sessionId: typeof o.id === 'string' ? o.id : null,
          amountMicros: amount * MICROS_PER_CENT,
        },
        ours: true,
      }
    }
    case 'payment_intent.succeeded':
      return { effect: { kind: 'none', accountId: metaAccount(o), paymentIntent: idOf(o.id) }, ours: true }
    case 'charge.refunded': {
      const pi = idOf(o.payment_intent)
      const refunded = cents(o.amount_refunded)
      if (!pi || refunded === null) return { ignore: 'refund without payment intent or amount' }
      if (!currencyOk) return { ignore: `currency ${String(o.currency)} is not usd` }
      return {
        effect: { kind: 'refund', paymentIntent: pi, refundedTotalMicros: refunded * MICROS_PER_CENT },
        ours: metaAccount(o) !== null,
      }
    }
    case 'charge.dispute.created':
    case 'charge.dispute.funds_withdrawn':
    case 'charge.dispute.funds_reinstated': {
      const pi = idOf(o.payment_intent)
      const disputeId = idOf(o.id)
      const amount = cents(o.amount)
      if (!pi || !disputeId || !amount) return { ignore: 'dispute without payment intent or amount' }
      if (!currencyOk) return { ignore: `currency ${String(o.currency)} is not usd` }
      // An inquiry (warning_*) withdraws nothing; funds_withdrawn follows if it becomes a dispute.
      if (
        type === 'charge.dispute.created' &&
        typeof o.status === 'string' &&
        o.status.startsWith('warning_')
      )
        return { effect: { kind: 'none', accountId: null, paymentIntent: pi }, ours: true }
      const kind = type === 'charge.dispute.funds_reinstated' ? 'reinstatement' : 'chargeback'
      return {
        effect: { kind, paymentIntent: pi, disputeId, amountMicros: amount * MICROS_PER_CENT },
        ours: metaAccount(o) !== null,
      }
    }
    default:
      return { ignore: `event type ${type} is not used` }
  }
}

export type WebhookOutcome = 'applied' | 'duplicate' | 'ignored'

export async function handleStripeWebhook(
  ctx: ServiceContext,
  raw: Buffer | null,
  signature: string | undefined,
): Promise<{ received: true; event_id: string; outcome: WebhookOutcome }> {
  const cfg = stripeConfig(ctx)
  if (!signature) throw new AppError('INVALID_REQUEST', 'Missing Stripe-Signature header')
  if (!raw) throw new AppError('INVALID_REQUEST', 'Missing request body')
  let event: Stripe.Event
  const client = await clientOf(cfg)
  try {
    event = client.webhooks.constructEvent(
      raw,
      signature,
      cfg.webhookSecret,
      WEBHOOK_TOLERANCE_S,
      undefined,
      ctx.now(),
    )
  } catch (e) {
    const why =
      String((e as Error).message ?? '')
        .split('\n')[0]
        ?.trim() || 'invalid signature'
    ctx.log.warn({ reason: why }, 'stripe webhook refused')
    throw new AppError('INVALID_REQUEST', `Stripe signature verification failed: ${why}`)
  }
  const object = (event.data?.object ?? {}) as unknown as Obj
  const done = (outcome: WebhookOutcome, extra: Obj = {}) => {
    ctx.log.info({ event_id: event.id, type: event.type, outcome, ...extra }, 'stripe event')
    return { received: true as const, event_id: event.id, outcome }
  }
  const meaning = await effectOf(ctx, event.type, object)
  if ('ignore' in meaning) return done('ignored', { reason: meaning.ignore })
  const r = await ctx.accounts
    .payments()
    .applyEvent({ eventId: event.id, type: event.type, effect: meaning.effect }, ctx.now())
  if (r.outcome === 'duplicate_event') return done('duplicate')
  if (r.outcome === 'unknown_payment') {
    // A refund or dispute of an erm3 payment whose credit has not arrived yet: Stripe retries.
    if (meaning.ours)
      throw new AppError('UNAVAILABLE', 'The payment of this event is not credited yet; retry later', {
        retryAfterSeconds: 60,
      })
    return done('ignored', { reason: 'payment unknown to erm3' })
  }
  return done('applied', {
    account_id: r.accountId,
    ledger_id: r.entry?.id ?? null,
    amount_micros: r.entry?.amountMicros ?? 0,
    ...(r.note ? { note: r.note } : {}),
  })
}
