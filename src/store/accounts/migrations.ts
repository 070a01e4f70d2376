/**
 * Versioned schema of the account store, one list for both dialects. A migration is applied once,
 * inside one transaction together with its `schema_migrations` row, so a crash mid-migration
 * leaves the previous version intact. Never edit a released migration: append a new version.
 *
 * Units: money columns are integer micro-dollars, time columns epoch milliseconds (BIGINT in
 * PostgreSQL; SQLite integers are 64-bit already).
 */

import { oauthGrantTables } from '../oauth/schema.ts'
import { paymentTables } from './payments-schema.ts'
import { plaidTables } from './plaid-schema.ts'
import { sessionTables } from './sessions-schema.ts'
import { webhookTables } from './webhooks-schema.ts'

export interface Migration {
  version: number
  name: string
  sqlite: readonly string[]
  postgres: readonly string[]
}

export const SCHEMA_MIGRATIONS_SQLITE =
  'CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)'
export const SCHEMA_MIGRATIONS_POSTGRES =
  'CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)'

const KINDS = `CHECK (kind IN ('topup', 'credit', 'refund', 'debit'))`
// A debit is the only negative entry; a zero entry carries no information (zero charges write no row).
const SIGN = `CHECK ((kind = 'debit' AND amount_micros < 0) OR (kind <> 'debit' AND amount_micros > 0))`

