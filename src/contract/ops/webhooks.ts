import { type TSchema, Type } from 'typebox'
import { defineOperation } from '../operation.ts'
import { IsoDateTime, Nullable } from '../schemas.ts'
import { WEBHOOK_EVENT_NAMES } from '../webhook-events.ts'

/**
 * Webhook subscriptions, their delivery log, and the balance alert of the signed-in account
 * (docs/decisions/webhooks.md). Session-authenticated account administration: no
 * price, so no MCP tool.
 */

const eventName = Type.Union([
  Type.Literal('batch.completed'),
  Type.Literal('balance.low'),
  Type.Literal('balance.topped_up'),
  Type.Literal('key.created'),
  Type.Literal('key.revoked'),
  Type.Literal('model.updated'),
])
const subscriptionId = Type.String({
  pattern: '^[A-Za-z0-9_]{1,64}$',
  description: 'Subscription id (whs_…)',
})
const idParams = Type.Object({ id: subscriptionId }, { additionalProperties: false })
const webhookUrl = Type.String({
  maxLength: 2000,
  description:
    'https URL of a public host (loopback, and http to it, only where the operator allows it for development)',
})
const eventList = Type.Array(eventName, {
  minItems: 1,
  maxItems: WEBHOOK_EVENT_NAMES.length,
  uniqueItems: true,
})

const subscriptionProps = {
  id: Type.String(),
  url: Type.String(),
  events: Type.Array(Type.String()),
  enabled: Type.Boolean(),
  disabled_reason: Nullable(
    Type.String({ description: 'Why it was disabled (24 h of failures, or by the account)' }),
  ),
  failing_since: Nullable(IsoDateTime),
  created_at: IsoDateTime,
  updated_at: IsoDateTime,
}

const webhookSubscriptionSchema = Type.Object(subscriptionProps, { $id: 'WebhookSubscription' })
const webhookSubscriptionWithSecret = Type.Object(
  {
    ...subscriptionProps,
    secret: Type.String({
      description:
        'Signing secret (whsec_…): shown once, stored only encrypted. Verify X-Erm3-Signature with it.',
    }),
  },
  { $id: 'WebhookSubscriptionWithSecret' },
)

const deliverySchema = Type.Object(
  {
    id: Type.String({ description: 'X-Erm3-Delivery: the same on every attempt of this delivery' }),
    event_id: Type.String(),
    event: Type.String(),
    status: Type.Union([Type.Literal('pending'), Type.Literal('delivered'), Type.Literal('failed')]),
    attempts: Type.Integer(),
    next_attempt_at: Nullable(IsoDateTime),
    response_code: Nullable(Type.Integer()),
    error: Nullable(Type.String()),
    latency_ms: Nullable(Type.Integer()),
    created_at: IsoDateTime,
    delivered_at: Nullable(IsoDateTime),
    redelivery_of: Nullable(Type.String()),
    log: Type.Array(
      Type.Object({
        attempt: Type.Integer(),
        at: IsoDateTime,
        ok: Type.Boolean(),
        response_code: Nullable(Type.Integer()),
        error: Nullable(Type.String()),
        latency_ms: Type.Integer(),
      }),
    ),
  },
  { $id: 'WebhookDelivery' },
)

const SESSION_ERRORS = [400, 401, 404, 429, 503]

const listWebhooks = defineOperation({
  id: 'listWebhooks',
  method: 'GET',
  path: '/account/webhooks',
  summary: "The signed-in account's webhook subscriptions",
  tags: ['webhooks'],
  auth: 'session',
  status: 200,
  response: Type.Object(
    { subscriptions: Type.Array(webhookSubscriptionSchema) },
    { $id: 'WebhookSubscriptionList' },
  ),
  errors: [401, 429],
})

const createWebhook = defineOperation({
  id: 'createWebhook',
  method: 'POST',
  path: '/account/webhooks',
  summary: 'Subscribe a URL to events; the signing secret is returned once',
  tags: ['webhooks'],
  auth: 'session',
  body: Type.Object({ url: webhookUrl, events: eventList }, { additionalProperties: false }),
  status: 201,
  response: webhookSubscriptionWithSecret,
  errors: [400, 401, 409, 415, 429, 503],
})

const getWebhook = defineOperation({
  id: 'getWebhook',
  method: 'GET',
  path: '/account/webhooks/:id',
  summary: 'One webhook subscription (never its secret)',
  tags: ['webhooks'],
  auth: 'session',
  params: idParams,
  status: 200,
  response: webhookSubscriptionSchema,
  errors: [400, 401, 404, 429],
})

