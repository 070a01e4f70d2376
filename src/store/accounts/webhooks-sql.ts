import { newId } from '../../platform/ids.ts'

/**
 * SQL of webhooks and balance alerts shared by both dialects (written with `?` placeholders;
 * `toPg` numbers them for PostgreSQL), the row shapes and their mapping to the interface types.
 */
import type {
  AttemptOutcome,
  ClaimedDelivery,
  Delivery,
  DeliveryAttempt,
  OutboxEvent,
  Subscription,
  SubscriptionPatch,
  WebhookEvent,
} from './webhooks-types.ts'

/** `?` → `$1, $2, …` in order. */
export function toPg(sql: string): string {
  let n = 0
  return sql.replace(/\?/g, () => `$${++n}`)
}

export type Dialect = 'sqlite' | 'postgres'

/** A fresh delivery id computed by the database (rows fanned out by one INSERT … SELECT). */
export function deliveryIdSql(d: Dialect): string {
  return d === 'sqlite'
    ? `'whd_' || lower(hex(randomblob(12)))`
    : `'whd_' || replace(gen_random_uuid()::text, '-', '')`
}

/** `events` (comma-separated) of alias `s` contains the event given by `param`. */
export function hasEventSql(d: Dialect, param: string): string {
  return d === 'sqlite'
    ? `instr(',' || s.events || ',', ',' || ${param} || ',') > 0`
    : `strpos(',' || s.events || ',', ',' || ${param} || ',') > 0`
}

export const DELIVERY_INSERT_COLUMNS =
  'id, account_id, subscription_id, channel, event_id, event, data, status, next_attempt_at, created_at, event_at'

/**
 * Fans one account event out to the account's enabled subscriptions that ask for it. Parameters:
 * event id, event, data (JSON), now ×3, account id, event.
 */
export function enqueueForAccountSql(d: Dialect): string {
  return `INSERT INTO webhook_deliveries (${DELIVERY_INSERT_COLUMNS})
    SELECT ${deliveryIdSql(d)}, s.account_id, s.id, 'webhook', ?, ?, ?, 'pending', ?, ?, ?
    FROM webhook_subscriptions s
    WHERE s.account_id = ? AND s.enabled = 1 AND ${hasEventSql(d, '?')}`
}

export const SUBSCRIPTION_COLUMNS =
  'id, account_id, url, events, enabled, disabled_reason, failing_since, created_at, updated_at'

export interface SubscriptionRow {
  id: string
  account_id: string
  url: string
  events: string
  enabled: number
  disabled_reason: string | null
  failing_since: number | null
  created_at: number
  updated_at: number
}

export function toSubscription(r: SubscriptionRow): Subscription {
  return {
    id: r.id,
    accountId: r.account_id,
    url: r.url,
    events: (r.events === '' ? [] : r.events.split(',')) as WebhookEvent[],
    enabled: Number(r.enabled) === 1,
    disabledReason: r.disabled_reason,
    failingSince: r.failing_since === null ? null : Number(r.failing_since),
    createdAt: Number(r.created_at),
    updatedAt: Number(r.updated_at),
  }
}

export const DELIVERY_COLUMNS =
  'd.id, d.account_id, d.subscription_id, d.channel, d.event_id, d.event, d.data, d.status, d.attempts, ' +
  'd.next_attempt_at, d.last_status_code, d.last_error, d.last_latency_ms, d.created_at, d.event_at, ' +
  'd.delivered_at, d.redelivery_of'

export interface DeliveryRow {
  id: string
  account_id: string
  subscription_id: string | null
  channel: string
  event_id: string
  event: string
  data: string
  status: string
  attempts: number
  next_attempt_at: number | null
  last_status_code: number | null
  last_error: string | null
  last_latency_ms: number | null
  created_at: number
  event_at: number
  delivered_at: number | null
  redelivery_of: string | null
}

const num = (v: number | null) => (v === null ? null : Number(v))

