/**
 * The wire form of outbox events: the JSON body of a webhook delivery and the e-mail of an alert.
 * The outbox stores amounts in micro-dollars and times in epoch ms; the wire has USD and ISO times.
 */
import { microsToUsd } from '../../contract/pricing.ts'
import type { MailMessage } from '../../platform/mail.ts'
import type { Delivery } from '../../store/accounts/webhooks-types.ts'

const iso = (ms: number) => new Date(ms).toISOString()

/** `*_micros` → `*_usd`, `*_at` (epoch ms) → ISO 8601; everything else as stored. */
function renderData(data: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {}
  for (const [k, v] of Object.entries(data)) {
    if (k.endsWith('_micros') && typeof v === 'number') out[`${k.slice(0, -7)}_usd`] = microsToUsd(v)
    else if (k.endsWith('_at') && typeof v === 'number') out[k] = iso(v)
    else out[k] = v
  }
  return out
}

/** The delivery body: the same bytes on every attempt of a delivery (and of its re-deliveries). */
export function eventBody(d: Pick<Delivery, 'eventId' | 'event' | 'eventAt' | 'accountId' | 'data'>): string {
  return JSON.stringify({
    id: d.eventId,
    type: d.event,
    created_at: iso(d.eventAt),
    account_id: d.accountId,
    data: renderData(d.data),
  })
}

/** The e-mail of an e-mail channel delivery. */
export function eventEmail(
  d: Delivery,
  to: string,
  links: { publicUrl: string; topUpUrl: string },
): MailMessage {
  const data = renderData(d.data)
  if (d.event === 'balance.low')
    return {
      to,
      subject: `erm3: your balance is below ${data.threshold_usd} USD`,
      text:
        `Your erm3 balance is ${data.balance_usd} USD, below your alert threshold of ${data.threshold_usd} USD.\n\n` +
        `Top up: ${links.topUpUrl}\n` +
        `This alert fires once; the next top-up re-arms it. Change the threshold with POST ${links.publicUrl}/account/balance-alert.\n`,
    }
  if (d.event === 'webhook.disabled')
    return {
      to,
      subject: 'erm3: a webhook subscription was disabled',
      text:
        `Deliveries to ${String(data.url)} failed for 24 hours, so the subscription ${String(data.subscription_id)} ` +
        `was disabled (${String(data.reason)}).\n\n` +
        `See its delivery log at ${links.publicUrl}/account/webhooks/${String(data.subscription_id)}/deliveries ` +
        `and re-enable it with POST ${links.publicUrl}/account/webhooks/${String(data.subscription_id)} {"enabled": true}.\n`,
    }
  return { to, subject: `erm3: ${d.event}`, text: `${eventBody(d)}\n` }
}
