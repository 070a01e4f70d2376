/**
 * The webhook event names, with no dependencies: the contract's schemas and the dashboard (which
 * bundles only what it imports) read this one list. Each event's payload schema is in
 * ops/webhooks.ts (`WEBHOOK_PAYLOADS`, the OpenAPI `webhooks` map); docs/webhooks.md describes
 * them, `batch.completed` (sent after every answered batch call) field by field.
 */
export const WEBHOOK_EVENT_NAMES = [
  'batch.completed',
  'balance.low',
  'balance.topped_up',
  'key.created',
  'key.revoked',
  'model.updated',
] as const
