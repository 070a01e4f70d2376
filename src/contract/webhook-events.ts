/**
 * The webhook event names, with no dependencies: the contract's schemas and the dashboard (which
 * bundles only what it imports) read this one list.
 */
export const WEBHOOK_EVENT_NAMES = [
  'batch.completed',
  'balance.low',
  'balance.topped_up',
  'key.created',
  'key.revoked',
  'model.updated',
] as const
