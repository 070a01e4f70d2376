/**
 * The outbox dispatcher: claims due deliveries (leased, so several nodes never send the same
 * attempt), sends each — a signed JSON POST to a subscription, or an e-mail through the mailer —
 * and records the outcome. 2xx is delivered; anything else (a timeout, a refused connection, a
 * redirect, a 4xx/5xx) is retried with exponential backoff and jitter until 24 h after the
 * delivery was created. A subscription failing for 24 h is disabled and its account e-mailed.
 *
 * Every attempt checks the target again (target.ts): a name re-pointed to a private address since
 * the subscription was made is refused before any connection, with the same words whatever the
 * reason, and the connection goes only to the addresses checked.
 *
 * Delivery is at least once: a dispatcher killed mid-delivery loses its lease, and the delivery
 * is sent again (same X-Erm3-Delivery) after the lease expires.
 */

import { getBillingDocs } from '../../contract/ops/docs.ts'
import { randomBase62 } from '../../platform/ids.ts'
import type { ClaimedDelivery, WebhookStore } from '../../store/accounts/webhooks-types.ts'
import type { ServiceContext } from '../context.ts'
import { decryptSecret, signatureHeader } from './crypto.ts'
import { eventBody, eventEmail } from './events.ts'
import { postWebhook } from './post.ts'
import { type ResolveHost, systemResolve } from './target.ts'

const RETRY_WINDOW_MS = 24 * 3600_000
/** How long the delivery log keeps finished deliveries. */
const LOG_RETENTION_MS = 30 * 24 * 3600_000

/** Drops finished deliveries older than the retention (run with the server's periodic housekeeping). */
export function purgeDeliveryLog(ctx: ServiceContext): Promise<number> {
  return ctx.accounts.webhooks().purgeDeliveries(ctx.now() - LOG_RETENTION_MS)
}
const DISABLE_AFTER_MS = 24 * 3600_000

export interface DispatcherOptions {
  /** Lease of a claimed delivery; longer than the send timeout. */
  leaseMs?: number
  timeoutMs?: number
  batch?: number
  pollMs?: number
  /** First retry delay; doubles per attempt up to maxDelayMs. */
  baseDelayMs?: number
  maxDelayMs?: number
  /** Uniform in [0, 1): the jitter source (tests fix it). */
  random?: () => number
  owner?: string
  /** Resolves a target's host name (default: the system resolver); tests inject theirs. */
  resolve?: ResolveHost
}

export interface Dispatcher {
  readonly owner: string
  /** One pass: claims what is due and sends it; resolves with the number of deliveries attempted. */
  runOnce(): Promise<number>
  /** Polls every pollMs until stop(). */
  start(): void
  /** Stops polling and waits for the pass in flight. */
  stop(): Promise<void>
}

/** Delay before retry `attempt` + 1: base·2^(attempt−1), capped, ±20 % jitter. */
function backoffMs(
  attempt: number,
  o: Required<Pick<DispatcherOptions, 'baseDelayMs' | 'maxDelayMs' | 'random'>>,
) {
  const raw = Math.min(o.maxDelayMs, o.baseDelayMs * 2 ** Math.max(0, attempt - 1))
  return Math.round(raw * (0.8 + 0.4 * o.random()))
}

export function createDispatcher(ctx: ServiceContext, opts: DispatcherOptions = {}): Dispatcher {
  const o = dispatcherOptions(opts)
  const owner = opts.owner ?? `dsp_${randomBase62(12)}`
  const store = ctx.accounts.webhooks()
  let timer: NodeJS.Timeout | null = null
  let running: Promise<number> | null = null
  let stopped = false

  async function pass(): Promise<number> {
    // A node without the webhook key cannot sign: it sends e-mails only, never failing a webhook.
    const claimed = await store.claim(owner, ctx.now(), o.leaseMs, o.batch, !ctx.secrets.webhookKey)
    await Promise.all(claimed.map((d) => attempt(ctx, o, store, owner, d)))
    return claimed.length
  }

  const dispatcher: Dispatcher = {
    owner,
    runOnce() {
      running ??= pass().finally(() => {
        running = null
      })
      return running
    },
    start() {
      stopped = false
      const tick = async () => {
        try {
          // A full batch: more may be due at once.
          while (!stopped && (await dispatcher.runOnce()) >= o.batch) {}
        } catch (e) {
          ctx.log.error({ err: (e as Error).message }, 'webhook dispatch failed')
        }
        if (!stopped) {
          timer = setTimeout(tick, o.pollMs)
          timer.unref()
        }
      }
      timer = setTimeout(tick, o.pollMs)
      timer.unref()
    },
    async stop() {
      stopped = true
      if (timer) clearTimeout(timer)
      await running?.catch(() => undefined)
    },
  }
  return dispatcher
}

