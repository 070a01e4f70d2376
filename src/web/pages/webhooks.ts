import type { ResponseOf } from '../../contract/client.ts'
import { WEBHOOK_EVENT_NAMES } from '../../contract/webhook-events.ts'
import { call } from '../api.ts'
import { el, errorMessage, message, rowAction, table } from '../dom.ts'

/** Webhook subscriptions: create (secret shown once), test event, delivery log with re-deliver, delete. */

const EVENTS: readonly string[] = WEBHOOK_EVENT_NAMES

type Subscription = ResponseOf<'listWebhooks'>['subscriptions'][number]
type Delivery = ResponseOf<'listWebhookDeliveries'>['deliveries'][number]

export async function webhooksPage(root: HTMLElement): Promise<void> {
  const out = el('div', { 'aria-live': 'polite' })
  const fail = (e: unknown) => out.replaceChildren(errorMessage(e))
  const list = el('div', { id: 'hook-list' })
  const log = el('div', { id: 'hook-log' })
  const ui: WebhooksUi = { out, fail, list, log }
  root.append(subscriptionForm(ui), out, list, log)
  await renderSubscriptions(ui)
}

/** The page's status line, subscription list and delivery log, which every part below updates. */
interface WebhooksUi {
  out: HTMLElement
  fail: (e: unknown) => void
  list: HTMLElement
  log: HTMLElement
}

/** The form adding a subscription: its URL and events; the signing secret is shown once. */
function subscriptionForm(ui: WebhooksUi): HTMLFormElement {
  const { out, fail } = ui
  const url = el('input', {
    id: 'hook-url',
    type: 'url',
    required: true,
    placeholder: 'https://example.com/erm3',
  })
  const boxes = EVENTS.map((e) => {
    const id = `ev-${e.replace('.', '-')}`
    const box = el('input', { type: 'checkbox', id, value: e, checked: e !== 'batch.completed' })
    return { box, label: el('label', { for: id, class: 'inline' }, box, ` ${e}`) }
  })
  const form = el(
    'form',
    { id: 'create-hook' },
    el('label', { for: 'hook-url', text: 'Endpoint URL' }),
    url,
    el('fieldset', {}, el('legend', { text: 'Events' }), ...boxes.map((b) => b.label)),
    el('button', { type: 'submit', text: 'Add subscription' }),
  )
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault()
    try {
      const events = boxes.filter((b) => b.box.checked).map((b) => b.box.value)
      const c = await call<ResponseOf<'createWebhook'>>('/account/webhooks', {
        body: { url: url.value, events },
      })
      out.replaceChildren(
        el(
          'section',
          { class: 'card', role: 'status', id: 'hook-secret' },
          el('h2', { text: 'Signing secret' }),
          el('p', { text: 'Shown once: verify X-Erm3-Signature with it (see the API reference, Webhooks).' }),
          el('code', { class: 'key', text: c.data.secret }),
        ),
      )
      await renderSubscriptions(ui)
    } catch (e) {
      fail(e)
    }
  })
  return form
}

/** The subscriptions, each with its actions: send a test event, show its log, delete it. */
async function renderSubscriptions(ui: WebhooksUi): Promise<void> {
  const { out, fail, list, log } = ui
  const r = await call<ResponseOf<'listWebhooks'>>('/account/webhooks')
  const t = table(
    ['URL', 'Events', 'State', 'Actions'],
    r.data.subscriptions.map((s) => [
      s.url,
      s.events.join(', '),
      s.enabled ? 'enabled' : `disabled: ${s.disabled_reason ?? ''}`,
      '',
    ]),
    'Subscriptions',
  )
  t.querySelectorAll('tbody tr').forEach((tr, i) => {
    const s = r.data.subscriptions[i] as Subscription
    const cell = tr.lastElementChild as HTMLElement
    const act = (label: string, fn: () => Promise<void>) =>
      rowAction(cell, label, `${label}: ${s.url}`, fn, fail)
    act('Send test', async () => {
      await call(`/account/webhooks/${s.id}/test`, { body: {} })
      out.replaceChildren(message('A test event is queued; its delivery shows in the log.'))
      await showLog(ui, s)
    })
    act('Log', () => showLog(ui, s))
    act('Delete', async () => {
      if (!confirm(`Delete the subscription to ${s.url}?`)) return
      await call(`/account/webhooks/${s.id}`, { method: 'DELETE' })
      log.replaceChildren()
      await renderSubscriptions(ui)
    })
  })
  list.replaceChildren(t)
}

/** A subscription's last 50 deliveries, each of which can be delivered again. */
async function showLog(ui: WebhooksUi, s: Subscription): Promise<void> {
  const { fail, log } = ui
  const r = await call<ResponseOf<'listWebhookDeliveries'>>(`/account/webhooks/${s.id}/deliveries?limit=50`)
  const t = table(
    ['Delivery', 'Event', 'Status', 'Attempts', 'HTTP', 'Latency ms', 'Created', 'Action'],
    r.data.deliveries.map((d) => [
      d.id,
      d.event,
      d.status,
      d.attempts,
      d.response_code,
      d.latency_ms,
      d.created_at.slice(0, 19),
      '',
    ]),
    `Deliveries to ${s.url}`,
  )
  t.querySelectorAll('tbody tr').forEach((tr, i) => {
    const d = r.data.deliveries[i] as Delivery
    const b = el('button', {
      type: 'button',
      class: 'secondary',
      text: 'Re-deliver',
      'aria-label': `Re-deliver ${d.id}`,
    })
    b.addEventListener('click', async () => {
      try {
        await call(`/account/webhooks/${s.id}/deliveries/${d.id}/redeliver`, { body: {} })
        await showLog(ui, s)
      } catch (e) {
        fail(e)
      }
    })
    tr.lastElementChild?.append(b)
  })
  log.replaceChildren(t)
}