export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'accounts, keys, ledger, login tokens',
    sqlite: [
      `CREATE TABLE accounts (
        id TEXT PRIMARY KEY,
        email TEXT,
        kind TEXT NOT NULL CHECK (kind IN ('user', 'anonymous')),
        created_at INTEGER NOT NULL,
        balance_micros INTEGER NOT NULL DEFAULT 0
      )`,
      // lower() makes the address unique case-insensitively; NULLs (anonymous accounts) never collide.
      'CREATE UNIQUE INDEX accounts_email_lower ON accounts (lower(email))',
      `CREATE TABLE api_keys (
        id TEXT PRIMARY KEY,
        account_id TEXT NOT NULL REFERENCES accounts (id),
        kind TEXT NOT NULL CHECK (kind IN ('agent', 'user')),
        environment TEXT NOT NULL CHECK (environment IN ('live', 'test')),
        prefix TEXT NOT NULL,
        name TEXT,
        tier TEXT NOT NULL,
        hash TEXT NOT NULL UNIQUE,
        created_at INTEGER NOT NULL,
        last_used_at INTEGER,
        revoked_at INTEGER,
        expires_at INTEGER,
        client_id TEXT
      )`,
      'CREATE INDEX api_keys_account ON api_keys (account_id, created_at)',
      `CREATE TABLE ledger (
        id TEXT PRIMARY KEY,
        account_id TEXT NOT NULL REFERENCES accounts (id),
        kind TEXT NOT NULL ${KINDS},
        amount_micros INTEGER NOT NULL ${SIGN},
        request_id TEXT,
        capability TEXT,
        reference TEXT,
        key_id TEXT,
        note TEXT,
        created_at INTEGER NOT NULL
      )`,
      'CREATE UNIQUE INDEX ledger_reference ON ledger (account_id, reference) WHERE reference IS NOT NULL',
      'CREATE INDEX ledger_account_time ON ledger (account_id, created_at)',
      // Append-only is enforced by the database, not by convention.
      `CREATE TRIGGER ledger_no_update BEFORE UPDATE ON ledger
        BEGIN SELECT RAISE(ABORT, 'ledger is append-only'); END`,
      `CREATE TRIGGER ledger_no_delete BEFORE DELETE ON ledger
        BEGIN SELECT RAISE(ABORT, 'ledger is append-only'); END`,
      `CREATE TABLE login_tokens (
        hash TEXT PRIMARY KEY,
        email TEXT NOT NULL,
        expires_at INTEGER NOT NULL,
        used_at INTEGER,
        created_at INTEGER NOT NULL
      )`,
    ],
    postgres: [
      `CREATE TABLE accounts (
        id TEXT PRIMARY KEY,
        email TEXT,
        kind TEXT NOT NULL CHECK (kind IN ('user', 'anonymous')),
        created_at BIGINT NOT NULL,
        balance_micros BIGINT NOT NULL DEFAULT 0,
        -- Sum of open reservations, kept beside the balance so reserve is one conditional UPDATE.
        reserved_micros BIGINT NOT NULL DEFAULT 0 CHECK (reserved_micros >= 0)
      )`,
      'CREATE UNIQUE INDEX accounts_email_lower ON accounts (lower(email))',
      `CREATE TABLE api_keys (
        id TEXT PRIMARY KEY,
        account_id TEXT NOT NULL REFERENCES accounts (id),
        kind TEXT NOT NULL CHECK (kind IN ('agent', 'user')),
        environment TEXT NOT NULL CHECK (environment IN ('live', 'test')),
        prefix TEXT NOT NULL,
        name TEXT,
        tier TEXT NOT NULL,
        hash TEXT NOT NULL UNIQUE,
        created_at BIGINT NOT NULL,
        last_used_at BIGINT,
        revoked_at BIGINT,
        expires_at BIGINT,
        client_id TEXT
      )`,
      'CREATE INDEX api_keys_account ON api_keys (account_id, created_at)',
      `CREATE TABLE ledger (
        id TEXT PRIMARY KEY,
        account_id TEXT NOT NULL REFERENCES accounts (id),
        kind TEXT NOT NULL ${KINDS},
        amount_micros BIGINT NOT NULL ${SIGN},
        request_id TEXT,
        capability TEXT,
        reference TEXT,
        key_id TEXT,
        note TEXT,
        created_at BIGINT NOT NULL
      )`,
      'CREATE UNIQUE INDEX ledger_reference ON ledger (account_id, reference) WHERE reference IS NOT NULL',
      'CREATE INDEX ledger_account_time ON ledger (account_id, created_at)',
      `CREATE FUNCTION ledger_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN RAISE EXCEPTION 'ledger is append-only'; END $$`,
      `CREATE TRIGGER ledger_append_only BEFORE UPDATE OR DELETE ON ledger
        FOR EACH ROW EXECUTE FUNCTION ledger_append_only()`,
      // Reservations live in the database so every API node sees them and reconcile can release
      // the ones a crashed node left behind.
      `CREATE TABLE reservations (
        id TEXT PRIMARY KEY,
        account_id TEXT NOT NULL REFERENCES accounts (id),
        amount_micros BIGINT NOT NULL CHECK (amount_micros >= 0),
        created_at BIGINT NOT NULL
      )`,
      'CREATE INDEX reservations_created ON reservations (created_at)',
      `CREATE TABLE login_tokens (
        hash TEXT PRIMARY KEY,
        email TEXT NOT NULL,
        expires_at BIGINT NOT NULL,
        used_at BIGINT,
        created_at BIGINT NOT NULL
      )`,
    ],
  },
  {
    version: 2,
    name: 'oauth clients, codes, refresh tokens',
    sqlite: oauthTables('INTEGER'),
    postgres: oauthTables('BIGINT'),
  },
  {
    version: 3,
    name: 'self-service: spend cap, month spend, usage counters, audit log',
    sqlite: selfServiceTables('INTEGER'),
    postgres: selfServiceTables('BIGINT'),
  },
  {
    version: 4,
    name: 'stripe top-ups: refund and chargeback ledger kinds, processed events, payments',
    sqlite: paymentTables('sqlite'),
    postgres: paymentTables('postgres'),
  },
  {
    version: 5,
    name: 'webhooks: subscriptions, delivery outbox and log, model builds, balance alerts',
    sqlite: webhookTables('sqlite'),
    postgres: webhookTables('postgres'),
  },
  {
    version: 6,
    name: 'plaid items: linked brokerage connections, access tokens encrypted',
    sqlite: plaidTables('INTEGER'),
    postgres: plaidTables('BIGINT'),
  },
  {
    version: 7,
    name: 'sessions: server-side sign-in sessions; sign-in links bound to the asking browser',
    sqlite: sessionTables('INTEGER'),
    postgres: sessionTables('BIGINT'),
  },
  {
    version: 8,
    name: 'oauth grants: first approval, approved redirect URI, revocation',
    sqlite: oauthGrantTables('INTEGER'),
    postgres: oauthGrantTables('BIGINT'),
  },
  {
    version: 9,
    name: 'paid requests: an account pays once for a request on a given data_as_of',
    sqlite: paidRequestTables('INTEGER'),
    postgres: paidRequestTables('BIGINT'),
  },
]

