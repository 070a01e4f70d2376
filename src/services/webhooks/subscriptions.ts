/**
 * Webhook subscriptions of the signed-in account and its balance alert. Every
 * operation is scoped to the session's account: another account's subscription is "not found".
 */
import { microsToUsd, usdToMicros } from '../../contract/pricing.ts'
import { AppError } from '../../platform/errors.ts'
import { newId } from '../../platform/ids.ts'
import {
  type Delivery,
  type DeliveryAttempt,
  type Subscription,
  WEBHOOK_EVENTS,
  type WebhookEvent,
} from '../../store/accounts/webhooks-types.ts'
import type { ServiceContext } from '../context.ts'
import type { Session } from '../identity/session.ts'
import { encryptSecret, generateSecret } from './crypto.ts'
import { checkTargetUrl } from './target.ts'

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString())
const MAX_SUBSCRIPTIONS = 20

function webhookKey(ctx: ServiceContext): string {
  const k = ctx.secrets.webhookKey
  if (!k)
    throw new AppError(
      'UNAVAILABLE',
      'Webhooks are not configured on this server: the operator must set ERM3_WEBHOOK_KEY (the same on every node)',
    )
  return k
}

/** The subscription URL rules (target.ts), with the operator's loopback opt-in. */
function checkWebhookUrl(ctx: ServiceContext, raw: string): string {
  return checkTargetUrl(raw, { allowLoopback: ctx.config.webhookAllowLoopback })
}

function checkEvents(events: string[]): WebhookEvent[] {
  const unknown = events.filter((e) => !(WEBHOOK_EVENTS as readonly string[]).includes(e))
  if (unknown.length)
    throw new AppError(
      'INVALID_REQUEST',
      `events: unknown ${unknown.join(', ')}; one of ${WEBHOOK_EVENTS.join(', ')}`,
      {
        fields: [{ field: 'events', message: `unknown: ${unknown.join(', ')}` }],
      },
    )
  return [...new Set(events)] as WebhookEvent[]
}

function subscriptionView(s: Subscription) {
  return {
    id: s.id,
    url: s.url,
    events: s.events,
    enabled: s.enabled,
    disabled_reason: s.disabledReason,
    failing_since: iso(s.failingSince),
    created_at: iso(s.createdAt) as string,
    updated_at: iso(s.updatedAt) as string,
  }
}

function notFound(id: string): AppError {
  return new AppError('NOT_FOUND', `No webhook subscription ${id} on this account`)
}

export async function createSubscription(
  ctx: ServiceContext,
  session: Session,
  input: { url: string; events: string[] },
) {
  const key = webhookKey(ctx)
  const url = checkWebhookUrl(ctx, input.url)
  const events = checkEvents(input.events)
  const store = ctx.accounts.webhooks()
  if ((await store.listSubscriptions(session.accountId)).length >= MAX_SUBSCRIPTIONS)
    throw new AppError(
      'CONFLICT',
      `An account has at most ${MAX_SUBSCRIPTIONS} webhook subscriptions: delete one first`,
    )
  const now = ctx.now()
  const id = newId('whs', now)
  const secret = generateSecret()
  const sub = await store.createSubscription({
    id,
    accountId: session.accountId,
    url,
    events,
    secretEnc: encryptSecret(key, id, secret),
    createdAt: now,
  })
  return { ...subscriptionView(sub), secret }
}

export async function listSubscriptions(ctx: ServiceContext, session: Session) {
  const subs = await ctx.accounts.webhooks().listSubscriptions(session.accountId)
  return { subscriptions: subs.map(subscriptionView) }
}

export async function getSubscription(ctx: ServiceContext, session: Session, id: string) {
  const sub = await ctx.accounts.webhooks().getSubscription(session.accountId, id)
  if (!sub) throw notFound(id)
  return subscriptionView(sub)
}

export async function updateSubscription(
  ctx: ServiceContext,
  session: Session,
  id: string,
  input: { url?: string; events?: string[]; enabled?: boolean },
) {
  const url = input.url === undefined ? undefined : checkWebhookUrl(ctx, input.url)
  const events = input.events === undefined ? undefined : checkEvents(input.events)
  const sub = await ctx.accounts
    .webhooks()
    .updateSubscription(session.accountId, id, { url, events, enabled: input.enabled, updatedAt: ctx.now() })
  if (!sub) throw notFound(id)
  return subscriptionView(sub)
}