export function toDelivery(r: DeliveryRow): Delivery {
  return {
    id: r.id,
    accountId: r.account_id,
    subscriptionId: r.subscription_id,
    channel: r.channel as Delivery['channel'],
    eventId: r.event_id,
    event: r.event as OutboxEvent,
    data: JSON.parse(r.data) as Record<string, unknown>,
    status: r.status as Delivery['status'],
    attempts: Number(r.attempts),
    nextAttemptAt: num(r.next_attempt_at),
    lastStatusCode: num(r.last_status_code),
    lastError: r.last_error,
    lastLatencyMs: num(r.last_latency_ms),
    createdAt: Number(r.created_at),
    eventAt: Number(r.event_at),
    deliveredAt: num(r.delivered_at),
    redeliveryOf: r.redelivery_of,
  }
}

export interface ClaimedRow extends DeliveryRow {
  lease_until: number
  url: string | null
  secret_enc: string | null
  email: string | null
}

export function toClaimed(r: ClaimedRow): ClaimedDelivery {
  return {
    ...toDelivery(r),
    attempt: Number(r.attempts),
    leaseUntil: Number(r.lease_until),
    url: r.url,
    secretEnc: r.secret_enc,
    email: r.email,
  }
}

export interface AttemptRow {
  delivery_id: string
  attempt: number
  started_at: number
  latency_ms: number
  status_code: number | null
  error: string | null
  ok: number
}

export function toAttempt(r: AttemptRow): DeliveryAttempt {
  return {
    attempt: Number(r.attempt),
    startedAt: Number(r.started_at),
    latencyMs: Number(r.latency_ms),
    statusCode: num(r.status_code),
    error: r.error,
    ok: Number(r.ok) === 1,
  }
}

/**
 * Due deliveries: pending, next attempt reached, no live lease, of an enabled subscription or an
 * e-mail. Parameters: now, now, e-mail only (1/0).
 */
export const DUE_WHERE = `d.status = 'pending' AND d.next_attempt_at <= ?
  AND (d.lease_until IS NULL OR d.lease_until <= ?) AND (? = 0 OR d.channel = 'email')
  AND (d.channel = 'email' OR EXISTS (
    SELECT 1 FROM webhook_subscriptions s WHERE s.id = d.subscription_id AND s.enabled = 1))`

/** Finished deliveries older than the cutoff, and their attempts (the log is kept for a while, not forever). */
export const PURGE_ATTEMPTS = `DELETE FROM webhook_attempts WHERE delivery_id IN (
  SELECT id FROM webhook_deliveries WHERE status <> 'pending' AND created_at < ?)`
export const PURGE_DELIVERIES = `DELETE FROM webhook_deliveries WHERE status <> 'pending' AND created_at < ?`

/** Records the outcome of a claimed attempt if the claim still holds (same owner, same attempt). */
export const FINISH_DELIVERY = `UPDATE webhook_deliveries SET status = ?, next_attempt_at = ?, lease_owner = NULL,
    lease_until = NULL, last_status_code = ?, last_error = ?, last_latency_ms = ?, delivered_at = ?
  WHERE id = ? AND lease_owner = ? AND attempts = ? AND status = 'pending'
  RETURNING subscription_id, account_id, channel`

export const INSERT_ATTEMPT = `INSERT INTO webhook_attempts (delivery_id, attempt, started_at, latency_ms, status_code, error, ok)
  VALUES (?, ?, ?, ?, ?, ?, ?)`

/** FINISH_DELIVERY's parameters for an attempt's outcome. */
export function finishValues(o: AttemptOutcome): unknown[] {
  const status = o.ok ? 'delivered' : o.nextAttemptAt === null ? 'failed' : 'pending'
  return [
    status,
    o.ok ? null : o.nextAttemptAt,
    o.statusCode,
    o.error,
    o.latencyMs,
    o.ok ? o.startedAt + o.latencyMs : null,
    o.deliveryId,
    o.owner,
    o.attempt,
  ]
}

/** What FINISH_DELIVERY returns when the claim still held. */
export interface FinishedRow {
  subscription_id: string | null
  account_id: string
  channel: string
}

/** INSERT_ATTEMPT's parameters for an attempt's outcome. */
export function attemptValues(o: AttemptOutcome): unknown[] {
  return [o.deliveryId, o.attempt, o.startedAt, o.latencyMs, o.statusCode, o.error, o.ok ? 1 : 0]
}