type Options = ReturnType<typeof dispatcherOptions>

function dispatcherOptions(opts: DispatcherOptions) {
  return {
    leaseMs: opts.leaseMs ?? 60_000,
    timeoutMs: opts.timeoutMs ?? 10_000,
    batch: opts.batch ?? 20,
    pollMs: opts.pollMs ?? 1000,
    baseDelayMs: opts.baseDelayMs ?? 10_000,
    maxDelayMs: opts.maxDelayMs ?? 3600_000,
    random: opts.random ?? Math.random,
    resolve: opts.resolve ?? systemResolve,
  }
}

type SendResult = { ok: boolean; statusCode: number | null; error: string | null }

/** One attempt: the delivery is sent, and its outcome recorded with the next attempt's time (or none). */
async function attempt(
  ctx: ServiceContext,
  o: Options,
  store: WebhookStore,
  owner: string,
  d: ClaimedDelivery,
): Promise<void> {
  const startedAt = ctx.now()
  const t0 = performance.now()
  let r: SendResult
  try {
    r = await (d.channel === 'email' ? sendEmail(ctx, d) : sendWebhook(ctx, o, d))
  } catch (e) {
    // A network failure is one of post.ts's fixed phrases (DeliveryFailed); the rest are this
    // node's own (a mailer, a secret that does not decrypt).
    r = { ok: false, statusCode: null, error: String((e as Error).message).slice(0, 300) }
  }
  const latencyMs = Math.round(performance.now() - t0)
  const now = ctx.now()
  const deadline = d.createdAt + RETRY_WINDOW_MS
  // The last retry lands on the deadline itself, so a run of failures reaches the 24 h mark.
  const nextAttemptAt = r.ok || now >= deadline ? null : Math.min(deadline, now + backoffMs(d.attempt, o))
  const res = await store.finish({
    deliveryId: d.id,
    owner,
    attempt: d.attempt,
    startedAt,
    latencyMs,
    statusCode: r.statusCode,
    error: r.error,
    ok: r.ok,
    nextAttemptAt,
    disableIfFailingSince: now - DISABLE_AFTER_MS,
    now,
  })
  if (!res.recorded)
    ctx.log.warn(
      { delivery_id: d.id, attempt: d.attempt },
      'webhook delivery lease lost; outcome not recorded',
    )
  if (res.disabled)
    ctx.log.warn(
      { subscription_id: d.subscriptionId, account_id: d.accountId },
      'webhook subscription disabled',
    )
}

/** An event e-mailed to the account's address (none: nothing to send, and nothing failed). */
async function sendEmail(ctx: ServiceContext, d: ClaimedDelivery): Promise<SendResult> {
  if (!d.email) return { ok: true, statusCode: null, error: 'no e-mail address' }
  await ctx.mailer.send(
    eventEmail(d, d.email, {
      publicUrl: ctx.config.publicUrl,
      topUpUrl: ctx.config.topUpUrl ?? `${ctx.config.publicUrl}${getBillingDocs.path}`,
    }),
  )
  return { ok: true, statusCode: null, error: null }
}

/** A signed JSON POST to the subscription's URL, to the addresses its check allowed (target.ts). */
async function sendWebhook(ctx: ServiceContext, o: Options, d: ClaimedDelivery): Promise<SendResult> {
  if (!d.url || !d.secretEnc || !d.subscriptionId)
    return { ok: false, statusCode: null, error: 'subscription gone' }
  const key = ctx.secrets.webhookKey
  if (!key) return { ok: false, statusCode: null, error: 'ERM3_WEBHOOK_KEY is not set on this node' }
  const secret = decryptSecret(key, d.subscriptionId, d.secretEnc)
  const body = eventBody(d)
  const t = Math.floor(ctx.now() / 1000)
  const headers = {
    'content-type': 'application/json',
    'user-agent': 'erm3-webhooks/1',
    'x-erm3-event': d.event,
    'x-erm3-delivery': d.id,
    'x-erm3-signature': signatureHeader(secret, t, body),
  }
  const status = await postWebhook(d.url, headers, body, {
    policy: { allowLoopback: ctx.config.webhookAllowLoopback },
    resolve: o.resolve,
    timeoutMs: o.timeoutMs,
  })
  const ok = status >= 200 && status < 300
  return { ok, statusCode: status, error: ok ? null : `HTTP ${status}` }
}

/**
 * `model.updated`: the served build's data_as_of is recorded once in the database; the first node
 * to serve a new one (across every node, by the table's key) enqueues the event.
 */
export async function announceServedModel(ctx: ServiceContext): Promise<boolean> {
  const live = ctx.models.peek('live')
  if (!live) return false
  return ctx.accounts.webhooks().recordModelBuild(live.dataAsOf, live.manifest.model_version, ctx.now())
}
