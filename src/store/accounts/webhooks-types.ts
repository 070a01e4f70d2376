/**
 * Webhook subscriptions, the delivery outbox and balance alerts: the part of the
 * account store the webhook service uses. Events are enqueued by the account store itself, inside
 * the transaction of the change that causes them (insertKey, revokeKey, credit, settle); this
 * interface manages subscriptions, claims and completes deliveries, and reads the log.
 */

/** Events a subscription may ask for. */
export const WEBHOOK_EVENTS = [
  'batch.completed',
  'balance.low',
  'balance.topped_up',
  'key.created',
  'key.revoked',
  'model.updated',
] as const
export type WebhookEvent = (typeof WEBHOOK_EVENTS)[number]
/** Not subscribable: a test delivery asked for by the account; an e-mail about a disabled subscription. */
export type OutboxEvent = WebhookEvent | 'webhook.test' | 'webhook.disabled'

export interface Subscription {
  id: string
  accountId: string
  url: string
  events: WebhookEvent[]
  enabled: boolean
  disabledReason: string | null
  failingSince: number | null
  createdAt: number
  updatedAt: number
}

interface NewSubscription {
  id: string
  accountId: string
  url: string
  events: WebhookEvent[]
  /** The secret encrypted (never the plaintext). */
  secretEnc: string
  createdAt: number
}

export interface SubscriptionPatch {
  url?: string
  events?: WebhookEvent[]
  /** Enabling clears the failure run and the reason it was disabled. */
  enabled?: boolean
  secretEnc?: string
  updatedAt: number
}

type DeliveryStatus = 'pending' | 'delivered' | 'failed'

export interface DeliveryAttempt {
  attempt: number
  startedAt: number
  latencyMs: number
  statusCode: number | null
  error: string | null
  ok: boolean
}

export interface Delivery {
  id: string
  accountId: string
  subscriptionId: string | null
  channel: 'webhook' | 'email'
  eventId: string
  event: OutboxEvent
  /** The event's data as stored (amounts in micros; the service renders the wire payload). */
  data: Record<string, unknown>
  status: DeliveryStatus
  attempts: number
  nextAttemptAt: number | null
  lastStatusCode: number | null
  lastError: string | null
  lastLatencyMs: number | null
  createdAt: number
  /** When the event happened (equal to createdAt except for a re-delivery). */
  eventAt: number
  deliveredAt: number | null
  redeliveryOf: string | null
}

/** A due delivery claimed by a dispatcher, with what it needs to send it. */
export interface ClaimedDelivery extends Delivery {
  /** The attempt this claim is (attempts after the claim); completions must name it. */
  attempt: number
  leaseUntil: number
  /** Webhook channel: the target and the encrypted secret. */
  url: string | null
  secretEnc: string | null
  /** E-mail channel: the account's address (null for an anonymous account). */
  email: string | null
}

export interface AttemptOutcome {
  deliveryId: string
  owner: string
  attempt: number
  startedAt: number
  latencyMs: number
  statusCode: number | null
  error: string | null
  ok: boolean
  /** When not ok: the next attempt, or null when the retry window is over (the delivery fails). */
  nextAttemptAt: number | null
  /** When not ok: a subscription failing since before this is disabled (and the account told). */
  disableIfFailingSince: number
  /** The e-mail about a disabled subscription: id of its event and when. */
  now: number
}

interface FinishResult {
  /** False when the lease was lost (another dispatcher took the delivery): nothing was recorded. */
  recorded: boolean
  /** The subscription was disabled by this failure. */
  disabled: boolean
}

interface BalanceAlert {
  thresholdMicros: number
  armed: boolean
}

export interface WebhookStore {
  createSubscription(s: NewSubscription): Promise<Subscription>
  listSubscriptions(accountId: string): Promise<Subscription[]>
  /** Null when the subscription does not exist or belongs to another account. */
  getSubscription(accountId: string, id: string): Promise<Subscription | null>
  /** The encrypted secret of a subscription of this account, or null. */
  subscriptionSecret(accountId: string, id: string): Promise<string | null>
  updateSubscription(accountId: string, id: string, patch: SubscriptionPatch): Promise<Subscription | null>
  /** Deletes the subscription and its deliveries; false when not found. */
  deleteSubscription(accountId: string, id: string): Promise<boolean>
  /**
   * Fans an account event the service raises itself (not inside an account-store change, e.g.
   * `batch.completed` after a batch call was answered) out to the account's enabled subscriptions
   * that ask for it, in one statement. Returns how many deliveries were enqueued.
   */
  enqueueEvent(
    accountId: string,
    event: WebhookEvent,
    data: Record<string, unknown>,
    now: number,
  ): Promise<number>
  /** Enqueues a `webhook.test` delivery for one subscription; returns it (null when not found). */
  enqueueTest(accountId: string, id: string, now: number): Promise<Delivery | null>
  /** Newest first. */
  listDeliveries(
    accountId: string,
    subscriptionId: string,
    limit: number,
  ): Promise<(Delivery & { log: DeliveryAttempt[] })[]>
  /** A new pending delivery of the same event to the same subscription; null when not found. */
  redeliver(
    accountId: string,
    subscriptionId: string,
    deliveryId: string,
    now: number,
  ): Promise<Delivery | null>

  /**
   * Claims up to `limit` due deliveries (pending, next attempt ≤ now, no live lease) of enabled
   * subscriptions and e-mails, leasing each to `owner` until now + leaseMs. Claims of concurrent
   * dispatchers (other nodes) never overlap. `emailOnly`: a node that cannot sign (no webhook key)
   * leaves webhook deliveries to the nodes that can.
   */
  claim(
    owner: string,
    now: number,
    leaseMs: number,
    limit: number,
    emailOnly?: boolean,
  ): Promise<ClaimedDelivery[]>
  /** Records an attempt's outcome, only if `owner` still holds the lease of that attempt. */
  finish(outcome: AttemptOutcome): Promise<FinishResult>

  /**
   * Records that a build is served; the first time a `data_as_of` is seen (across every node),
   * enqueues `model.updated` for every subscription that asks for it. True when it was new.
   */
  recordModelBuild(dataAsOf: string, modelVersion: string, now: number): Promise<boolean>

  /** Deletes finished (delivered or failed) deliveries created before `before`, with their log; returns how many. */
  purgeDeliveries(before: number): Promise<number>

  balanceAlert(accountId: string): Promise<BalanceAlert | null>
  /** Sets the threshold; re-arms when the balance is at or above it. */
  setBalanceAlert(accountId: string, thresholdMicros: number): Promise<BalanceAlert | null>
}