/**
 * The requests each account has paid for (docs/decisions/money.md, "pay once"): the canonical
 * request key (a SHA-256 of the request's meaning and data_as_of), written by the settle that
 * charged it. Rows of older data are pruned (by data_as_of) when newer data is served.
 */
function paidRequestTables(time: 'INTEGER' | 'BIGINT'): string[] {
  return [
    `CREATE TABLE paid_requests (
      account_id TEXT NOT NULL REFERENCES accounts (id),
      request_key TEXT NOT NULL,
      data_as_of TEXT NOT NULL,
      created_at ${time} NOT NULL,
      PRIMARY KEY (account_id, request_key)
    )`,
    'CREATE INDEX paid_requests_as_of ON paid_requests (data_as_of)',
  ]
}

/**
 * The OAuth tables (src/store/oauth) are identical in both dialects but for the time type. Codes
 * and refresh tokens are keyed by the SHA-256 of the secret: the secret itself is never stored.
 * Access tokens need no table: they are api_keys rows with client_id set.
 */
function oauthTables(time: 'INTEGER' | 'BIGINT'): string[] {
  return [
    `CREATE TABLE oauth_clients (
      client_id TEXT PRIMARY KEY,
      client_name TEXT NOT NULL,
      redirect_uris TEXT NOT NULL,
      created_at ${time} NOT NULL
    )`,
    `CREATE TABLE oauth_codes (
      hash TEXT PRIMARY KEY,
      client_id TEXT NOT NULL REFERENCES oauth_clients (client_id),
      account_id TEXT NOT NULL REFERENCES accounts (id),
      redirect_uri TEXT NOT NULL,
      code_challenge TEXT NOT NULL,
      scope TEXT NOT NULL,
      created_at ${time} NOT NULL,
      expires_at ${time} NOT NULL,
      used_at ${time}
    )`,
    `CREATE TABLE oauth_refresh_tokens (
      hash TEXT PRIMARY KEY,
      family_id TEXT NOT NULL,
      client_id TEXT NOT NULL REFERENCES oauth_clients (client_id),
      account_id TEXT NOT NULL REFERENCES accounts (id),
      scope TEXT NOT NULL,
      created_at ${time} NOT NULL,
      expires_at ${time} NOT NULL,
      rotated_at ${time},
      revoked_at ${time}
    )`,
    // revokeGrant works on the (account, client) pair.
    'CREATE INDEX oauth_refresh_tokens_grant ON oauth_refresh_tokens (account_id, client_id)',
  ]
}

/**
 * Self-service accounts. The spend cap and this month's spend live on the account row,
 * so reserve checks them in the same statement/lock as the balance; settle moves `spend_month_micros`
 * with the balance (`spend_month` = UTC year × 12 + month index; another month counts from zero).
 * Usage counters are per (account, UTC day number, capability, environment): requests, cache hits and
 * cost, including free calls that write no ledger row. The audit log is append-only by convention.
 */
function selfServiceTables(time: 'INTEGER' | 'BIGINT'): string[] {
  return [
    `ALTER TABLE accounts ADD COLUMN spend_cap_micros ${time}`,
    `ALTER TABLE accounts ADD COLUMN spend_month INTEGER NOT NULL DEFAULT 0`,
    `ALTER TABLE accounts ADD COLUMN spend_month_micros ${time} NOT NULL DEFAULT 0`,
    `CREATE TABLE usage_daily (
      account_id TEXT NOT NULL REFERENCES accounts (id),
      day INTEGER NOT NULL,
      capability TEXT NOT NULL,
      environment TEXT NOT NULL,
      requests ${time} NOT NULL DEFAULT 0,
      cache_hits ${time} NOT NULL DEFAULT 0,
      cost_micros ${time} NOT NULL DEFAULT 0,
      PRIMARY KEY (account_id, day, capability, environment)
    )`,
    `CREATE TABLE audit_log (
      id TEXT PRIMARY KEY,
      account_id TEXT NOT NULL REFERENCES accounts (id),
      created_at ${time} NOT NULL,
      actor_type TEXT NOT NULL,
      actor_id TEXT NOT NULL,
      action TEXT NOT NULL,
      target TEXT,
      detail TEXT,
      ip TEXT
    )`,
    'CREATE INDEX audit_log_account_time ON audit_log (account_id, created_at)',
  ]
}
