/**
 * Schema of webhooks and balance alerts, migration 5 of the account store.
 *
 * - `webhook_subscriptions`: per account; `events` is a comma-separated list; the signing secret is
 *   stored only encrypted (AES-256-GCM, `secret_enc`); `failing_since` is the first failure of the
 *   current run of failures (cleared by a success); a run of 24 h disables the subscription.
 * - `webhook_deliveries`: the durable outbox. One row per (event, recipient): a subscription
 *   (`channel = 'webhook'`) or the account's e-mail address (`channel = 'email'`). Rows are written
 *   in the same transaction as the change that caused the event. A dispatcher claims due rows with
 *   a lease (`lease_owner`, `lease_until`); `attempts` counts claims, so a completion carries the
 *   attempt it belongs to and a late one (lease lost) changes nothing.
 * - `webhook_attempts`: the delivery log (one row per attempt made).
 * - `model_builds`: one row per `data_as_of` ever served: its primary key makes `model.updated`
 *   fire once per build across every node.
 * - `accounts.low_balance_micros` / `low_balance_armed`: the balance alert threshold and whether
 *   the next crossing debit fires it (a crossing disarms, a credit re-arms).
 */
export function webhookTables(dialect: 'sqlite' | 'postgres'): string[] {
  const time = dialect === 'sqlite' ? 'INTEGER' : 'BIGINT'
  return [
    `ALTER TABLE accounts ADD COLUMN low_balance_micros ${time} NOT NULL DEFAULT 1000000`,
    'ALTER TABLE accounts ADD COLUMN low_balance_armed INTEGER NOT NULL DEFAULT 1',
    `CREATE TABLE webhook_subscriptions (
      id TEXT PRIMARY KEY,
      account_id TEXT NOT NULL REFERENCES accounts (id),
      url TEXT NOT NULL,
      events TEXT NOT NULL,
      secret_enc TEXT NOT NULL,
      enabled INTEGER NOT NULL DEFAULT 1,
      disabled_reason TEXT,
      failing_since ${time},
      created_at ${time} NOT NULL,
      updated_at ${time} NOT NULL
    )`,
    'CREATE INDEX webhook_subscriptions_account ON webhook_subscriptions (account_id, created_at)',
    `CREATE TABLE webhook_deliveries (
      id TEXT PRIMARY KEY,
      account_id TEXT NOT NULL REFERENCES accounts (id),
      subscription_id TEXT REFERENCES webhook_subscriptions (id) ON DELETE CASCADE,
      channel TEXT NOT NULL CHECK (channel IN ('webhook', 'email')),
      event_id TEXT NOT NULL,
      event TEXT NOT NULL,
      data TEXT NOT NULL,
      status TEXT NOT NULL CHECK (status IN ('pending', 'delivered', 'failed')),
      attempts INTEGER NOT NULL DEFAULT 0,
      next_attempt_at ${time},
      lease_owner TEXT,
      lease_until ${time},
      last_status_code INTEGER,
      last_error TEXT,
      last_latency_ms INTEGER,
      created_at ${time} NOT NULL,
      event_at ${time} NOT NULL,
      delivered_at ${time},
      redelivery_of TEXT
    )`,
    // The dispatcher's scan: only pending rows are indexed.
    `CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE status = 'pending'`,
    'CREATE INDEX webhook_deliveries_subscription ON webhook_deliveries (subscription_id, created_at)',
    `CREATE TABLE webhook_attempts (
      delivery_id TEXT NOT NULL REFERENCES webhook_deliveries (id) ON DELETE CASCADE,
      attempt INTEGER NOT NULL,
      started_at ${time} NOT NULL,
      latency_ms INTEGER NOT NULL,
      status_code INTEGER,
      error TEXT,
      ok INTEGER NOT NULL,
      PRIMARY KEY (delivery_id, attempt)
    )`,
    `CREATE TABLE model_builds (
      data_as_of TEXT PRIMARY KEY,
      model_version TEXT NOT NULL,
      first_served_at ${time} NOT NULL
    )`,
  ]
}