const updateWebhook = defineOperation({
  id: 'updateWebhook',
  method: 'POST',
  path: '/account/webhooks/:id',
  summary: 'Change the URL or events of a subscription, or enable / disable it',
  description: 'Enabling a subscription disabled after 24 h of failures clears its failure run.',
  tags: ['webhooks'],
  auth: 'session',
  params: idParams,
  body: Type.Object(
    {
      url: Type.Optional(webhookUrl),
      events: Type.Optional(eventList),
      enabled: Type.Optional(Type.Boolean()),
    },
    { additionalProperties: false, minProperties: 1 },
  ),
  status: 200,
  response: webhookSubscriptionSchema,
  errors: [400, 401, 404, 415, 429],
})

const deleteWebhook = defineOperation({
  id: 'deleteWebhook',
  method: 'DELETE',
  path: '/account/webhooks/:id',
  summary: 'Delete a subscription and its delivery log',
  tags: ['webhooks'],
  auth: 'session',
  params: idParams,
  status: 200,
  response: Type.Object({ id: Type.String(), deleted: Type.Literal(true) }, { $id: 'WebhookDeleted' }),
  errors: [400, 401, 404, 429],
})

const rotateWebhookSecret = defineOperation({
  id: 'rotateWebhookSecret',
  method: 'POST',
  path: '/account/webhooks/:id/rotate-secret',
  summary: 'Replace the signing secret (the new one is returned once; the old one stops at once)',
  tags: ['webhooks'],
  auth: 'session',
  params: idParams,
  status: 200,
  response: webhookSubscriptionWithSecret,
  errors: SESSION_ERRORS,
})

const testWebhook = defineOperation({
  id: 'testWebhook',
  method: 'POST',
  path: '/account/webhooks/:id/test',
  summary: 'Queue a signed `webhook.test` event to the subscription; follow it in the delivery log',
  tags: ['webhooks'],
  auth: 'session',
  params: idParams,
  status: 202,
  response: deliverySchema,
  errors: [...SESSION_ERRORS, 409],
})

const listWebhookDeliveries = defineOperation({
  id: 'listWebhookDeliveries',
  method: 'GET',
  path: '/account/webhooks/:id/deliveries',
  summary:
    'Delivery log of a subscription, newest first: attempts, status, response code, latency, next attempt',
  tags: ['webhooks'],
  auth: 'session',
  params: idParams,
  querystring: Type.Object(
    { limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 200, default: 50 })) },
    { additionalProperties: false },
  ),
  status: 200,
  response: Type.Object(
    { subscription_id: Type.String(), deliveries: Type.Array(deliverySchema) },
    { $id: 'WebhookDeliveryList' },
  ),
  errors: [400, 401, 404, 429],
})

const redeliverWebhook = defineOperation({
  id: 'redeliverWebhook',
  method: 'POST',
  path: '/account/webhooks/:id/deliveries/:delivery_id/redeliver',
  summary: 'Send a delivered or failed event again (a new delivery id, the same event id and body)',
  tags: ['webhooks'],
  auth: 'session',
  params: Type.Object(
    { id: subscriptionId, delivery_id: Type.String({ pattern: '^[A-Za-z0-9_]{1,64}$' }) },
    { additionalProperties: false },
  ),
  status: 202,
  response: deliverySchema,
  errors: [...SESSION_ERRORS, 409],
})

const balanceAlertSchema = Type.Object(
  {
    threshold_usd: Type.Number({
      description: 'balance.low fires when a debit takes the balance below this',
    }),
    armed: Type.Boolean({ description: 'False after the alert fired, until the next top-up' }),
  },
  { $id: 'BalanceAlert' },
)

const getBalanceAlert = defineOperation({
  id: 'getBalanceAlert',
  method: 'GET',
  path: '/account/balance-alert',
  summary: 'The low-balance alert threshold (default 1.00 USD) and whether it is armed',
  tags: ['webhooks'],
  auth: 'session',
  status: 200,
  response: balanceAlertSchema,
  errors: [401, 429],
})

const setBalanceAlert = defineOperation({
  id: 'setBalanceAlert',
  method: 'POST',
  path: '/account/balance-alert',
  summary: 'Set the low-balance alert threshold (re-arms the alert)',
  tags: ['webhooks'],
  auth: 'session',
  body: Type.Object(
    { threshold_usd: Type.Number({ minimum: 0, maximum: 1_000_000 }) },
    { additionalProperties: false },
  ),
  status: 200,
  response: balanceAlertSchema,
  errors: [400, 401, 415, 429],
})