export async function deleteSubscription(ctx: ServiceContext, session: Session, id: string) {
  if (!(await ctx.accounts.webhooks().deleteSubscription(session.accountId, id))) throw notFound(id)
  return { id, deleted: true as const }
}

/** A new secret, shown once; the old one stops signing at once. */
export async function rotateSecret(ctx: ServiceContext, session: Session, id: string) {
  const key = webhookKey(ctx)
  const secret = generateSecret()
  const sub = await ctx.accounts.webhooks().updateSubscription(session.accountId, id, {
    secretEnc: encryptSecret(key, id, secret),
    updatedAt: ctx.now(),
  })
  if (!sub) throw notFound(id)
  return { ...subscriptionView(sub), secret }
}

function deliveryView(d: Delivery & { log?: DeliveryAttempt[] }) {
  return {
    id: d.id,
    event_id: d.eventId,
    event: d.event,
    status: d.status,
    attempts: d.attempts,
    next_attempt_at: d.status === 'pending' ? iso(d.nextAttemptAt) : null,
    response_code: d.lastStatusCode,
    error: d.lastError,
    latency_ms: d.lastLatencyMs,
    created_at: iso(d.createdAt) as string,
    delivered_at: iso(d.deliveredAt),
    redelivery_of: d.redeliveryOf,
    log: (d.log ?? []).map((a) => ({
      attempt: a.attempt,
      at: iso(a.startedAt) as string,
      ok: a.ok,
      response_code: a.statusCode,
      error: a.error,
      latency_ms: a.latencyMs,
    })),
  }
}

async function enabledSubscription(ctx: ServiceContext, session: Session, id: string) {
  const sub = await ctx.accounts.webhooks().getSubscription(session.accountId, id)
  if (!sub) throw notFound(id)
  if (!sub.enabled)
    throw new AppError(
      'CONFLICT',
      `Webhook subscription ${id} is disabled: enable it first ({"enabled": true})`,
    )
  return sub
}

/** Enqueues a `webhook.test` event for the subscription (delivered by the dispatcher, like any event). */
export async function sendTestEvent(ctx: ServiceContext, session: Session, id: string) {
  webhookKey(ctx)
  await enabledSubscription(ctx, session, id)
  const d = await ctx.accounts.webhooks().enqueueTest(session.accountId, id, ctx.now())
  if (!d) throw notFound(id)
  return deliveryView(d)
}

export async function listDeliveries(ctx: ServiceContext, session: Session, id: string, limit: number) {
  const sub = await ctx.accounts.webhooks().getSubscription(session.accountId, id)
  if (!sub) throw notFound(id)
  const rows = await ctx.accounts.webhooks().listDeliveries(session.accountId, id, limit)
  return { subscription_id: id, deliveries: rows.map(deliveryView) }
}

/** Sends a delivery's event again as a new delivery (new id, same event id and body). */
export async function redeliver(ctx: ServiceContext, session: Session, id: string, deliveryId: string) {
  webhookKey(ctx)
  await enabledSubscription(ctx, session, id)
  const d = await ctx.accounts.webhooks().redeliver(session.accountId, id, deliveryId, ctx.now())
  if (!d) throw new AppError('NOT_FOUND', `No delivery ${deliveryId} of webhook subscription ${id}`)
  return deliveryView(d)
}

function alertView(a: { thresholdMicros: number; armed: boolean }) {
  return { threshold_usd: microsToUsd(a.thresholdMicros), armed: a.armed }
}

export async function getBalanceAlert(ctx: ServiceContext, session: Session) {
  const a = await ctx.accounts.webhooks().balanceAlert(session.accountId)
  if (!a) throw new AppError('INVALID_KEY', 'The session refers to an account that no longer exists')
  return alertView(a)
}

export async function setBalanceAlert(ctx: ServiceContext, session: Session, thresholdUsd: number) {
  const micros = usdToMicros(thresholdUsd)
  if (!Number.isFinite(micros) || micros < 0 || Math.abs(micros - thresholdUsd * 1_000_000) > 1e-3)
    throw new AppError('INVALID_REQUEST', 'threshold_usd: a non-negative amount with at most 6 decimals', {
      fields: [{ field: 'threshold_usd', message: 'at most 6 decimals, ≥ 0' }],
    })
  const a = await ctx.accounts.webhooks().setBalanceAlert(session.accountId, micros)
  if (!a) throw new AppError('INVALID_KEY', 'The session refers to an account that no longer exists')
  return alertView(a)
}