/** What SUBSCRIPTION_FAILED returns. */
export interface FailingRow {
  failing_since: number
  enabled: number
  url: string
}

/**
 * After a failed attempt of a subscription: why it is to be disabled now, or null when it stays
 * (enabled and failing since no earlier than the outcome allows, or already disabled or gone).
 */
export function disableReason(sub: FailingRow | undefined, o: AttemptOutcome): string | null {
  if (!sub || Number(sub.enabled) !== 1 || Number(sub.failing_since) > o.disableIfFailingSince) return null
  return `deliveries failing since ${new Date(Number(sub.failing_since)).toISOString()}`
}

/**
 * enqueueEmailSql's parameters for the e-mail telling the account its subscription was disabled
 * (not a subscribable event: the account hears of it by e-mail, and sees it in the API).
 */
export function disabledEmailValues(
  row: FinishedRow,
  sub: FailingRow,
  reason: string,
  now: number,
): unknown[] {
  const data = JSON.stringify({ subscription_id: row.subscription_id, url: sub.url, reason })
  return [newId('evt', now), 'webhook.disabled', data, now, now, now, row.account_id]
}

/** Applies a patch to a subscription; parameters: UPDATE_SUBSCRIPTION's, see `subscriptionUpdate`. */
export const UPDATE_SUBSCRIPTION = `UPDATE webhook_subscriptions SET url = ?, events = ?, enabled = ?,
    secret_enc = COALESCE(?, secret_enc), disabled_reason = ?, failing_since = ?, updated_at = ?
  WHERE id = ? AND account_id = ?`

/**
 * UPDATE_SUBSCRIPTION's parameters for `p` over the current row: what the patch leaves out stays;
 * enabling a disabled subscription clears its failure, disabling it records the account did.
 */
export function subscriptionUpdate(
  cur: SubscriptionRow,
  p: SubscriptionPatch,
  id: string,
  accountId: string,
): unknown[] {
  const enabling = p.enabled === true && Number(cur.enabled) !== 1
  return [
    p.url ?? cur.url,
    p.events ? p.events.join(',') : cur.events,
    p.enabled === undefined ? cur.enabled : p.enabled ? 1 : 0,
    p.secretEnc ?? null,
    enabling ? null : p.enabled === false ? 'disabled by the account' : cur.disabled_reason,
    enabling ? null : cur.failing_since,
    p.updatedAt,
    id,
    accountId,
  ]
}

export const SUBSCRIPTION_OK = 'UPDATE webhook_subscriptions SET failing_since = NULL WHERE id = ?'
export const SUBSCRIPTION_FAILED = `UPDATE webhook_subscriptions SET failing_since = COALESCE(failing_since, ?)
  WHERE id = ? RETURNING failing_since, enabled, url`
export const SUBSCRIPTION_DISABLE = `UPDATE webhook_subscriptions SET enabled = 0, disabled_reason = ?, updated_at = ?
  WHERE id = ? AND enabled = 1`

/** The account's e-mail (no row for an anonymous account). Parameters: event id, event, data, now ×3, account id. */
export function enqueueEmailSql(d: Dialect): string {
  return `INSERT INTO webhook_deliveries (${DELIVERY_INSERT_COLUMNS})
    SELECT ${deliveryIdSql(d)}, a.id, NULL, 'email', ?, ?, ?, 'pending', ?, ?, ?
    FROM accounts a WHERE a.id = ? AND a.email IS NOT NULL`
}

/** model.updated to every enabled subscription asking for it. Parameters: event id, data, now ×3. */
export function enqueueModelSql(d: Dialect): string {
  return `INSERT INTO webhook_deliveries (${DELIVERY_INSERT_COLUMNS})
    SELECT ${deliveryIdSql(d)}, s.account_id, s.id, 'webhook', ?, 'model.updated', ?, 'pending', ?, ?, ?
    FROM webhook_subscriptions s WHERE s.enabled = 1 AND ${hasEventSql(d, "'model.updated'")}`
}