const getWebhookDocs = defineOperation({
  id: 'getWebhookDocs',
  method: 'GET',
  path: '/docs/webhooks',
  summary: 'Webhooks: events, delivery and retries, and how to verify X-Erm3-Signature (Node and Python)',
  tags: ['docs'],
  auth: 'none',
  status: 200,
  response: Type.String(),
  contentType: 'text/markdown; charset=utf-8',
  errors: [],
})

export const WEBHOOK_OPS = {
  getWebhookDocs,
  listWebhooks,
  createWebhook,
  getWebhook,
  updateWebhook,
  deleteWebhook,
  rotateWebhookSecret,
  testWebhook,
  listWebhookDeliveries,
  redeliverWebhook,
  getBalanceAlert,
  setBalanceAlert,
} as const

// ---- event payloads (OpenAPI components and the top-level `webhooks` map) ----

function envelope(type: string, data: TSchema, id: string, description: string) {
  return Type.Object(
    {
      id: Type.String({ description: 'Event id (evt_…): the same in a re-delivery' }),
      type: Type.Literal(type),
      created_at: IsoDateTime,
      account_id: Type.String(),
      data,
    },
    { $id: id, description },
  )
}

const keyData = {
  key_id: Type.String(),
  name: Nullable(Type.String()),
  prefix: Type.String(),
  environment: Type.Union([Type.Literal('live'), Type.Literal('test')]),
}

/** The JSON body of each event (X-Erm3-Event names the type). */
export const WEBHOOK_PAYLOADS: Record<string, TSchema> = {
  'key.created': envelope(
    'key.created',
    Type.Object({
      ...keyData,
      kind: Type.String(),
      created_at: IsoDateTime,
      expires_at: Nullable(IsoDateTime),
    }),
    'WebhookKeyCreated',
    'An API key was created on the account (OAuth access tokens are not announced).',
  ),
  'key.revoked': envelope(
    'key.revoked',
    Type.Object({ ...keyData, revoked_at: IsoDateTime }),
    'WebhookKeyRevoked',
    'An API key was revoked.',
  ),
  'balance.topped_up': envelope(
    'balance.topped_up',
    Type.Object({
      ledger_id: Type.String(),
      amount_usd: Type.Number(),
      balance_usd: Type.Number({ description: 'Balance after the top-up' }),
      reference: Nullable(Type.String()),
    }),
    'WebhookBalanceToppedUp',
    'Money was added by a top-up.',
  ),
  'balance.low': envelope(
    'balance.low',
    Type.Object({ balance_usd: Type.Number(), threshold_usd: Type.Number() }),
    'WebhookBalanceLow',
    'A debit took the balance below the alert threshold (once per crossing; re-armed by the next top-up). Also e-mailed.',
  ),
  'model.updated': envelope(
    'model.updated',
    Type.Object({ data_as_of: Type.String({ format: 'date' }), model_version: Type.String() }),
    'WebhookModelUpdated',
    'A build with a new data_as_of started being served (once per data_as_of).',
  ),
  'batch.completed': envelope(
    'batch.completed',
    Type.Object({
      operation: Type.Union([Type.Literal('batchLstar'), Type.Literal('batchAnalyze')], {
        description: 'The batch operation (POST /batch/lstar or POST /batch/analyze)',
      }),
      request_id: Type.String({
        description: 'The batch call’s request id (`_agent.request_id`, X-Request-Id): the batch’s id',
      }),
      data_as_of: Type.String({ format: 'date' }),
      cache_status: Type.Union([Type.Literal('HIT'), Type.Literal('MISS'), Type.Literal('BYPASS')]),
      positions: Type.Integer({ description: 'Distinct tickers asked (alias spellings count once)' }),
      positions_ok: Type.Integer({ description: 'Tickers answered (the charged positions)' }),
      positions_failed: Type.Integer(),
      cost_usd: Type.Number({ description: 'What the call was charged (0 for a cached answer)' }),
      failures: Type.Array(
        Type.Object({
          ticker: Type.String({ description: 'As asked (trimmed, upper-cased)' }),
          code: Type.Union([Type.Literal('INVALID_TICKER'), Type.Literal('TICKER_NOT_FOUND')]),
        }),
        { description: 'The tickers that failed, in the order asked' },
      ),
    }),
    'WebhookBatchCompleted',
    'A batch call (POST /batch/lstar, POST /batch/analyze, or their MCP tools) was answered: once per answered call (200), cached answers included; a call that failed as a whole (4xx) or a 304 sends none.',
  ),
  'webhook.test': envelope(
    'webhook.test',
    Type.Object({ subscription_id: Type.String() }),
    'WebhookTest',
    'Sent by POST /account/webhooks/{id}/test.',
  ),
}
